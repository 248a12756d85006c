/* fuzz_messages.c — libFuzzer target: chat messages as `apply-template --messages-file` reads them
 * (JSON, duplicate keys rejected) and as `run`/`chat` build them from user text
 * (e0_chat_message), rendered with the real chat templates of ../shared/templates
 * (jinja_render_chat) and tokenized as a templated prompt (e0_tokenize_prompt, prompt.c).
 *
 * Input: byte 0 selects the template (modulo the number found; sorted by name, see
 * fuzz_list_templates), byte 1 the flags: bit 0 add_generation_prompt, bit 1 "text" mode. The
 * rest is the messages JSON, or in text mode user text (any bytes) with an optional system
 * message before the first newline when bit 2 is set. BOS/EOS texts come from the template's
 * first case. Without ../shared one built-in ChatML template and a synth vocabulary are used.
 * Checked: a render succeeds or fails with a message; the prompt tokenizes. Inputs above
 * FUZZ_MSG_MAX bytes are skipped. */
#include <unistd.h>

#include "fuzz_common.h"

#include "gguf/gguf.h"
#include "text/jinja/jinja.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

#define FUZZ_MSG_MAX (16u << 10)

typedef struct ms_template {
    char *src, *bos, *eos;
    size_t len;
} ms_template;

static ms_template *ms_tmpl;
static size_t ms_n;
static e0_tokenizer *ms_tok;

static const char ms_chatml[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

static char *ms_case_token(json_t *cases, const char *key) {
    const char *s = json_string_value(json_object_get(json_array_get(cases, 0), key));
    return strdup(s ? s : "");
}

static int ms_load_templates(void) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/templates", fuzz_shared());
    size_t n;
    char **names = fuzz_list_templates(dir, &n);
    ms_tmpl = calloc(n ? n : 1, sizeof *ms_tmpl);
    if (!ms_tmpl) return -1;
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        size_t len;
        snprintf(path, sizeof path, "%s/%s.jinja", dir, names[i]);
        char *src = fuzz_read_file(path, 4u << 20, &len);
        if (!src) continue;
        snprintf(path, sizeof path, "%s/%s.cases.json", dir, names[i]);
        json_t *cases = json_load_file(path, 0, NULL);
        json_t *arr = json_object_get(cases, "cases");
        ms_tmpl[ms_n++] = (ms_template){src, ms_case_token(arr, "bos_token"), ms_case_token(arr, "eos_token"), len};
        json_decref(cases);
    }
    fuzz_free_list(names, n);
    if (ms_n == 0) ms_tmpl[ms_n++] = (ms_template){strdup(ms_chatml), strdup("<s>"), strdup("</s>"), sizeof ms_chatml - 1};
    return 0;
}

static int ms_load_tokenizer(void) {
    e0_err e = {{0}};
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-qwen2.gguf", fuzz_shared());
    char tmp[] = "/tmp/e0-fuzz-msg-XXXXXX";
    bool synth = access(path, R_OK) != 0;
    if (synth) {
        int fd = mkstemp(tmp);
        if (fd < 0) return -1;
        close(fd);
        if (fuzz_synth_tiny(E0_ARCH_QWEN2, 0, 0, tmp, &e) < 0) return unlink(tmp), -1;
    }
    gguf_file *f = gguf_open(synth ? tmp : path, &e);
    if (synth) unlink(tmp);
    if (!f) return fprintf(stderr, "fuzz_messages: %s\n", e.msg), -1;
    ms_tok = e0_tokenizer_from_gguf(f, &e);
    gguf_close(f);
    return ms_tok ? 0 : (fprintf(stderr, "fuzz_messages: %s\n", e.msg), -1);
}

int fuzz_messages_init(void) { return ms_load_templates() == 0 && ms_load_tokenizer() == 0 ? 0 : -1; }

/* Messages from user text, as e0_prompt_build_ex builds them. */
static json_t *ms_from_text(const char *text, size_t len, bool with_system) {
    json_t *msgs = json_array();
    const char *nl = with_system ? memchr(text, '\n', len) : NULL;
    if (nl) {
        json_array_append_new(msgs, e0_chat_message("system", text, (size_t)(nl - text)));
        len -= (size_t)(nl + 1 - text);
        text = nl + 1;
    }
    json_t *m = e0_chat_message("user", text, len);
    FUZZ_CHECK(m != NULL, "e0_chat_message failed");
    json_array_append_new(msgs, m);
    return msgs;
}

int fuzz_messages_one(const uint8_t *data, size_t size) {
    if (size < 2 || size > FUZZ_MSG_MAX || !ms_n || !ms_tok) return 0;
    const ms_template *t = &ms_tmpl[data[0] % ms_n];
    bool gen = data[1] & 1, text_mode = data[1] & 2, with_system = data[1] & 4;
    const char *rest = (const char *)data + 2;
    size_t rlen = size - 2;
    json_t *msgs;
    if (text_mode) {
        msgs = ms_from_text(rest, rlen, with_system);
    } else {
        json_error_t je;
        if (!(msgs = json_loadb(rest, rlen, JSON_REJECT_DUPLICATES, &je))) return 0;
    }
    char *out = NULL;
    size_t out_len = 0;
    e0_err e = {{0}};
    int rc = jinja_render_chat(t->src, t->len, msgs, gen, t->bos, t->eos, &out, &out_len, &e);
    json_decref(msgs);
    if (rc != 0) return 0;
    FUZZ_CHECK(out && out[out_len] == 0, "rendered prompt not NUL-terminated");
    e0_tokens ids = {0};
    FUZZ_CHECK(e0_tokenize_prompt(ms_tok, out, out_len, true, &ids, &e) == 0, "prompt tokenization failed: %s", e.msg);
    e0_tokens_free(&ids);
    free(out);
    return 0;
}

FUZZ_ENTRY_POINTS(messages)
