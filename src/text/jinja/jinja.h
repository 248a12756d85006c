/* jinja.h — render chat templates: the subset of Jinja (jinja2 3.1 semantics, as configured by
 * Hugging Face transformers: sandboxed, trim_blocks + lstrip_blocks, loop controls, the
 * {% generation %} tag) that real model chat templates use.
 *
 * A template is untrusted data. It cannot read files or run anything; evaluation steps, output
 * size, memory and nesting depth are bounded, and exceeding a bound is an error, never a crash.
 * Unsupported constructs are errors that name the construct and the template line.
 *
 * Values seen by the template come from JSON (jansson): objects become dicts (insertion order),
 * arrays lists, strings str, integers int, reals float, true/false bool, null None.
 *
 * Supported: {{ }}, {% %}, {# #}, whitespace control (-, +), trim_blocks/lstrip_blocks, raw;
 * if/elif/else, for (tuple targets, `if` filter, else, loop.*, break/continue), set (names,
 * tuples, ns.attr, block set with filters), macro (defaults, keyword args, varargs/kwargs),
 * with, filter blocks, generation; Python literals, operators, slicing, conditional
 * expressions; jinja2's filters/tests and Python str/dict/list methods used by chat templates
 * (see jinja_builtins.c, jinja_strings.c); globals range, namespace, dict, raise_exception,
 * strftime_now. Undefined, Markup (|safe) and generator (map/select/...) behave as in jinja2.
 * Not supported (clear error): include/import/extends/block, call blocks, recursive loops,
 * format specs in str.format, %-formats other than %s %r %d %i. */
#ifndef E0_JINJA_H
#define E0_JINJA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

/* Bounds for one render. Zero fields take the defaults below. */
typedef struct jinja_limits {
    uint64_t max_steps;  /* evaluation steps (expression nodes, statements, loop iterations) */
    size_t max_output;   /* bytes of rendered output (and of any captured block) */
    size_t max_memory;   /* bytes of working memory (values, strings) */
    int max_depth;       /* nesting: template blocks, expression depth, macro calls */
} jinja_limits;

#define JINJA_DEFAULT_MAX_STEPS 10000000ull
#define JINJA_DEFAULT_MAX_OUTPUT (16u << 20)
#define JINJA_DEFAULT_MAX_MEMORY (256u << 20)
#define JINJA_DEFAULT_MAX_DEPTH 200

/* Render template `src` (`len` bytes, UTF-8) with the variables of JSON object `vars` (may be
 * NULL: no variables). On success *out is a malloc'd NUL-terminated string of *out_len bytes
 * (the output may itself contain NUL bytes) and 0 is returned. On failure -1 with *e filled:
 * the template's raise_exception() message verbatim, or a description of the problem with the
 * template line ("unsupported filter 'xyz' at line 3"). `lim` may be NULL (defaults). */
int jinja_render(const char *src, size_t len, const json_t *vars, const jinja_limits *lim, char **out,
                 size_t *out_len, e0_err *e);

/* The chat-template call: variables messages (a JSON array of message objects),
 * add_generation_prompt, bos_token and eos_token (NULL = ""), exactly like Hugging Face's
 * apply_chat_template. Validates that `messages` is an array of objects with a string "role". */
int jinja_render_chat(const char *src, size_t len, const json_t *messages, bool add_generation_prompt,
                      const char *bos_token, const char *eos_token, char **out, size_t *out_len, e0_err *e);

#endif
