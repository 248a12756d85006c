/* cmd_template.c — `edge0-infer apply-template`: render a chat template for a list of messages
 * and print the prompt exactly (nothing added). The template comes from a file or, with
 * --model, from the GGUF's tokenizer.chat_template (with its bos/eos token texts). */
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
            "       edge0-infer apply-template --model F.gguf --messages-file M.json [...]\n"
            "  --model: use the model's tokenizer.chat_template and its BOS/EOS token texts\n"
            "           (--bos-token/--eos-token still override them).\n"
            "  M.json: a JSON array of {\"role\": ..., \"content\": ...} objects.\n"
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
    char *text = e0_read_file(path, MAX_MESSAGES_BYTES, &len, e);
    if (!text) return NULL;
    json_error_t je;
    json_t *msgs = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!msgs) e0_fail(e, "%s: invalid JSON at line %d: %s", path, je.line, je.text);
    return msgs;
}

int cmd_template(int argc, char **argv) {
    const char *tmpl_path = NULL, *msg_path = NULL, *model = NULL, *bos = NULL, *eos = NULL;
    bool gen = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--chat-template-file")) { if (!(tmpl_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--messages-file")) { if (!(msg_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--bos-token")) { if (!(bos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--eos-token")) { if (!(eos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--model") || !strcmp(a, "-m")) { if (!(model = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--no-generation-prompt")) gen = false;
        else { usage(stderr); return cli_error("apply-template: unknown option '%s'", a); }
    }
    if (model && tmpl_path) return cli_error("apply-template: give either --model or --chat-template-file, not both");
    if (!model && !tmpl_path) { usage(stderr); return cli_error("apply-template: --chat-template-file (or --model) is required"); }
    if (!msg_path) { usage(stderr); return cli_error("apply-template: --messages-file is required"); }
    e0_err e = {{0}};
    size_t tlen;
    char *tmpl, *model_bos = NULL, *model_eos = NULL;
    if (model) {
        if (load_model_template(model, &tmpl, &tlen, &model_bos, &model_eos, &e)) return cli_error("%s", e.msg);
        if (!bos) bos = model_bos;
        if (!eos) eos = model_eos;
    } else if (!(tmpl = e0_read_file(tmpl_path, MAX_TEMPLATE_BYTES, &tlen, &e)))
        return cli_error("%s", e.msg);
    json_t *msgs = load_messages(msg_path, &e);
    if (!msgs) {
        free(tmpl);
        free(model_bos);
        free(model_eos);
        return cli_error("%s", e.msg);
    }
    char *out;
    size_t olen;
    int rc = jinja_render_chat(tmpl, tlen, msgs, gen, bos, eos, &out, &olen, &e);
    json_decref(msgs);
    free(tmpl);
    free(model_bos);
    free(model_eos);
    if (rc) return cli_error("apply-template: %s", e.msg);
    fwrite(out, 1, olen, stdout); /* write errors on stdout: checked at exit (main.c) */
    free(out);
    return 0;
}
