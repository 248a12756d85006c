/* prompt.c — chat template + tokenizer = prompt ids (see prompt.h). */
#include "text/prompt.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja.h"
#include "text/unicode.h"

e0_tokenizer *e0_model_tokenizer(const e0_model *m, e0_err *e) { return e0_tokenizer_from_gguf(m->gguf, e); }

const char *e0_model_chat_template(const e0_model *m, size_t *len) {
    const gguf_string *s;
    if (gguf_get_str(m->gguf, "tokenizer.chat_template", &s, NULL) != 1) return NULL;
    *len = (size_t)s->len;
    return s->s;
}

static const char *special_text(const e0_tokenizer *tok, int32_t id) {
    size_t len;
    const char *t = id >= 0 ? e0_tok_text(tok, id, &len) : NULL;
    return t ? t : "";
}

int e0_render_chat(const e0_model *m, const e0_tokenizer *tok, const json_t *messages, bool add_generation_prompt,
                   char **text, size_t *len, e0_err *e) {
    size_t tlen;
    const char *tmpl = e0_model_chat_template(m, &tlen);
    if (!tmpl) return e0_fail(e, "the model has no chat template");
    return jinja_render_chat(tmpl, tlen, messages, add_generation_prompt, special_text(tok, e0_tok_bos(tok)),
                             special_text(tok, e0_tok_eos(tok)), text, len, e);
}

int e0_tokenize_prompt(const e0_tokenizer *tok, const char *text, size_t len, bool templated, e0_tokens *out,
                       e0_err *e) {
    if (!templated) return e0_tokenize(tok, text, len, true, false, out, e);
    /* The template may already begin with the BOS text; do not add a second one. */
    bool add_bos = e0_tok_add_bos(tok);
    int32_t bos = e0_tok_bos(tok);
    size_t blen = 0;
    const char *btext = bos >= 0 ? e0_tok_text(tok, bos, &blen) : NULL;
    if (btext && blen && len >= blen && !memcmp(text, btext, blen)) add_bos = false;
    if (add_bos && bos >= 0) {
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 64;
            int32_t *ids = realloc(out->ids, cap * sizeof *ids);
            if (!ids) return e0_fail(e, "out of memory");
            out->ids = ids;
            out->cap = cap;
        }
        out->ids[out->n++] = bos;
    }
    return e0_tokenize(tok, text, len, false, true, out, e);
}

json_t *e0_chat_message(const char *role, const char *text, size_t len) {
    char *clean = malloc(len * 3 + 1); /* worst case: every byte becomes U+FFFD (3 bytes) */
    if (!clean) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        int k = e0_utf8_valid_prefix((const unsigned char *)text + i, len - i);
        if (k > 0) {
            memcpy(clean + n, text + i, (size_t)k);
            n += (size_t)k;
            i += (size_t)k;
        } else {
            n += e0_utf8_encode(0xFFFD, clean + n);
            i++;
        }
    }
    json_t *msg = json_pack("{s:s,s:s%}", "role", role, "content", clean, n);
    free(clean);
    return msg;
}

int e0_prompt_build_ex(const e0_model *m, const e0_tokenizer *tok, const char *system, const char *user, bool raw,
                       e0_prompt *p, e0_err *e) {
    memset(p, 0, sizeof *p);
    size_t tlen;
    bool templated = !raw && e0_model_chat_template(m, &tlen) != NULL;
    char *text = NULL;
    size_t len = strlen(user);
    if (templated) {
        json_t *msgs = json_array();
        int rc = 0;
        if (system && json_array_append_new(msgs, e0_chat_message("system", system, strlen(system))) < 0) rc = -1;
        if (json_array_append_new(msgs, e0_chat_message("user", user, len)) < 0) rc = -1;
        if (rc < 0) e0_fail(e, "out of memory");
        else rc = e0_render_chat(m, tok, msgs, true, &text, &len, e);
        json_decref(msgs);
        if (rc < 0) return -1;
    }
    e0_tokens t = {0};
    int rc = e0_tokenize_prompt(tok, templated ? text : user, len, templated, &t, e);
    free(text);
    if (rc < 0) return e0_tokens_free(&t), -1;
    if (t.n == 0) return e0_tokens_free(&t), e0_fail(e, "the prompt is empty");
    p->ids = (int *)t.ids; /* int32_t and int are the same here */
    p->n = (int)t.n;
    p->templated = templated;
    return 0;
}

int e0_prompt_build(const e0_model *m, const char *user, bool raw, e0_prompt *p, e0_err *e) {
    e0_tokenizer *tok = e0_model_tokenizer(m, e);
    if (!tok) return -1;
    int rc = e0_prompt_build_ex(m, tok, NULL, user, raw, p, e);
    e0_tokenizer_free(tok);
    return rc;
}

void e0_prompt_free(e0_prompt *p) {
    free(p->ids);
    p->ids = NULL;
    p->n = 0;
}
