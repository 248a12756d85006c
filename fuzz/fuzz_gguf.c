/* fuzz_gguf.c — libFuzzer target: the GGUF reader (src/gguf/), the tokenizer metadata reader, and
 * model load + a two-token evaluation on whatever the reader and the model validation accept.
 *
 * The input is a GGUF file. It is written into a memfd and opened through /proc/self/fd/N (the
 * reader wants a path). Checked beyond "no crash, no leak": every kv is found again by its key,
 * every tensor by its name and lies inside the file, the typed getters answer 1/0/-1 as
 * documented, reading a tensor's first bytes succeeds and reading past the end fails, a failure
 * always comes with a message, and an out-of-range token id is refused by e0_eval.
 *
 * Resource use is bounded by the input: gguf_open() and e0_model_load() check every size against
 * the file size before allocating, the context is 4 positions, one thread. Inputs above
 * FUZZ_GGUF_MAX bytes are skipped (run with -max_len at or below it). */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"

#include "engine/engine.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "text/tokenizer.h"

#define FUZZ_GGUF_MAX (1u << 20)

static int gg_fd = -1;
static char gg_path[64];

int fuzz_gguf_init(void) {
    gg_fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
    if (gg_fd < 0) {
        perror("memfd_create");
        return -1;
    }
    snprintf(gg_path, sizeof gg_path, "/proc/self/fd/%d", gg_fd);
    return 0;
}

static int gg_write(const uint8_t *d, size_t n) {
    if (ftruncate(gg_fd, 0) != 0) return -1;
    for (size_t off = 0; off < n;) {
        ssize_t w = pwrite(gg_fd, d + off, n - off, (off_t)off);
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Touch every byte a kv owns (ASan sees any bad pointer or length) and ask each getter for it. */
static void gg_check_kv(const gguf_file *f, const gguf_kv *kv) {
    e0_err e = {{0}};
    FUZZ_CHECK(gguf_find(f, kv->key) == kv, "gguf_find('%s') does not return its kv", kv->key);
    FUZZ_CHECK(gguf_vtype_name(kv->type) != NULL, "no name for type %d", (int)kv->type);
    volatile unsigned sum = 0;
    if (kv->type == GGUF_STR) {
        FUZZ_CHECK(kv->v.str.s[kv->v.str.len] == 0, "string kv '%s' is not NUL-terminated", kv->key);
    } else if (kv->type == GGUF_ARR && kv->v.arr.type == GGUF_STR) {
        const gguf_string *s = kv->v.arr.data;
        for (uint64_t i = 0; i < kv->v.arr.n; i++) FUZZ_CHECK(s[i].s[s[i].len] == 0, "array string not terminated");
    } else if (kv->type == GGUF_ARR && kv->v.arr.n) {
        FUZZ_CHECK(kv->v.arr.data != NULL, "array '%s' without data", kv->key);
        sum += ((const uint8_t *)kv->v.arr.data)[0];
    }
    (void)sum;
    int64_t i64;
    uint32_t u32;
    float f32;
    bool b;
    const gguf_string *s;
    int r[5] = {gguf_get_i64(f, kv->key, &i64, &e), gguf_get_u32(f, kv->key, &u32, &e),
                gguf_get_f32(f, kv->key, &f32, &e), gguf_get_bool(f, kv->key, &b, &e),
                gguf_get_str(f, kv->key, &s, &e)};
    for (int i = 0; i < 5; i++) FUZZ_CHECK(r[i] == 1 || r[i] == -1, "getter %d on present key '%s' gave %d", i, kv->key, r[i]);
    for (int t = 0; t < GGUF_VTYPE_COUNT; t++) {
        if (t == GGUF_ARR) continue;
        const void *data;
        uint64_t n;
        int ra = gguf_get_arr(f, kv->key, (enum gguf_vtype)t, &data, &n, &e);
        FUZZ_CHECK(ra == 1 || ra == -1, "gguf_get_arr on present key gave %d", ra);
        if (ra == 1) FUZZ_CHECK(kv->type == GGUF_ARR && n == kv->v.arr.n, "gguf_get_arr: wrong array");
    }
}

static void gg_check_tokenizer(const gguf_file *f) {
    e0_err e = {{0}};
    e0_tokenizer *t = e0_tokenizer_from_gguf(f, &e);
    if (!t) {
        FUZZ_CHECK(e.msg[0], "e0_tokenizer_from_gguf failed without a message");
        return;
    }
    static const char text[] = "Hello, world! <s> </s> <|im_end|> 12345 \xe2\x96\x81x \xff\xfe tab\there";
    e0_tokens ids = {0};
    if (e0_tokenize(t, text, sizeof text - 1, true, true, &ids, &e) == 0) {
        uint32_t nv = e0_tok_n_vocab(t);
        for (size_t i = 0; i < ids.n; i++) FUZZ_CHECK(ids.ids[i] >= 0 && (uint32_t)ids.ids[i] < nv, "token id out of range");
        char *out;
        size_t len;
        if (e0_detokenize(t, ids.ids, ids.n, true, &out, &len, &e) == 0) free(out);
    }
    e0_tokens_free(&ids);
    e0_tokenizer_free(t);
}

static void gg_reader(void) {
    e0_err e = {{0}};
    gguf_file *f = gguf_open(gg_path, &e);
    if (!f) {
        FUZZ_CHECK(e.msg[0], "gguf_open failed without a message");
        return;
    }
    for (uint64_t i = 0; i < f->n_kv; i++) gg_check_kv(f, &f->kv[i]);
    uint8_t buf[64];
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        FUZZ_CHECK(gguf_find_tensor(f, t->name) == t, "gguf_find_tensor('%s') does not return it", t->name);
        FUZZ_CHECK(t->offset >= f->data_offset && t->nbytes <= f->file_size - t->offset, "tensor '%s' outside the file",
                   t->name);
        uint64_t n = t->nbytes < sizeof buf ? t->nbytes : sizeof buf;
        FUZZ_CHECK(gguf_read(f, t->offset, buf, n, &e) == 0, "reading tensor '%s': %s", t->name, e.msg);
    }
    FUZZ_CHECK(gguf_read(f, f->file_size, buf, 1, &e) < 0, "gguf_read past the end succeeded");
    gg_check_tokenizer(f);
    gguf_close(f);
}

static void gg_model(void) {
    e0_err e = {{0}};
    e0_model *m = e0_model_load(gg_path, &(e0_model_params){.experts_resident = true}, true, &e);
    if (!m) {
        FUZZ_CHECK(e.msg[0], "e0_model_load failed without a message");
        return;
    }
    (void)e0_model_is_moe(m);
    (void)e0_model_decode_bytes(m, 4, e0_kv_bytes_per_pos(&m->hp, E0_TYPE_F16, E0_TYPE_F16));
    e0_ctx *c = e0_ctx_new(m, &(e0_ctx_params){.n_ctx = 4, .n_threads = 1, .n_batch = 2}, &e);
    if (c) {
        int toks[3] = {0, (int)(m->hp.n_vocab - 1), 0};
        if (e0_eval(c, toks, 3, NULL, &e) == 0) {
            const float *l = e0_ctx_logits(c);
            volatile float x = l[0] + l[m->hp.n_vocab - 1];
            (void)x;
        }
        e0_ctx_truncate(c, 0);
        int bad = (int)m->hp.n_vocab;
        FUZZ_CHECK(e0_eval(c, &bad, 1, NULL, &e) < 0, "e0_eval accepted token id n_vocab");
        e0_ctx_free(c);
    } else {
        FUZZ_CHECK(e.msg[0], "e0_ctx_new failed without a message");
    }
    e0_model_free(m);
}

int fuzz_gguf_one(const uint8_t *data, size_t size) {
    if (size > FUZZ_GGUF_MAX) return 0;
    if (gg_write(data, size) != 0) return 0;
    gg_reader();
    gg_model();
    return 0;
}

FUZZ_ENTRY_POINTS(gguf)
