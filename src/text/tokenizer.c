/* tokenizer.c — building a tokenizer from a vocabulary (validation, hash maps, special-token
 * fix-ups as llama.cpp does them), reading it from GGUF metadata, and tokenize(): special-token
 * partition of the text, then the SPM or BPE model on each raw fragment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"

#define MAX_VOCAB (1u << 24) /* sanity bound on untrusted counts */
#define MAX_TOKEN_LEN (1u << 16)

void e0_tokenizer_desc_init(e0_tokenizer_desc *d) {
    memset(d, 0, sizeof *d);
    d->bos = d->eos = d->unk = d->pad = d->eot = d->eom = d->sep = -1;
    d->add_bos = d->add_eos = d->add_space_prefix = -1;
}

void e0_tokenizer_free(e0_tokenizer *t) {
    if (!t) return;
    free(t->pre_name);
    for (int i = 0; i < t->n_blocks; i++) e0_free(E0_MEM_OTHER, t->blocks[i].p, t->blocks[i].n);
    for (int i = 0; i < t->n_regex; i++) e0_regex_free(t->regex[i]);
    free(t->regex);
    free(t);
}

/* ---- building ---- */

static int attr_from_type(int32_t type) {
    switch (type) {
    case E0_TT_UNKNOWN: return ATTR_UNKNOWN;
    case E0_TT_UNUSED: return ATTR_UNUSED;
    case E0_TT_NORMAL: return ATTR_NORMAL;
    case E0_TT_CONTROL: return ATTR_CONTROL;
    case E0_TT_USER_DEFINED: return ATTR_USER_DEFINED;
    case E0_TT_BYTE: return ATTR_BYTE;
    default: return 0; /* undefined */
    }
}

static int copy_texts(e0_tokenizer *t, const e0_tokenizer_desc *d, e0_err *e) {
    /* Empty texts become "[EMPTY_<i>]" as in llama.cpp, so every token has a findable text. */
    size_t total = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!d->tokens[i]) return e0_fail(e, "tokenizer: token %u has no text", i);
        size_t l = d->token_lens ? d->token_lens[i] : strlen(d->tokens[i]);
        if (l > MAX_TOKEN_LEN) return e0_fail(e, "tokenizer: token %u is %zu bytes long (max %u)", i, l, MAX_TOKEN_LEN);
        total += (l ? l : 24) + 1;
    }
    t->pool = tok_alloc(t, total);
    t->off = tok_alloc(t, t->n * sizeof *t->off);
    t->len = tok_alloc(t, t->n * sizeof *t->len);
    if (!t->pool || !t->off || !t->len) return e0_fail(e, "out of memory");
    size_t p = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        size_t l = d->token_lens ? d->token_lens[i] : strlen(d->tokens[i]);
        t->off[i] = p;
        if (l == 0) l = (size_t)snprintf(t->pool + p, 25, "[EMPTY_%u]", i);
        else memcpy(t->pool + p, d->tokens[i], l);
        t->pool[p + l] = 0;
        t->len[i] = (uint32_t)l;
        p += l + 1;
    }
    t->pool_size = p;
    return 0;
}

static int build_map(e0_tokenizer *t, e0_err *e) {
    size_t cap = 16;
    while (cap < (size_t)t->n * 2) cap *= 2;
    t->map.slots = tok_alloc(t, cap * sizeof *t->map.slots);
    if (!t->map.slots) return e0_fail(e, "out of memory");
    t->map.mask = cap - 1;
    for (uint32_t id = 0; id < t->n; id++) {
        const char *s = t->pool + t->off[id];
        size_t i = tok_hash(s, t->len[id]) & t->map.mask;
        while (t->map.slots[i]) {
            uint32_t o = t->map.slots[i] - 1;
            if (t->len[o] == t->len[id] && !memcmp(t->pool + t->off[o], s, t->len[id]))
                return e0_fail(e, "tokenizer: duplicate token text in vocabulary (ids %u and %u)", o, id);
            i = (i + 1) & t->map.mask;
        }
        t->map.slots[i] = id + 1;
    }
    return 0;
}

static int check_id(const e0_tokenizer *t, int64_t v, const char *what, int32_t dflt, int32_t *out, e0_err *e) {
    if (v < 0) {
        /* absent: llama.cpp's default, disabled when out of range */
        *out = dflt >= 0 && (uint32_t)dflt < t->n ? dflt : -1;
        return 0;
    }
    if ((uint64_t)v >= t->n)
        return e0_fail(e, "tokenizer: %s token id %lld is outside the vocabulary (%u tokens)", what, (long long)v, t->n);
    *out = (int32_t)v;
    return 0;
}

static int32_t find_cstr(const e0_tokenizer *t, const char *s) { return tok_strmap_find(t, s, strlen(s)); }

/* llama.cpp's text-based detection of EOT/EOM/FIM and end-of-generation tokens. */
static void mark_special_by_text(e0_tokenizer *t) {
    static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                            "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                            "<end_of_utterance>"};
    static const char *const eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                            "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                                            "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                            "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                            "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                            "[e~["};
    static const char *const fim_eog_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
                                                "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                                "<|file_sep|>"};
    static const char *const fim_ctl_texts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>",
                                                "\xe2\x96\x81<PRE>", "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                                "<SUF>", "\xe2\x96\x81<SUF>", "<|fim_middle|>", "<fim-middle>",
                                                "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>"};
    /* A token found by its text is made CONTROL (ids given by the metadata are left alone). */
    if (t->eot < 0) {
        for (size_t i = 0; i < sizeof eot_texts / sizeof *eot_texts && t->eot < 0; i++) t->eot = find_cstr(t, eot_texts[i]);
        if (t->eot >= 0) t->attr[t->eot] |= ATTR_CONTROL;
    }
    if (t->eom < 0) {
        t->eom = find_cstr(t, "<|eom_id|>");
        if (t->eom >= 0) t->attr[t->eom] |= ATTR_CONTROL;
    }
    for (size_t i = 0; i < sizeof fim_ctl_texts / sizeof *fim_ctl_texts; i++) {
        int32_t id = find_cstr(t, fim_ctl_texts[i]);
        if (id >= 0) t->attr[id] |= ATTR_CONTROL;
    }
    for (size_t i = 0; i < sizeof fim_eog_texts / sizeof *fim_eog_texts; i++) {
        int32_t id = find_cstr(t, fim_eog_texts[i]);
        if (id >= 0) t->attr[id] |= ATTR_CONTROL, t->eog[id] = 1;
    }
    for (size_t i = 0; i < sizeof eog_texts / sizeof *eog_texts; i++) {
        int32_t id = find_cstr(t, eog_texts[i]);
        if (id >= 0) t->attr[id] |= ATTR_CONTROL, t->eog[id] = 1;
    }
    if (t->eos >= 0) t->eog[t->eos] = 1;
    if (t->eot >= 0) t->eog[t->eot] = 1;
    if (t->eom >= 0) t->eog[t->eom] = 1;
    /* gpt-oss: these are always rendered. */
    static const char *const shown[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        int32_t id = find_cstr(t, shown[i]);
        if (id >= 0) t->attr[id] = ATTR_USER_DEFINED;
    }
    /* o200k_harmony / solar-open: with <|return|> and <|call|> (or <|calls|> and <|flush|>),
     * <|end|> is not end-of-generation. */
    int32_t ret = find_cstr(t, "<|return|>"), call = find_cstr(t, "<|call|>"), end = find_cstr(t, "<|end|>");
    int32_t calls = find_cstr(t, "<|calls|>"), flush = find_cstr(t, "<|flush|>");
    if (end >= 0 && ((ret >= 0 && call >= 0) || (calls >= 0 && flush >= 0))) {
        t->eog[end] = 0;
        t->attr[end] = ATTR_USER_DEFINED;
    }
    /* gemma4 / paddleocr: with <|tool_response>, </s> is an ordinary token. */
    int32_t tool = find_cstr(t, "<|tool_response>"), s_end = find_cstr(t, "</s>");
    if (tool >= 0 && s_end >= 0 && t->eog[s_end]) {
        t->eog[s_end] = 0;
        t->attr[s_end] = ATTR_NORMAL;
    }
}

static int cmp_special(const void *a, const void *b, void *ctx) {
    const e0_tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int build_special_list(e0_tokenizer *t, e0_err *e) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->attr[i] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) n++;
    t->special = tok_alloc(t, n * sizeof *t->special);
    if (!t->special) return e0_fail(e, "out of memory");
    for (uint32_t i = 0; i < t->n; i++)
        if (t->attr[i] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)) t->special[t->n_special++] = (int32_t)i;
    qsort_r(t->special, t->n_special, sizeof *t->special, cmp_special, t);
    return 0;
}

static int spm_init_bytes(e0_tokenizer *t) {
    for (int b = 0; b < 256; b++) {
        char buf[8];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        t->byte_tok[b] = find_cstr(t, buf);
        if (t->byte_tok[b] < 0) {
            char one = (char)b;
            t->byte_tok[b] = tok_strmap_find(t, &one, 1);
        }
    }
    return 0;
}

e0_tokenizer *e0_tokenizer_create(const e0_tokenizer_desc *d, e0_err *e) {
    if (!d->model) {
        e0_fail(e, "tokenizer: tokenizer.ggml.model is missing");
        return NULL;
    }
    /* "gemma4" is llama.cpp's SPM-style BPE: a BPE vocabulary whose pre-tokenizer is always gemma4. */
    bool gemma4 = !strcmp(d->model, "gemma4");
    int model = !strcmp(d->model, "llama") ? E0_TOK_SPM : !strcmp(d->model, "gpt2") || gemma4 ? E0_TOK_BPE : 0;
    if (!model) {
        e0_fail(e, "tokenizer: unsupported tokenizer model '%s' (supported: llama, gpt2, gemma4)", d->model);
        return NULL;
    }
    if (d->n_tokens == 0 || !d->tokens) {
        e0_fail(e, "tokenizer: empty vocabulary");
        return NULL;
    }
    if (d->n_tokens > MAX_VOCAB) {
        e0_fail(e, "tokenizer: vocabulary of %llu tokens is too large", (unsigned long long)d->n_tokens);
        return NULL;
    }
    if (d->n_scores && d->n_scores != d->n_tokens) {
        e0_fail(e, "tokenizer: %llu scores for %llu tokens", (unsigned long long)d->n_scores,
                (unsigned long long)d->n_tokens);
        return NULL;
    }
    if (d->n_types && d->n_types != d->n_tokens) {
        e0_fail(e, "tokenizer: %llu token types for %llu tokens", (unsigned long long)d->n_types,
                (unsigned long long)d->n_tokens);
        return NULL;
    }
    e0_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    t->model = model;
    t->n = (uint32_t)d->n_tokens;
    const char *pre = gemma4 ? "gemma4" : d->pre && *d->pre ? d->pre : "default";
    t->pre_name = strdup(pre);
    t->score = tok_alloc(t, t->n * sizeof *t->score);
    t->attr = tok_alloc(t, t->n);
    t->type = tok_alloc(t, t->n);
    t->eog = tok_alloc(t, t->n);
    if (!t->pre_name || !t->score || !t->attr || !t->type || !t->eog) {
        e0_fail(e, "out of memory");
        goto fail;
    }
    if (copy_texts(t, d, e) < 0 || build_map(t, e) < 0) goto fail;
    for (uint32_t i = 0; i < t->n; i++) {
        t->score[i] = d->n_scores ? d->scores[i] : 0.0f;
        int32_t ty = d->n_types ? d->types[i] : E0_TT_NORMAL;
        t->type[i] = ty >= 0 && ty <= 6 ? (uint8_t)ty : 0;
        t->attr[i] = (uint8_t)attr_from_type(ty);
    }

    /* Defaults as llama.cpp's load(): SPM bos 1 eos 2 unk 0; BPE bos = eos = 11. */
    int32_t dbos = model == E0_TOK_SPM ? 1 : 11, deos = model == E0_TOK_SPM ? 2 : 11;
    int32_t dunk = model == E0_TOK_SPM ? 0 : -1;
    t->add_space_prefix = model == E0_TOK_SPM;
    t->add_bos = model == E0_TOK_SPM;
    t->add_eos = false;
    if (gemma4) dbos = deos = -1; /* no default special ids */
    if (model == E0_TOK_BPE) {
        if (!gemma4 && (!d->pre || !*d->pre)) /* as llama.cpp: usable, but probably not what the model was trained with */
            fprintf(stderr, "edge0-infer: warning: BPE vocabulary without tokenizer.ggml.pre; using 'default'\n");
        if (tok_bpe_init(t, d, e) < 0) goto fail; /* sets add_bos/ignore_merges per pre */
        if (t->no_default_bos) dbos = -1;
    }
    if (check_id(t, d->bos, "BOS", dbos, &t->bos, e) < 0 || check_id(t, d->eos, "EOS", deos, &t->eos, e) < 0 ||
        check_id(t, d->unk, "UNK", dunk, &t->unk, e) < 0 || check_id(t, d->pad, "PAD", -1, &t->pad, e) < 0 ||
        check_id(t, d->eot, "EOT", -1, &t->eot, e) < 0 || check_id(t, d->eom, "EOM", -1, &t->eom, e) < 0 ||
        check_id(t, d->sep, "SEP", -1, &t->sep, e) < 0)
        goto fail;
    if (d->add_space_prefix >= 0) t->add_space_prefix = d->add_space_prefix;
    if (d->add_bos >= 0) t->add_bos = d->add_bos;
    if (d->add_eos >= 0) t->add_eos = d->add_eos;
    if (t->force_bos) t->add_bos = true; /* llama.cpp's Gemma 4 workaround */
    if (t->add_bos && t->bos < 0) {
        e0_fail(e, "tokenizer: add_bos_token is true but there is no BOS token");
        goto fail;
    }
    if (t->add_eos && t->eos < 0) {
        e0_fail(e, "tokenizer: add_eos_token is true but there is no EOS token");
        goto fail;
    }
    mark_special_by_text(t);
    if (model == E0_TOK_SPM) spm_init_bytes(t);
    if (build_special_list(t, e) < 0 || tok_build_pieces(t, e) < 0) goto fail;
    return t;
fail:
    e0_tokenizer_free(t);
    return NULL;
}

/* ---- GGUF ---- */

static int get_id(const gguf_file *f, const char *key, int64_t *out, e0_err *e) {
    int r = gguf_get_i64(f, key, out, e);
    if (r < 0) return -1;
    /* -1 as i32 or u32 is the converters' "no such token" (stories260K has pad = 0xFFFFFFFF). */
    if (r == 0 || *out == -1 || *out == 0xFFFFFFFFLL) *out = -1;
    else if (*out < 0) return e0_fail(e, "tokenizer: %s is negative (%lld)", key, (long long)*out);
    return 0;
}

static int get_flag(const gguf_file *f, const char *key, int *out, e0_err *e) {
    bool b;
    int r = gguf_get_bool(f, key, &b, e);
    if (r < 0) return -1;
    *out = r == 0 ? -1 : b;
    return 0;
}

e0_tokenizer *e0_tokenizer_from_gguf(const gguf_file *f, e0_err *e) {
    e0_tokenizer_desc d;
    e0_tokenizer_desc_init(&d);
    const gguf_string *model = NULL, *pre = NULL, *toks = NULL, *merges = NULL;
    const void *data;
    uint64_t n;
    const char **tok_ptrs = NULL, **merge_ptrs = NULL;
    uint64_t *tok_lens = NULL, *merge_lens = NULL;
    float *iscores = NULL;
    e0_tokenizer *t = NULL;

    int r = gguf_get_str(f, "tokenizer.ggml.model", &model, e);
    if (r < 0) return NULL;
    if (r == 0) {
        e0_fail(e, "tokenizer: the model has no tokenizer (tokenizer.ggml.model is missing)");
        return NULL;
    }
    if (gguf_get_str(f, "tokenizer.ggml.pre", &pre, e) < 0) return NULL;
    r = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STR, &data, &n, e);
    if (r < 0) return NULL;
    if (r == 0 || n == 0) {
        e0_fail(e, "tokenizer: empty vocabulary (tokenizer.ggml.tokens)");
        return NULL;
    }
    if (n > MAX_VOCAB) {
        e0_fail(e, "tokenizer: vocabulary of %llu tokens is too large", (unsigned long long)n);
        return NULL;
    }
    toks = data;
    d.model = model->s;
    d.pre = pre ? pre->s : NULL;
    d.n_tokens = n;
    tok_ptrs = malloc(n * sizeof *tok_ptrs);
    tok_lens = malloc(n * sizeof *tok_lens);
    if (!tok_ptrs || !tok_lens) {
        e0_fail(e, "out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < n; i++) tok_ptrs[i] = toks[i].s, tok_lens[i] = toks[i].len;
    d.tokens = tok_ptrs;
    d.token_lens = tok_lens;

    /* scores: F32 (or I32, which llama.cpp also accepts) */
    const gguf_kv *kv = gguf_find(f, "tokenizer.ggml.scores");
    if (kv) {
        if (kv->type == GGUF_ARR && kv->v.arr.type == GGUF_I32) {
            iscores = malloc((kv->v.arr.n ? kv->v.arr.n : 1) * sizeof *iscores);
            if (!iscores) {
                e0_fail(e, "out of memory");
                goto done;
            }
            for (uint64_t i = 0; i < kv->v.arr.n; i++) iscores[i] = (float)((const int32_t *)kv->v.arr.data)[i];
            d.scores = iscores;
            d.n_scores = kv->v.arr.n;
        } else {
            if (gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_F32, &data, &d.n_scores, e) < 0) goto done;
            d.scores = data;
        }
        if (d.n_scores == 0) {
            e0_fail(e, "tokenizer: tokenizer.ggml.scores is empty");
            goto done;
        }
    }
    r = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_I32, &data, &d.n_types, e);
    if (r < 0) goto done;
    if (r == 1 && d.n_types == 0) {
        e0_fail(e, "tokenizer: tokenizer.ggml.token_type is empty");
        goto done;
    }
    d.types = data;
    if (!strcmp(model->s, "gpt2") || !strcmp(model->s, "gemma4")) {
        r = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STR, &data, &d.n_merges, e);
        if (r < 0) goto done;
        /* Kimi-K2's files may have no merges (llama.cpp accepts that for this pre only). */
        if (r == 0 && !(pre && !strcmp(pre->s, "kimi-k2") && !strcmp(model->s, "gpt2"))) {
            e0_fail(e, "tokenizer: BPE vocabulary without tokenizer.ggml.merges");
            goto done;
        }
        merges = data;
        merge_ptrs = malloc((d.n_merges ? d.n_merges : 1) * sizeof *merge_ptrs);
        merge_lens = malloc((d.n_merges ? d.n_merges : 1) * sizeof *merge_lens);
        if (!merge_ptrs || !merge_lens) {
            e0_fail(e, "out of memory");
            goto done;
        }
        for (uint64_t i = 0; i < d.n_merges; i++) merge_ptrs[i] = merges[i].s, merge_lens[i] = merges[i].len;
        d.merges = merge_ptrs;
        d.merge_lens = merge_lens;
    }
    if (get_id(f, "tokenizer.ggml.bos_token_id", &d.bos, e) < 0 || get_id(f, "tokenizer.ggml.eos_token_id", &d.eos, e) < 0 ||
        get_id(f, "tokenizer.ggml.unknown_token_id", &d.unk, e) < 0 ||
        get_id(f, "tokenizer.ggml.padding_token_id", &d.pad, e) < 0 ||
        get_id(f, "tokenizer.ggml.eot_token_id", &d.eot, e) < 0 || get_id(f, "tokenizer.ggml.eom_token_id", &d.eom, e) < 0 ||
        get_id(f, "tokenizer.ggml.seperator_token_id", &d.sep, e) < 0)
        goto done;
    if (get_flag(f, "tokenizer.ggml.add_bos_token", &d.add_bos, e) < 0 ||
        get_flag(f, "tokenizer.ggml.add_eos_token", &d.add_eos, e) < 0 ||
        get_flag(f, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix, e) < 0)
        goto done;
    t = e0_tokenizer_create(&d, e);
done:
    free(tok_ptrs);
    free(tok_lens);
    free(merge_ptrs);
    free(merge_lens);
    free(iscores);
    return t;
}

/* ---- tokenize ---- */

/* A piece of the input: either raw text [off, off+len) or an already recognised token. */
typedef struct fragment {
    int32_t token; /* -1 for raw text */
    size_t off, len;
} fragment;

typedef struct frag_list {
    fragment *v;
    size_t n, cap;
} frag_list;

static int frag_push(frag_list *l, fragment f, e0_err *e) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        fragment *p = realloc(l->v, nc * sizeof *p);
        if (!p) return e0_fail(e, "out of memory");
        l->v = p;
        l->cap = nc;
    }
    l->v[l->n++] = f;
    return 0;
}

/* llama.cpp's tokenizer_st_partition: for each special token, longest first, split every raw
 * fragment at each of its occurrences (left to right). */
static int partition(const e0_tokenizer *t, const char *text, size_t len, bool parse_special, frag_list *out,
                     e0_err *e) {
    frag_list cur = {0}, next = {0};
    int rc = -1;
    if (frag_push(&cur, (fragment){-1, 0, len}, e) < 0) goto done;
    for (uint32_t s = 0; s < t->n_special; s++) {
        int32_t id = t->special[s];
        if (!parse_special && (t->attr[id] & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
        const char *st = t->pool + t->off[id];
        size_t sl = t->len[id];
        next.n = 0;
        for (size_t i = 0; i < cur.n; i++) {
            fragment f = cur.v[i];
            if (f.token >= 0 || f.len < sl) {
                if (frag_push(&next, f, e) < 0) goto done;
                continue;
            }
            size_t pos = f.off, end = f.off + f.len;
            for (;;) {
                const char *m = memmem(text + pos, end - pos, st, sl);
                if (!m) break;
                size_t mp = (size_t)(m - text);
                if (mp > pos && frag_push(&next, (fragment){-1, pos, mp - pos}, e) < 0) goto done;
                if (frag_push(&next, (fragment){id, 0, 0}, e) < 0) goto done;
                pos = mp + sl;
            }
            if (pos < end && frag_push(&next, (fragment){-1, pos, end - pos}, e) < 0) goto done;
        }
        frag_list tmp = cur;
        cur = next;
        next = tmp;
    }
    *out = cur;
    cur.v = NULL;
    rc = 0;
done:
    free(cur.v);
    free(next.v);
    return rc;
}

int e0_tokenize(const e0_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                e0_tokens *out, e0_err *e) {
    frag_list frags = {0};
    if (len > 0 && partition(t, text, len, parse_special, &frags, e) < 0) return -1;
    int rc = -1;
    if (add_special && t->add_bos && tokens_push(out, t->bos, e) < 0) goto done;
    bool prev_special = true; /* SPM: a raw fragment at the start or after a token gets a space */
    for (size_t i = 0; i < frags.n; i++) {
        fragment f = frags.v[i];
        if (f.token >= 0) {
            if (tokens_push(out, f.token, e) < 0) goto done;
            prev_special = true;
            continue;
        }
        if (t->model == E0_TOK_SPM) {
            if (tok_spm_fragment(t, text + f.off, f.len, t->add_space_prefix && prev_special, out, e) < 0) goto done;
        } else {
            if (tok_bpe_fragment(t, text + f.off, f.len, out, e) < 0) goto done;
        }
        prev_special = false;
    }
    if (add_special && t->add_eos && tokens_push(out, t->eos, e) < 0) goto done;
    rc = 0;
done:
    free(frags.v);
    return rc;
}
