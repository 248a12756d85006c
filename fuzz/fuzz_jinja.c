/* fuzz_jinja.c — libFuzzer target: the chat-template engine (src/text/jinja/), lexing, parsing and
 * rendering with a random context.
 *
 * Input: TEMPLATE, optionally followed by a NUL byte and a JSON context. A JSON object is the
 * variables; any other JSON value is bound to `messages`; no or invalid JSON means no variables.
 * Rendering uses small limits (steps, output, memory) so that every input finishes quickly;
 * exceeding a limit is an ordinary error. Checked: success gives a NUL-terminated output within
 * the output limit. Inputs above FUZZ_JINJA_MAX bytes are skipped. */
#include "fuzz_common.h"

#include "text/jinja/jinja.h"

#define FUZZ_JINJA_MAX (64u << 10)

static const jinja_limits jj_limits = {
    .max_steps = 200000,
    .max_output = 1u << 20,
    .max_memory = 64u << 20,
    .max_depth = 0, /* default */
};

int fuzz_jinja_init(void) { return 0; }

int fuzz_jinja_one(const uint8_t *data, size_t size) {
    if (size > FUZZ_JINJA_MAX) return 0;
    const char *src = (const char *)data;
    const char *nul = memchr(src, 0, size);
    size_t tlen = nul ? (size_t)(nul - src) : size;
    json_t *vars = NULL;
    if (nul) {
        json_error_t je;
        json_t *v = json_loadb(nul + 1, size - tlen - 1, JSON_DECODE_ANY, &je);
        if (v && !json_is_object(v)) {
            vars = json_object();
            if (vars) json_object_set_new(vars, "messages", v);
            else json_decref(v);
        } else {
            vars = v;
        }
    }
    char *out = NULL;
    size_t out_len = 0;
    e0_err e = {{0}};
    if (jinja_render(src, tlen, vars, &jj_limits, &out, &out_len, &e) == 0) {
        FUZZ_CHECK(out != NULL && out[out_len] == 0, "rendered output not NUL-terminated");
        FUZZ_CHECK(out_len <= jj_limits.max_output, "output of %zu bytes beyond the limit", out_len);
        free(out);
    } else {
        FUZZ_CHECK(out == NULL, "failed render left an output");
    }
    json_decref(vars);
    return 0;
}

FUZZ_ENTRY_POINTS(jinja)
