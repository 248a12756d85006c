/* cmd_template.c — `edge0-infer apply-template`: render a chat template for a list of messages
 * and print the prompt exactly (nothing added). The template comes from a file or, with
 * --model, from the GGUF's tokenizer.chat_template (with its bos/eos token texts); messages from a
 * file or stdin (-); more template variables with --chat-template-kwargs (llama.cpp's flag). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf/gguf.h"
#include "text/jinja/jinja.h"

#define MAX_TEMPLATE_BYTES (4u << 20)
#define MAX_MESSAGES_BYTES (64u << 20)

static void usage(FILE *f) {
    fprintf(f,
            "usage: edge0-infer apply-template --chat-template-file T.jinja --messages-file M.json\n"
            "                                  [--no-generation-prompt] [--bos-token S] [--eos-token S]\n"
            "                                  [--chat-template-kwargs JSON]\n"
            "       edge0-infer apply-template --model F.gguf --messages-file M.json [...]\n"
            "  --model: use the model's tokenizer.chat_template and its BOS/EOS token texts\n"
            "           (--bos-token/--eos-token still override them).\n"
            "  M.json: a JSON array of {\"role\": ..., \"content\": ...} objects; - reads it from stdin.\n"
            "  --chat-template-kwargs JSON: more template variables, a JSON object, as llama.cpp takes them\n"
            "           (e.g. '{\"enable_thinking\": false}').\n"
            "  Prints the rendered prompt exactly, with no newline added.\n");
}

/* Text of token `key` (an id) in the model's vocabulary; "" when the model has no such token. */
static int token_text(const gguf_file *f, const char *key, char **out, e0_err *e) {
    *out = NULL;
    int64_t id;
    int r = gguf_get_i64(f, key, &id, e);
    if (r < 0) return -1;
    if (r == 0) return 0;
    const void *toks;
    uint64_t n;
    r = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STR, &toks, &n, e);
    if (r < 0) return -1;
    if (r == 0) return 0;
    if (id < 0 || (uint64_t)id >= n) return e0_fail(e, "%s: %s = %lld is not a token id (vocabulary has %llu)", f->path, key,
                                                    (long long)id, (unsigned long long)n);
    const gguf_string *s = &((const gguf_string *)toks)[id];
    if (memchr(s->s, 0, s->len)) return e0_fail(e, "%s: token %lld contains a NUL byte", f->path, (long long)id);
    *out = strdup(s->s);
    return *out ? 0 : e0_fail(e, "out of memory");
}

/* The chat template and BOS/EOS texts of a GGUF model. */
static int load_model_template(const char *path, char **tmpl, size_t *tlen, char **bos, char **eos, e0_err *e) {
    *tmpl = *bos = *eos = NULL;
    gguf_file *f = gguf_open(path, e);
    if (!f) return -1;
    const gguf_string *ct;
    int r = gguf_get_str(f, "tokenizer.chat_template", &ct, e);
    if (r == 0) e0_fail(e, "%s: the model has no chat template (tokenizer.chat_template)", path);
    if (r == 1 && !(*tmpl = malloc(ct->len + 1))) r = e0_fail(e, "out of memory");
    if (r == 1) {
        memcpy(*tmpl, ct->s, ct->len);
        (*tmpl)[ct->len] = 0;
        *tlen = ct->len;
        r = token_text(f, "tokenizer.ggml.bos_token_id", bos, e) == 0 && token_text(f, "tokenizer.ggml.eos_token_id", eos, e) == 0;
    }
    gguf_close(f);
    if (r != 1) {
        free(*tmpl);
        free(*bos);
        free(*eos);
        *tmpl = *bos = *eos = NULL;
        return -1;
    }
    return 0;
}

/* The messages file: JSON (size-bounded); the structure is checked by jinja_render_chat. */
static json_t *load_messages(const char *path, e0_err *e) {
    size_t len;
    bool from_stdin = !strcmp(path, "-");
    char *text = from_stdin ? cli_read_stdin("apply-template", MAX_MESSAGES_BYTES, &len)
                            : e0_read_file(path, MAX_MESSAGES_BYTES, &len, e);
    if (!text && from_stdin) e->msg[0] = 0; /* cli_read_stdin said why */
    if (!text) return NULL;
    json_error_t je;
    json_t *msgs = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!msgs) e0_fail(e, "%s: invalid JSON at line %d: %s", !strcmp(path, "-") ? "stdin" : path, je.line, je.text);
    return msgs;
}

/* jinja_render_chat with more variables (--chat-template-kwargs): the same checks and names. */
static int render_with_kwargs(const char *tmpl, size_t tlen, json_t *msgs, bool gen, const char *bos, const char *eos,
                              const json_t *kwargs, char **out, size_t *olen, e0_err *e) {
    if (!kwargs) return jinja_render_chat(tmpl, tlen, msgs, gen, bos, eos, out, olen, e);
    static const char *const own[] = {"messages", "add_generation_prompt", "bos_token", "eos_token"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (json_object_get(kwargs, own[i])) return e0_fail(e, "--chat-template-kwargs: %s is set by apply-template itself", own[i]);
    if (!json_is_array(msgs)) return e0_fail(e, "messages must be a JSON array");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        if (!json_is_object(m)) return e0_fail(e, "message %zu is not a JSON object", i);
        if (!json_is_string(json_object_get(m, "role"))) return e0_fail(e, "message %zu has no string \"role\"", i);
    }
    json_t *vars = json_deep_copy(kwargs);
    if (!vars) return e0_fail(e, "out of memory");
    json_object_set(vars, "messages", msgs);
    json_object_set_new(vars, "add_generation_prompt", json_boolean(gen));
    json_object_set_new(vars, "bos_token", json_string(bos ? bos : ""));
    json_object_set_new(vars, "eos_token", json_string(eos ? eos : ""));
    int rc = -1;
    if (!json_is_string(json_object_get(vars, "bos_token")) || !json_is_string(json_object_get(vars, "eos_token")))
        e0_fail(e, "bos/eos token is not valid UTF-8");
    else rc = jinja_render(tmpl, tlen, vars, NULL, out, olen, e);
    json_decref(vars);
    return rc;
}

int cmd_template(int argc, char **argv) {
    const char *tmpl_path = NULL, *msg_path = NULL, *model = NULL, *bos = NULL, *eos = NULL, *kwargs_text = NULL;
    bool gen = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--chat-template-file")) { if (!(tmpl_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--messages-file")) { if (!(msg_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--bos-token")) { if (!(bos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--eos-token")) { if (!(eos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--model") || !strcmp(a, "-m")) { if (!(model = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--chat-template-kwargs")) { if (!(kwargs_text = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--no-generation-prompt")) gen = false;
        else { usage(stderr); return cli_error("apply-template: unknown option '%s'", a); }
    }
    if (model && tmpl_path) return cli_error("apply-template: give either --model or --chat-template-file, not both");
    if (!model && !tmpl_path) { usage(stderr); return cli_error("apply-template: --chat-template-file (or --model) is required"); }
    if (!msg_path) { usage(stderr); return cli_error("apply-template: --messages-file is required"); }
    e0_err e = {{0}};
    json_t *kwargs = NULL;
    if (kwargs_text) {
        json_error_t je;
        kwargs = json_loads(kwargs_text, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(kwargs)) {
            json_decref(kwargs);
            return cli_error("apply-template: --chat-template-kwargs must be a JSON object (%s)", kwargs ? "not an object" : je.text);
        }
    }
    size_t tlen;
    char *tmpl, *model_bos = NULL, *model_eos = NULL;
    if (model) {
        if (load_model_template(model, &tmpl, &tlen, &model_bos, &model_eos, &e)) return json_decref(kwargs), cli_error("%s", e.msg);
        if (!bos) bos = model_bos;
        if (!eos) eos = model_eos;
    } else if (!(tmpl = e0_read_file(tmpl_path, MAX_TEMPLATE_BYTES, &tlen, &e)))
        return json_decref(kwargs), cli_error("%s", e.msg);
    json_t *msgs = load_messages(msg_path, &e);
    if (!msgs) {
        json_decref(kwargs);
        free(tmpl);
        free(model_bos);
        free(model_eos);
        return e.msg[0] ? cli_error("%s", e.msg) : 1;
    }
    char *out;
    size_t olen;
    int rc = render_with_kwargs(tmpl, tlen, msgs, gen, bos, eos, kwargs, &out, &olen, &e);
    json_decref(msgs);
    json_decref(kwargs);
    free(tmpl);
    free(model_bos);
    free(model_eos);
    if (rc) return cli_error("apply-template: %s", e.msg);
    fwrite(out, 1, olen, stdout); /* write errors on stdout: checked at exit (main.c) */
    free(out);
    return 0;
}
