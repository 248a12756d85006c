/* output.h — turning generated tokens into what a client sees: stop strings held back until
 * they can no longer start (so they never leak, also across chunk boundaries), log-probabilities
 * of a token and its best alternatives, and JSON strings from bytes that may not be valid UTF-8. */
#ifndef E0_SERVE_OUTPUT_H
#define E0_SERVE_OUTPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "serve/sched.h"

/* text[0..len) is the generated text, of which [0..from) has been released. Returns how far the
 * text may be released now: up to the first complete stop string (then *stop_at is its offset),
 * else everything but a tail that is the beginning of some stop string (*stop_at = -1). */
size_t srv_stop_scan(const char *text, size_t len, size_t from, char *const *stop, int n_stop, long *stop_at);

/* Natural-log softmax probability of `id` under logits[0..V) and the n_top (<= 20) most likely
 * tokens (descending; ties: lower id). */
void srv_logprobs(const float *logits, int64_t V, int id, int n_top, srv_lp *out);

/* A JSON string of bytes s[0..n): each byte that is not part of valid UTF-8 becomes U+FFFD.
 * NULL only when out of memory. */
json_t *srv_json_text(const char *s, size_t n);

/* Tool calls in generated text written as Hermes-style templates (Qwen2.5/3, QwQ, Hermes) ask:
 * blocks `<tool_call>{"name": N, "arguments": {...}}</tool_call>` after optional content. Returns
 * OpenAI's tool_calls list ([{"id": "<id_prefix>-<i>", "type": "function", "function": {"name",
 * "arguments": JSON text}}]) and *content_len = the bytes before the first block (trailing
 * whitespace dropped); NULL when the text is not content + complete, valid blocks (then it is all
 * content). Only whitespace may separate and follow the blocks. */
json_t *srv_parse_tool_calls(const char *text, size_t len, const char *id_prefix, size_t *content_len);

/* The same for a streamed reply, as its text comes: what can go out as content at once, and what
 * is held until it can be decided — a tail that may be the start of "<tool_call>" (with the
 * whitespace before it), and everything from the first "<tool_call>" on: held while it is valid
 * blocks so far, then either the tool calls srv_parse_tool_calls finds at the end or, as soon as
 * no more text can make it blocks (a block that is not a call, text after a block), released as
 * content with everything after it. So the streamed content + calls equal the whole reply's, and
 * plain text still streams as it comes (held back only while it could be a tag). Start from {0}. */
typedef struct srv_toolsplit {
    e0_strbuf held; /* text not yet released */
    bool in_calls;  /* "<tool_call>" seen, valid blocks so far: held */
    bool plain;     /* it can no longer be tool calls: all text goes out as it comes */
} srv_toolsplit;
/* Take s[0..n); appends to *out what may be released now. -1 when out of memory. */
int srv_toolsplit_feed(srv_toolsplit *t, const char *s, size_t n, e0_strbuf *out);
/* The reply is over. parse: it may be tool calls (it stopped by itself, tools were given). Returns
 * the calls (the held text was them), or NULL with the held text appended to *out. */
json_t *srv_toolsplit_end(srv_toolsplit *t, bool parse, const char *id_prefix, e0_strbuf *out);
void srv_toolsplit_free(srv_toolsplit *t);

#endif
