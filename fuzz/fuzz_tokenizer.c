/* fuzz_tokenizer.c — libFuzzer target: tokenize and detokenize (src/text/tokenizer*.c) with each
 * tokenizer type — SentencePiece, and byte-level BPE with every distinct pre-tokenizer regex
 * list — plus the prompt tokenizer of prompt.c (templated text: BOS rule + special tokens).
 *
 * The tokenizers are built once (fuzz_vocab_at() in fuzz_common.h: the vocabularies of
 * ../shared/tokenizer, the GPT-2 one re-labelled with other pre-tokenizers, two synth ones;
 * without ../shared only the synth ones). Input: byte 0 selects the vocabulary (low 4 bits,
 * modulo the ones available), add_special (bit 4), parse_special (bit 5) and the mode (bits 6-7):
 *   0  tokenize the rest as text
 *   1  tokenize the rest as templated prompt text (e0_tokenize_prompt)
 *   2-3 detokenize the rest as token ids, 3 bytes each, id = value % (n_vocab + 8) - 4 (so a few
 *      are out of range)
 * Checked: ids are in range; detokenize(tokenize(x)) == x where tokenizer.h promises it (special
 * tokens not parsed); the streaming detokenizer's output equals e0_detokenize's; e0_tok_piece /
 * e0_tok_text / e0_tok_type_of answer for any id. Inputs above FUZZ_TOK_MAX bytes are skipped. */
#include <unistd.h>

#include "fuzz_common.h"

#include "gguf/gguf.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

#define FUZZ_TOK_MAX (16u << 10)

static e0_tokenizer *tk_toks[FUZZ_N_VOCABS];
static int tk_avail[FUZZ_N_VOCABS], tk_n_avail;

/* Copy src's metadata with tokenizer.ggml.pre set to `pre` (a vocabulary-only GGUF). */
static int tk_relabel(const char *src, const char *dst, const char *pre, e0_err *e) {
    gguf_file *f = gguf_open(src, e);
    if (!f) return -1;
    gguf_writer *w = gguf_writer_open(dst, e);
    if (!w) return gguf_close(f), -1;
    int rc = 0;
    for (uint64_t i = 0; i < f->n_kv && rc == 0; i++)
        if (strcmp(f->kv[i].key, "tokenizer.ggml.pre") != 0) rc = gguf_writer_kv_copy(w, &f->kv[i]);
    if (rc == 0) rc = gguf_writer_kv_str(w, "tokenizer.ggml.pre", pre);
    gguf_close(f);
    return gguf_writer_close(w, e) < 0 ? -1 : rc;
}

static e0_tokenizer *tk_load(const char *path, e0_err *e) {
    gguf_file *f = gguf_open(path, e);
    if (!f) return NULL;
    e0_tokenizer *t = e0_tokenizer_from_gguf(f, e);
    gguf_close(f);
    return t;
}

int fuzz_tokenizer_init(void) {
    char dir[] = "/tmp/e0-fuzz-tok-XXXXXX";
    if (!mkdtemp(dir)) return perror("mkdtemp"), -1;
    for (int i = 0; i < FUZZ_N_VOCABS; i++) {
        const fuzz_vocab *v = fuzz_vocab_at(i);
        char path[4096], tmp[4200];
        e0_err e = {{0}};
        snprintf(tmp, sizeof tmp, "%s/vocab%d.gguf", dir, i);
        if (v->synth >= 0) {
            if (fuzz_synth_tiny((enum e0_arch)v->synth, 0, 0, tmp, &e) == 0) tk_toks[i] = tk_load(tmp, &e);
        } else {
            snprintf(path, sizeof path, "%s/%s", fuzz_shared(), v->file);
            if (access(path, R_OK) != 0) continue; /* no ../shared: synth vocabularies only */
            if (!v->pre) tk_toks[i] = tk_load(path, &e);
            else if (tk_relabel(path, tmp, v->pre, &e) == 0) tk_toks[i] = tk_load(tmp, &e);
        }
        unlink(tmp);
        if (!tk_toks[i]) {
            fprintf(stderr, "fuzz_tokenizer: vocabulary %d: %s\n", i, e.msg);
            return -1;
        }
        tk_avail[tk_n_avail++] = i;
    }
    rmdir(dir);
    return tk_n_avail ? 0 : -1;
}

/* Streaming detokenize with the vocabulary's leading-space rule; must equal e0_detokenize. */
static void tk_check_stream(const e0_tokenizer *t, const int32_t *ids, size_t n, bool special, const char *whole,
                            size_t whole_len) {
    e0_detok_stream s;
    e0_detok_init(&s, t, special, e0_tok_strips_leading_space(t));
    size_t off = 0;
    bool same = true;
    for (size_t i = 0; i <= n; i++) {
        size_t len;
        const char *p = i < n ? e0_detok_push(&s, ids[i], &len) : e0_detok_flush(&s, &len);
        FUZZ_CHECK(p != NULL, "detok stream returned NULL");
        if (len > whole_len - off || memcmp(p, whole + off, len) != 0) same = false;
        if (!same) break;
        off += len;
    }
    e0_detok_free(&s);
    FUZZ_CHECK(same && off == whole_len, "streaming detokenizer differs from e0_detokenize");
}

static void tk_detok(const e0_tokenizer *t, const int32_t *ids, size_t n, bool special) {
    e0_err e = {{0}};
    char *out;
    size_t len;
    FUZZ_CHECK(e0_detokenize(t, ids, n, special, &out, &len, &e) == 0, "e0_detokenize failed: %s", e.msg);
    tk_check_stream(t, ids, n, special, out, len);
    free(out);
}

static void tk_text(const e0_tokenizer *t, const fuzz_vocab *v, const char *text, size_t len, bool add_special,
                    bool parse_special, bool prompt) {
    e0_err e = {{0}};
    e0_tokens ids = {0};
    int rc = prompt ? e0_tokenize_prompt(t, text, len, true, &ids, &e)
                    : e0_tokenize(t, text, len, add_special, parse_special, &ids, &e);
    FUZZ_CHECK(rc == 0, "tokenize failed: %s", e.msg);
    uint32_t nv = e0_tok_n_vocab(t);
    for (size_t i = 0; i < ids.n; i++) FUZZ_CHECK(ids.ids[i] >= 0 && (uint32_t)ids.ids[i] < nv, "id %d out of range", ids.ids[i]);
    /* SentencePiece escapes spaces as U+2581, so a U+2581 in the text comes back as a space. */
    bool spm_escape = e0_tok_model(t) == E0_TOK_SPM && memmem(text, len, "\xe2\x96\x81", 3);
    if (!prompt && !parse_special && v->roundtrip && !spm_escape) {
        char *out;
        size_t olen;
        FUZZ_CHECK(e0_detokenize(t, ids.ids, ids.n, false, &out, &olen, &e) == 0, "e0_detokenize failed: %s", e.msg);
        FUZZ_CHECK(olen == len && memcmp(out, text, len) == 0, "detokenize(tokenize(x)) != x (%zu vs %zu bytes)", olen, len);
        free(out);
    }
    tk_detok(t, ids.ids, ids.n, add_special);
    e0_tokens_free(&ids);
}

static void tk_ids(const e0_tokenizer *t, const uint8_t *d, size_t n, bool special) {
    uint32_t nv = e0_tok_n_vocab(t);
    size_t k = n / 3;
    int32_t *ids = malloc((k ? k : 1) * sizeof *ids);
    if (!ids) return;
    for (size_t i = 0; i < k; i++) {
        uint32_t x = (uint32_t)d[3 * i] | (uint32_t)d[3 * i + 1] << 8 | (uint32_t)d[3 * i + 2] << 16;
        ids[i] = (int32_t)(x % (nv + 8)) - 4;
        size_t len;
        FUZZ_CHECK(e0_tok_piece(t, ids[i], special, &len) != NULL, "e0_tok_piece returned NULL");
        bool in = ids[i] >= 0 && (uint32_t)ids[i] < nv;
        FUZZ_CHECK((e0_tok_text(t, ids[i], &len) != NULL) == in, "e0_tok_text: wrong answer for id %d", ids[i]);
        FUZZ_CHECK((e0_tok_type_of(t, ids[i]) >= 0) == in, "e0_tok_type_of: wrong answer for id %d", ids[i]);
        (void)e0_tok_is_eog(t, ids[i]);
    }
    tk_detok(t, ids, k, special);
    free(ids);
}

int fuzz_tokenizer_one(const uint8_t *data, size_t size) {
    if (size < 1 || size > FUZZ_TOK_MAX || tk_n_avail == 0) return 0;
    int which = tk_avail[(data[0] & 15) % tk_n_avail];
    const e0_tokenizer *t = tk_toks[which];
    bool add_special = data[0] & 16, parse_special = data[0] & 32;
    int mode = data[0] >> 6;
    const char *text = (const char *)data + 1;
    if (mode <= 1) tk_text(t, fuzz_vocab_at(which), text, size - 1, add_special, parse_special, mode == 1);
    else tk_ids(t, data + 1, size - 1, add_special);
    return 0;
}

FUZZ_ENTRY_POINTS(tokenizer)
