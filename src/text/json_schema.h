/* json_schema.h — a JSON schema (OpenAI's response_format json_schema, llama-server's json_schema,
 * llama.cpp's -j) turned into a GBNF grammar (text/grammar.h) whose every complete match is a
 * JSON text the schema accepts.
 *
 * Supported: type (one or a list), properties (in their order) with required and
 * additionalProperties (false, true or a schema; left out with properties: no other keys are
 * written), items with minItems / maxItems, enum, const, anyOf / oneOf, a one-schema allOf,
 * local $ref ("#/$defs/x", "#/definitions/x", "#": recursive schemas), minLength / maxLength,
 * minimum / maximum / exclusiveMinimum / exclusiveMaximum on integers (|bound| < 10^15), the
 * string formats date, time, date-time and uuid, and pattern (an ECMAScript regex subset, see
 * text/json_pattern.h). A keyword of one type (minLength, pattern, minItems, minimum, ...) is
 * honoured only beside a "type" naming it ("items" for the array ones), not beside enum, const,
 * anyOf or $ref, and refused elsewhere. Annotations (title, description, default, examples,
 * $schema, $id, $comment, ..., x-*) are ignored. Any other keyword — a constraint the grammar
 * would not enforce (bounds on non-integers, multipleOf, uniqueItems, prefixItems, not, if, ...)
 * — is refused with one error naming it and where it is, never silently dropped. */
#ifndef E0_JSON_SCHEMA_H
#define E0_JSON_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "base/util.h"

/* The grammar text (malloc'd, *len bytes, rule "root"), or NULL with one error. */
char *e0_json_schema_grammar(const json_t *schema, size_t *len, e0_err *e);

#endif
