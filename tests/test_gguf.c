/* test_gguf.c — the GGUF reader and writer: round trip of every kv and several tensor types,
 * the real files under ../shared, writer misuse and write errors, and hostile input: every
 * truncation, corruption of every structural field, and a list of specific malformed files, each
 * of which must fail with a clear message, allocate only what the file size justifies, and never
 * crash (run under ASan/UBSan via `make asan`). Files are generated under $E0_BUILD/test-gguf. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "t.h"

static char dir[512];

static const char *tmp_path(const char *name) {
    static char p[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp || (n && fwrite(p, 1, n, fp) != n)) {
        printf("cannot write %s\n", path);
        exit(2);
    }
    fclose(fp);
}

/* The hostile-input loops open thousands of variants: they go to an in-memory file (memfd),
 * opened by gguf_open() through /proc/self/fd/N, to spare the shared disk. Falls back to a file
 * under the build dir. Returns the path to open. */
static const char *mem_file(const char *fallback_name, const void *p, size_t n) {
    static int fd = -2;
    static char path[64];
    if (fd == -2) fd = memfd_create("gguf-test", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 0) != 0 || (n && pwrite(fd, p, n, 0) != (ssize_t)n)) {
        const char *fb = tmp_path(fallback_name);
        write_bytes(fb, p, n);
        return fb;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return path;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Allocation by gguf_open() must stay proportional to the file size. */
static uint64_t alloc_limit(uint64_t file_size) { return 64 * file_size + 64 * 1024; }

/* Everything a successful open promises, checked independently of the parser. */
static void check_consistent(const gguf_file *f) {
    CHECK(f->version == 2 || f->version == 3);
    CHECK(f->alignment && !(f->alignment & (f->alignment - 1)));
    CHECK(f->data_offset % f->alignment == 0);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        CHECK(f->kv[i].key && f->kv[i].key[0]);
        CHECK(gguf_find(f, f->kv[i].key) == &f->kv[i]);
        CHECK((unsigned)f->kv[i].type < GGUF_VTYPE_COUNT);
        if (f->kv[i].type == GGUF_ARR) CHECK(f->kv[i].v.arr.type != GGUF_ARR && f->kv[i].v.arr.type < GGUF_VTYPE_COUNT);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        CHECK(strlen(t->name) > 0 && strlen(t->name) <= GGUF_MAX_NAME);
        CHECK(gguf_find_tensor(f, t->name) == t);
        CHECK(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
        const e0_type_traits *tr = e0_type_traits_of(t->type);
        CHECK(tr && tr->weight_ok);
        if (!tr) continue;
        uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
        CHECK(t->nbytes == e0_row_size(t->type, (int64_t)t->ne[0]) * rows);
        CHECK(t->nelements == t->ne[0] * rows);
        CHECK(t->offset >= f->data_offset && t->offset % f->alignment == 0);
        CHECK(t->offset <= f->file_size && t->nbytes <= f->file_size - t->offset);
    }
}

/* Open `path`; on success check consistency and read all tensor data. Returns 1 if it opened. */
static int open_any(const char *path, uint64_t file_size) {
    e0_err e = {{0}};
    gguf_file *f = gguf_open(path, &e);
    CHECKF(gguf_test_open_alloc_bytes() <= alloc_limit(file_size), "allocated %" PRIu64 " for a %" PRIu64 "-byte file",
           gguf_test_open_alloc_bytes(), file_size);
    if (!f) {
        CHECKF(strlen(e.msg) > 10 && strstr(e.msg, path), "bad message '%s'", e.msg);
        return 0;
    }
    check_consistent(f);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        void *buf = malloc(f->tensors[i].nbytes);
        CHECK(buf && gguf_read(f, f->tensors[i].offset, buf, f->tensors[i].nbytes, &e) == 0);
        free(buf);
    }
    gguf_close(f);
    return 1;
}

/* ---- a small valid file, written by the writer; the base for the hostile-input tests ---- */
static const char *small_path(void) { return tmp_path("small.gguf"); }

static void write_small(const char *path) {
    e0_err e;
    gguf_writer *w = gguf_writer_open(path, &e);
    if (!w) {
        printf("%s\n", e.msg);
        exit(2);
    }
    const char *toks[] = {"<s>", "", "hello"};
    int32_t nums[] = {1, -2, 3};
    uint8_t flags[] = {1, 0};
    gguf_writer_kv_str(w, "general.architecture", "llama");
    gguf_writer_kv_u32(w, "general.alignment", 32);
    gguf_writer_kv_bool(w, "some.flag", true);
    gguf_writer_kv_f32(w, "some.eps", 1e-5f);
    gguf_writer_kv_str_arr(w, "tokenizer.ggml.tokens", toks, 3);
    gguf_writer_kv_arr(w, "some.ints", GGUF_I32, nums, 3);
    gguf_writer_kv_arr(w, "some.bools", GGUF_BOOL, flags, 2);
    uint64_t ne_a[] = {4, 2}, ne_b[] = {32}, ne_c[] = {3};
    gguf_writer_tensor(w, "a.weight", 2, ne_a, E0_TYPE_F32);
    gguf_writer_tensor(w, "b.weight", 1, ne_b, E0_TYPE_Q8_0);
    gguf_writer_tensor(w, "c.weight", 1, ne_c, E0_TYPE_F16);
    uint8_t data[64];
    for (int i = 0; i < 64; i++) data[i] = (uint8_t)i;
    gguf_writer_data(w, data, 32);
    gguf_writer_data(w, data, 34);
    gguf_writer_data(w, data, 6);
    if (gguf_writer_close(w, &e)) {
        printf("%s\n", e.msg);
        exit(2);
    }
}

/* ---- round trip ---- */
typedef struct tspec {
    const char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
} tspec;

static const tspec rt_tensors[] = {
    {"t.f32", E0_TYPE_F32, 2, {7, 3}},       {"t.f16", E0_TYPE_F16, 1, {5}},
    {"t.q4_0", E0_TYPE_Q4_0, 2, {64, 2}},    {"t.q8_0", E0_TYPE_Q8_0, 3, {32, 3, 2}},
    {"t.q4_K", E0_TYPE_Q4_K, 2, {256, 2}},   {"t.q6_K", E0_TYPE_Q6_K, 1, {256}},
    {"t.bf16", E0_TYPE_BF16, 4, {3, 2, 2, 1}},
};
#define N_RT (sizeof rt_tensors / sizeof rt_tensors[0])

static uint64_t spec_nbytes(const tspec *t) {
    uint64_t rows = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) rows *= t->ne[d];
    return e0_row_size(t->type, (int64_t)t->ne[0]) * rows;
}

static const uint8_t a_u8[] = {0, 1, 255};
static const int8_t a_i8[] = {-128, 0, 127};
static const uint16_t a_u16[] = {0, 65535};
static const int16_t a_i16[] = {-32768, 32767, -1};
static const uint32_t a_u32[] = {0, 0xffffffffu, 7};
static const int32_t a_i32[] = {INT32_MIN, INT32_MAX};
static const float a_f32[] = {1.5f, -0.0f, 3e38f};
static const uint8_t a_bool[] = {1, 0, 1};
static const uint64_t a_u64[] = {UINT64_MAX, 0};
static const int64_t a_i64[] = {INT64_MIN, INT64_MAX, -5};
static const double a_f64[] = {1e300, -2.5};
static const struct {
    const char *key;
    enum gguf_vtype t;
    const void *p;
    uint64_t n;
} rt_arrays[] = {
    {"arr.u8", GGUF_U8, a_u8, 3},     {"arr.i8", GGUF_I8, a_i8, 3},       {"arr.u16", GGUF_U16, a_u16, 2},
    {"arr.i16", GGUF_I16, a_i16, 3},  {"arr.u32", GGUF_U32, a_u32, 3},    {"arr.i32", GGUF_I32, a_i32, 2},
    {"arr.f32", GGUF_F32, a_f32, 3},  {"arr.bool", GGUF_BOOL, a_bool, 3}, {"arr.u64", GGUF_U64, a_u64, 2},
    {"arr.i64", GGUF_I64, a_i64, 3},  {"arr.f64", GGUF_F64, a_f64, 2},    {"arr.empty", GGUF_U32, NULL, 0},
};
#define N_ARR (sizeof rt_arrays / sizeof rt_arrays[0])
static const char *const rt_strs[] = {"", "a", "h\xc3\xa9llo w\xc3\xb6rld", "<|endoftext|>"};

static uint8_t *rt_data[N_RT];

static int write_roundtrip(const char *path, e0_err *e) {
    gguf_writer *w = gguf_writer_open(path, e);
    if (!w) return -1;
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    int64_t i64 = INT64_MIN + 1;
    double f64 = 2.718281828459045;
    gguf_writer_kv(w, "k.u8", GGUF_U8, &u8);
    gguf_writer_kv(w, "k.i8", GGUF_I8, &i8);
    gguf_writer_kv(w, "k.u16", GGUF_U16, &u16);
    gguf_writer_kv(w, "k.i16", GGUF_I16, &i16);
    gguf_writer_kv_u32(w, "k.u32", 4000000000u);
    gguf_writer_kv_i32(w, "k.i32", -2000000000);
    gguf_writer_kv_f32(w, "k.f32", 0.125f);
    gguf_writer_kv_bool(w, "k.bool", true);
    gguf_writer_kv_str(w, "k.str", "hello gguf");
    gguf_writer_kv_u64(w, "k.u64", UINT64_MAX);
    gguf_writer_kv(w, "k.i64", GGUF_I64, &i64);
    gguf_writer_kv(w, "k.f64", GGUF_F64, &f64);
    gguf_writer_kv_u32(w, "general.alignment", 64);
    for (size_t i = 0; i < N_ARR; i++) gguf_writer_kv_arr(w, rt_arrays[i].key, rt_arrays[i].t, rt_arrays[i].p, rt_arrays[i].n);
    gguf_writer_kv_str_arr(w, "arr.str", rt_strs, 4);
    for (size_t i = 0; i < N_RT; i++)
        gguf_writer_tensor(w, rt_tensors[i].name, rt_tensors[i].n_dims, rt_tensors[i].ne, rt_tensors[i].type);
    /* Data in awkward pieces: 7-byte chunks for the first half, one call spanning the rest. */
    for (size_t i = 0; i < N_RT / 2; i++)
        for (uint64_t off = 0, n = spec_nbytes(&rt_tensors[i]); off < n; off += 7)
            gguf_writer_data(w, rt_data[i] + off, n - off < 7 ? n - off : 7);
    uint64_t rest = 0;
    for (size_t i = N_RT / 2; i < N_RT; i++) rest += spec_nbytes(&rt_tensors[i]);
    uint8_t *cat = malloc(rest), *p = cat;
    for (size_t i = N_RT / 2; i < N_RT; i++) {
        memcpy(p, rt_data[i], spec_nbytes(&rt_tensors[i]));
        p += spec_nbytes(&rt_tensors[i]);
    }
    gguf_writer_data(w, cat, rest);
    free(cat);
    return gguf_writer_close(w, e);
}

static void test_roundtrip(void) {
    for (size_t i = 0; i < N_RT; i++) {
        uint64_t n = spec_nbytes(&rt_tensors[i]);
        CHECK(n > 0);
        rt_data[i] = malloc(n);
        for (uint64_t j = 0; j < n; j++) rt_data[i][j] = (uint8_t)rng();
    }
    const char *path = tmp_path("roundtrip.gguf");
    e0_err e = {{0}};
    CHECKF(write_roundtrip(path, &e) == 0, "%s", e.msg);
    gguf_file *f = gguf_open(path, &e);
    CHECKF(f, "%s", e.msg);
    if (!f) return;
    CHECK(f->version == 3 && f->alignment == 64 && f->data_offset % 64 == 0);
    CHECK(f->n_kv == 13 + N_ARR + 1 && f->n_tensors == N_RT);
    check_consistent(f);

    int64_t i64;
    uint32_t u32;
    float f32;
    bool b;
    const gguf_string *s;
    CHECK(gguf_get_i64(f, "k.u8", &i64, &e) == 1 && i64 == 200);
    CHECK(gguf_get_i64(f, "k.i8", &i64, &e) == 1 && i64 == -100);
    CHECK(gguf_get_i64(f, "k.u16", &i64, &e) == 1 && i64 == 60000);
    CHECK(gguf_get_i64(f, "k.i16", &i64, &e) == 1 && i64 == -30000);
    CHECK(gguf_get_u32(f, "k.u32", &u32, &e) == 1 && u32 == 4000000000u);
    CHECK(gguf_get_i64(f, "k.i32", &i64, &e) == 1 && i64 == -2000000000);
    CHECK(gguf_get_f32(f, "k.f32", &f32, &e) == 1 && f32 == 0.125f);
    CHECK(gguf_get_bool(f, "k.bool", &b, &e) == 1 && b);
    CHECK(gguf_get_str(f, "k.str", &s, &e) == 1 && s->len == 10 && !strcmp(s->s, "hello gguf"));
    CHECK(gguf_find(f, "k.u64")->type == GGUF_U64 && gguf_find(f, "k.u64")->v.u64 == UINT64_MAX);
    CHECK(gguf_get_i64(f, "k.i64", &i64, &e) == 1 && i64 == INT64_MIN + 1);
    CHECK(gguf_find(f, "k.f64")->type == GGUF_F64 && gguf_find(f, "k.f64")->v.f64 == 2.718281828459045);
    CHECK(gguf_get_f32(f, "k.f64", &f32, &e) == 1 && fabsf(f32 - 2.7182817f) < 1e-6f);
    /* Absent, wrong type, out of range. */
    CHECK(gguf_get_i64(f, "no.such", &i64, &e) == 0 && gguf_find(f, "no.such") == NULL);
    e.msg[0] = 0;
    CHECK(gguf_get_i64(f, "k.str", &i64, &e) == -1 && strstr(e.msg, "k.str"));
    CHECK(gguf_get_i64(f, "k.u64", &i64, &e) == -1 && strstr(e.msg, "out of range"));
    CHECK(gguf_get_u32(f, "k.i32", &u32, &e) == -1 && strstr(e.msg, "out of range"));
    CHECK(gguf_get_u32(f, "k.u64", &u32, &e) == -1);
    CHECK(gguf_get_f32(f, "arr.f64", &f32, &e) == -1 && strstr(e.msg, "array"));
    CHECK(gguf_get_bool(f, "k.u8", &b, &e) == -1);
    CHECK(gguf_get_str(f, "k.bool", &s, &e) == -1);

    for (size_t i = 0; i < N_ARR; i++) {
        const void *data;
        uint64_t n;
        CHECKF(gguf_get_arr(f, rt_arrays[i].key, rt_arrays[i].t, &data, &n, &e) == 1, "%s", rt_arrays[i].key);
        CHECK(n == rt_arrays[i].n);
        size_t esz = rt_arrays[i].t == GGUF_U8 || rt_arrays[i].t == GGUF_I8 || rt_arrays[i].t == GGUF_BOOL ? 1
                     : rt_arrays[i].t == GGUF_U16 || rt_arrays[i].t == GGUF_I16                         ? 2
                     : rt_arrays[i].t == GGUF_U64 || rt_arrays[i].t == GGUF_I64 || rt_arrays[i].t == GGUF_F64 ? 8
                                                                                                          : 4;
        if (n == rt_arrays[i].n && n) CHECKF(!memcmp(data, rt_arrays[i].p, n * esz), "%s", rt_arrays[i].key);
        CHECK(gguf_get_arr(f, rt_arrays[i].key, GGUF_STR, &data, &n, &e) == -1);
    }
    const void *sdata;
    uint64_t sn;
    CHECK(gguf_get_arr(f, "arr.str", GGUF_STR, &sdata, &sn, &e) == 1 && sn == 4);
    for (uint64_t i = 0; i < sn && sn == 4; i++) {
        const gguf_string *gs = &((const gguf_string *)sdata)[i];
        CHECK(gs->len == strlen(rt_strs[i]) && !strcmp(gs->s, rt_strs[i]));
    }

    uint64_t expect_off = f->data_offset;
    for (size_t i = 0; i < N_RT; i++) {
        const tspec *ts = &rt_tensors[i];
        const gguf_tensor *t = gguf_find_tensor(f, ts->name);
        CHECKF(t == &f->tensors[i], "%s", ts->name);
        if (!t) continue;
        CHECK(t->type == ts->type && t->n_dims == ts->n_dims && t->nbytes == spec_nbytes(ts));
        for (uint32_t d = 0; d < 4; d++) CHECK(t->ne[d] == (d < ts->n_dims ? ts->ne[d] : 1));
        CHECK(t->offset == expect_off); /* contiguous with padding, as llama.cpp lays it out */
        expect_off += (t->nbytes + 63) / 64 * 64;
        uint8_t *buf = malloc(t->nbytes);
        CHECK(gguf_read(f, t->offset, buf, t->nbytes, &e) == 0 && !memcmp(buf, rt_data[i], t->nbytes));
        free(buf);
    }
    CHECK(expect_off == f->file_size);
    CHECK(gguf_find_tensor(f, "t.missing") == NULL);
    uint8_t one;
    CHECK(gguf_read(f, f->file_size, &one, 1, &e) == -1 && strstr(e.msg, "outside"));
    CHECK(gguf_read(f, UINT64_MAX, &one, 2, &e) == -1);
    CHECK(gguf_read(f, f->file_size, NULL, 0, &e) == 0);

    /* Copy every kv and tensor into a second file: it must come out byte-identical. */
    const char *copy = tmp_path("roundtrip-copy.gguf");
    gguf_writer *w = gguf_writer_open(copy, &e);
    CHECK(w != NULL);
    if (w) {
        for (uint64_t i = 0; i < f->n_kv; i++) CHECK(gguf_writer_kv_copy(w, &f->kv[i]) == 0);
        for (uint64_t i = 0; i < f->n_tensors; i++)
            CHECK(gguf_writer_tensor(w, f->tensors[i].name, f->tensors[i].n_dims, f->tensors[i].ne, f->tensors[i].type) == 0);
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            uint8_t *buf = malloc(f->tensors[i].nbytes);
            CHECK(gguf_read(f, f->tensors[i].offset, buf, f->tensors[i].nbytes, &e) == 0);
            CHECK(gguf_writer_data(w, buf, f->tensors[i].nbytes) == 0);
            free(buf);
        }
        CHECKF(gguf_writer_close(w, &e) == 0, "%s", e.msg);
        size_t n1, n2;
        uint8_t *b1 = t_read_file(path, &n1), *b2 = t_read_file(copy, &n2);
        CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1));
        free(b1);
        free(b2);
    }
    gguf_close(f);
    for (size_t i = 0; i < N_RT; i++) free(rt_data[i]);
}

/* ---- the real files ---- */
static void test_real_files(void) {
    static const struct {
        const char *file, *arch;
        uint64_t n_tensors, n_kv, n_tokens;
    } files[] = {
        {"golden/llama-dense.gguf", "llama", 21, 25, 512},
        {"golden/llama-moe.gguf", "llama", 23, 27, 512},
        {"golden/llama-tied.gguf", "llama", 20, 25, 512},
        {"golden/qwen2-dense.gguf", "qwen2", 27, 25, 512},
        {"golden/qwen2moe.gguf", "qwen2moe", 37, 29, 512},
        {"golden/qwen3-dense.gguf", "qwen3", 25, 25, 512},
        {"golden/qwen3moe.gguf", "qwen3moe", 27, 28, 512},
        {"golden/stories260K.gguf", "llama", 48, 19, 512},
        {"golden/stories260K-moe4.gguf", "llama", 53, 21, 512},
        {"tokenizer/ggml-vocab-deepseek-coder.gguf", "llama", 0, 25, 32256},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "gpt2", 0, 16, 50257},
        {"tokenizer/ggml-vocab-llama-bpe.gguf", "llama", 0, 20, 128256},
        {"tokenizer/ggml-vocab-llama-spm.gguf", "llama", 0, 22, 32000},
        {"tokenizer/ggml-vocab-qwen2.gguf", "qwen2", 0, 20, 151936},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", t_shared(), files[i].file);
        e0_err e = {{0}};
        gguf_file *f = gguf_open(path, &e);
        CHECKF(f, "%s", e.msg);
        if (!f) continue;
        CHECK(gguf_test_open_alloc_bytes() <= alloc_limit(f->file_size));
        check_consistent(f);
        const gguf_string *arch;
        CHECKF(gguf_get_str(f, "general.architecture", &arch, &e) == 1 && !strcmp(arch->s, files[i].arch), "%s", path);
        CHECKF(f->n_tensors == files[i].n_tensors && f->n_kv == files[i].n_kv, "%s: %" PRIu64 " tensors, %" PRIu64 " kvs",
               path, f->n_tensors, f->n_kv);
        const void *toks;
        uint64_t nt = 0;
        CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STR, &toks, &nt, &e) == 1 && nt == files[i].n_tokens);
        /* llama.cpp lays tensors out contiguously with padding, starting at the data section. */
        uint64_t end = f->data_offset;
        for (uint64_t k = 0; k < f->n_tensors; k++) {
            CHECKF(f->tensors[k].offset == end, "%s: %s", path, f->tensors[k].name);
            end = f->tensors[k].offset + (f->tensors[k].nbytes + f->alignment - 1) / f->alignment * f->alignment;
        }
        if (f->n_tensors) CHECK(end == f->file_size);
        gguf_close(f);
    }
    /* stories260K: a known tensor and its data. */
    char path[700];
    snprintf(path, sizeof path, "%s/golden/stories260K.gguf", t_shared());
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    CHECK(f != NULL);
    if (!f) return;
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    CHECK(t && t->type == E0_TYPE_F32 && t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 512 && t->nbytes == 64 * 512 * 4);
    if (t) {
        float *w = malloc(t->nbytes);
        CHECK(gguf_read(f, t->offset, w, t->nbytes, &e) == 0);
        double sum = 0;
        int finite = 1;
        for (uint64_t i = 0; i < t->nelements; i++) {
            finite &= isfinite(w[i]) && fabsf(w[i]) < 100;
            sum += fabs(w[i]);
        }
        CHECK(finite && sum > 1);
        free(w);
    }
    uint32_t ctx = 0;
    CHECK(gguf_get_u32(f, "llama.block_count", &ctx, &e) == 1 && ctx == 5);
    gguf_close(f);
}

/* ---- writer misuse and write errors ---- */
static void expect_close_fails(gguf_writer *w, const char *path, const char *what) {
    e0_err e = {{0}};
    CHECKF(gguf_writer_close(w, &e) == -1 && strstr(e.msg, what), "wanted '%s', got '%s'", what, e.msg);
    CHECKF(access(path, F_OK) != 0, "%s exists after a failed write", path);
    char partial[800];
    snprintf(partial, sizeof partial, "%s.partial", path);
    CHECK(access(partial, F_OK) != 0);
}

static void test_writer_errors(void) {
    const char *path = tmp_path("bad-writer.gguf");
    uint64_t ne[] = {32, 2}, ne_odd[] = {16};
    e0_err e;
    unlink(path);
    gguf_writer *w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_kv_u32(w, "a", 1) == 0 && gguf_writer_kv_u32(w, "a", 2) == -1);
    CHECK(strstr(gguf_writer_error(w), "duplicate key"));
    CHECK(gguf_writer_kv_u32(w, "b", 1) == -1); /* sticky */
    expect_close_fails(w, path, "duplicate key");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_Q8_0) == 0 && gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_F32) == -1);
    expect_close_fails(w, path, "duplicate tensor");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123", 2, ne, 0) == -1);
    expect_close_fails(w, path, "1..63");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_tensor(w, "x", 1, ne_odd, E0_TYPE_Q4_0) == -1);
    expect_close_fails(w, path, "block size");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_tensor(w, "x", 1, ne, 4) == -1);
    expect_close_fails(w, path, "unsupported tensor type 4");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_kv_u32(w, "general.alignment", 13) == -1);
    expect_close_fails(w, path, "power of two");

    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_kv_u64(w, "general.alignment", 64) == -1);
    expect_close_fails(w, path, "u32");

    uint8_t data[256] = {0};
    w = gguf_writer_open(path, &e); /* too little data */
    gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_F32);
    CHECK(gguf_writer_data(w, data, 100) == 0);
    expect_close_fails(w, path, "got 100 of its 256 bytes");

    w = gguf_writer_open(path, &e); /* too much data */
    gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_F32);
    CHECK(gguf_writer_data(w, data, 200) == 0 && gguf_writer_data(w, data, 57) == -1);
    expect_close_fails(w, path, "beyond");

    w = gguf_writer_open(path, &e); /* kv and tensor after data */
    gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_F32);
    gguf_writer_data(w, data, 10);
    CHECK(gguf_writer_kv_u32(w, "late", 1) == -1);
    expect_close_fails(w, path, "after tensor data");

    w = gguf_writer_open(path, &e);
    gguf_writer_tensor(w, "x", 2, ne, E0_TYPE_F32);
    gguf_writer_data(w, data, 10);
    CHECK(gguf_writer_tensor(w, "y", 2, ne, E0_TYPE_F32) == -1);
    expect_close_fails(w, path, "after tensor data");

    CHECK(gguf_writer_open("/nonexistent-dir/x.gguf", &e) == NULL && strstr(e.msg, "/nonexistent-dir/x.gguf.partial"));

    /* A write error (EFBIG from a file size limit, as ENOSPC would be) is reported, not ignored. */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        uint64_t big[] = {1024, 1024};
        float *row = calloc(1024, sizeof *row);
        w = gguf_writer_open(path, &e);
        gguf_writer_tensor(w, "big", 2, big, E0_TYPE_F32);
        int rc = 0;
        for (int i = 0; i < 1024 && rc == 0; i++) rc = gguf_writer_data(w, row, 4096);
        CHECK(rc == -1 && strstr(gguf_writer_error(w), "write failed"));
        expect_close_fails(w, path, "File too large");
        setrlimit(RLIMIT_FSIZE, &old);
        free(row);
    }
    signal(SIGXFSZ, SIG_DFL);

    /* A file with no tensors and no kvs is still a valid GGUF. */
    w = gguf_writer_open(path, &e);
    CHECK(gguf_writer_close(w, &e) == 0);
    gguf_file *f = gguf_open(path, &e);
    CHECK(f && f->n_kv == 0 && f->n_tensors == 0);
    gguf_close(f);
}

/* Data larger than the 1 MiB write buffer, in pieces that straddle it, comes back intact. */
static void test_writer_large(void) {
    const char *path = tmp_path("large.gguf");
    uint64_t ne[] = {1024, 768}, ne2[] = {32, 1};
    size_t n = 1024 * 768 * 4;
    uint8_t *data = malloc(n), *back = malloc(n);
    for (size_t i = 0; i < n; i++) data[i] = (uint8_t)rng();
    e0_err e = {{0}};
    gguf_writer *w = gguf_writer_open(path, &e);
    CHECK(w && gguf_writer_tensor(w, "big", 2, ne, E0_TYPE_F32) == 0 && gguf_writer_tensor(w, "small", 2, ne2, E0_TYPE_Q8_0) == 0);
    CHECK(gguf_writer_data(w, data, 100) == 0);
    CHECK(gguf_writer_data(w, data + 100, 5 * n / 6) == 0);
    CHECK(gguf_writer_data(w, data + 100 + 5 * n / 6, n - 100 - 5 * n / 6) == 0);
    CHECK(gguf_writer_data(w, data, 34) == 0);
    CHECKF(gguf_writer_close(w, &e) == 0, "%s", e.msg);
    gguf_file *f = gguf_open(path, &e);
    CHECKF(f, "%s", e.msg);
    if (f) {
        const gguf_tensor *t = gguf_find_tensor(f, "big"), *s = gguf_find_tensor(f, "small");
        CHECK(t && t->nbytes == n && gguf_read(f, t->offset, back, n, &e) == 0 && !memcmp(back, data, n));
        CHECK(s && s->nbytes == 34 && gguf_read(f, s->offset, back, 34, &e) == 0 && !memcmp(back, data, 34));
        gguf_close(f);
    }
    unlink(path);
    free(data);
    free(back);
}

/* ---- open errors that are not about the content ---- */
static void test_open_errors(void) {
    e0_err e;
    const char *missing = tmp_path("does-not-exist.gguf");
    CHECK(gguf_open(missing, &e) == NULL && strstr(e.msg, missing) && strstr(e.msg, "No such file"));
    CHECK(gguf_open(dir, &e) == NULL && strstr(e.msg, dir) && strstr(e.msg, "directory"));
    const char *empty = tmp_path("empty.gguf");
    write_bytes(empty, "", 0);
    CHECK(gguf_open(empty, &e) == NULL && strstr(e.msg, "empty file"));
    const char *fifo = tmp_path("fifo.gguf");
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) CHECK(gguf_open(fifo, &e) == NULL && strstr(e.msg, "not a regular file"));
    unlink(fifo);
    if (geteuid() != 0) { /* root reads anything */
        const char *locked = tmp_path("locked.gguf");
        write_small(locked);
        chmod(locked, 0);
        CHECK(gguf_open(locked, &e) == NULL && strstr(e.msg, "Permission denied"));
        chmod(locked, 0600);
    }

    /* The file shrinks after open: reading tensor data fails clearly. */
    const char *shrink = tmp_path("shrink.gguf");
    write_small(shrink);
    gguf_file *f = gguf_open(shrink, &e);
    CHECK(f != NULL);
    if (!f) return;
    const gguf_tensor *t = gguf_find_tensor(f, "c.weight");
    CHECK(truncate(shrink, (off_t)f->data_offset) == 0);
    uint8_t buf[64];
    CHECK(gguf_read(f, t->offset, buf, t->nbytes, &e) == -1 && strstr(e.msg, "unexpected end of file"));
    gguf_close(f);
}

/* ---- every truncation ---- */
static void test_truncation(void) {
    write_small(small_path());
    size_t n;
    uint8_t *full = t_read_file(small_path(), &n);
    CHECK(full && n > 100);
    for (size_t len = 0; len <= n; len++) {
        const char *path = mem_file("trunc.gguf", full, len);
        int opened = open_any(path, len);
        CHECKF(opened == (len == n), "prefix of %zu of %zu bytes", len, n);
    }
    free(full);
}

/* ---- corruption of every structural field ---- */
typedef struct field {
    size_t off, width;
} field;

/* Walk a valid file (written by write_small) and record where every count, length, type,
 * dim and offset field lies. Trusts the file; only used on our own output. */
static size_t walk_fields(const uint8_t *b, field *out, size_t max) {
    size_t n = 0, p = 4;
#define FIELD(w) (n < max ? (out[n++] = (field){p, (w)}) : (field){0, 0}, p += (w))
    uint64_t nt, nkv, len;
    FIELD(4); /* version */
    memcpy(&nt, b + p, 8);
    FIELD(8);
    memcpy(&nkv, b + p, 8);
    FIELD(8);
    for (uint64_t i = 0; i < nkv; i++) {
        memcpy(&len, b + p, 8);
        FIELD(8);
        p += len;
        uint32_t type;
        memcpy(&type, b + p, 4);
        FIELD(4);
        if (type == GGUF_STR) {
            memcpy(&len, b + p, 8);
            FIELD(8);
            p += len;
        } else if (type == GGUF_ARR) {
            uint32_t et;
            uint64_t cnt;
            memcpy(&et, b + p, 4);
            FIELD(4);
            memcpy(&cnt, b + p, 8);
            FIELD(8);
            for (uint64_t k = 0; k < cnt; k++) {
                if (et == GGUF_STR) {
                    memcpy(&len, b + p, 8);
                    FIELD(8);
                    p += len;
                } else {
                    size_t w = et == GGUF_I32 ? 4 : 1;
                    FIELD(w);
                }
            }
        } else {
            size_t w = type == GGUF_BOOL ? 1 : 4; /* write_small uses u32, bool, f32 scalars */
            FIELD(w);
        }
    }
    for (uint64_t i = 0; i < nt; i++) {
        memcpy(&len, b + p, 8);
        FIELD(8);
        p += len;
        uint32_t nd;
        memcpy(&nd, b + p, 4);
        FIELD(4);
        for (uint32_t d = 0; d < nd; d++) FIELD(8);
        FIELD(4); /* type */
        FIELD(8); /* offset */
    }
#undef FIELD
    return n;
}

static void test_corruption(void) {
    write_small(small_path());
    size_t n;
    uint8_t *full = t_read_file(small_path(), &n), *bad = malloc(n);
    field fields[256];
    size_t nf = walk_fields(full, fields, 256);
    CHECKF(nf > 40 && nf < 256, "%zu fields", nf);
    const uint64_t values[] = {0, 1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 63, 64, 255, 256, 0x7fffffffull, 0xffffffffull,
                               1ull << 32, 1ull << 61, (1ull << 63) - 1, 1ull << 63, UINT64_MAX, n - 1, n, n + 1,
                               UINT64_MAX / 14 + 1, UINT64_MAX / 33 + 1};
    int opened = 0, total = 0;
    for (size_t i = 0; i < nf; i++) {
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            memcpy(bad, full, n);
            memcpy(bad + fields[i].off, &values[v], fields[i].width); /* little-endian: low bytes */
            opened += open_any(mem_file("corrupt.gguf", bad, n), n);
            total++;
        }
    }
    /* And every single byte, set to a few values. */
    const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < sizeof bytes; v++) {
            if (full[i] == bytes[v]) continue;
            memcpy(bad, full, n);
            bad[i] = bytes[v];
            opened += open_any(mem_file("corrupt.gguf", bad, n), n);
            total++;
        }
    }
    /* Most corruptions must be caught, and some (e.g. a value inside an array) must not be. */
    CHECKF(opened > 0 && opened < total / 2, "%d of %d corrupted files opened", opened, total);
    free(full);
    free(bad);
}

/* ---- specific malformed files, built byte by byte ---- */
typedef struct bb {
    uint8_t p[4096];
    size_t n;
} bb;

static void put(bb *b, const void *p, size_t n) {
    if (b->n + n > sizeof b->p) {
        printf("test file builder overflow\n");
        exit(2);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void u32_(bb *b, uint32_t v) { put(b, &v, 4); }
static void u64_(bb *b, uint64_t v) { put(b, &v, 8); }
static void str_(bb *b, const char *s) {
    u64_(b, strlen(s));
    put(b, s, strlen(s));
}
static void hdr(bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    put(b, "GGUF", 4);
    u32_(b, version);
    u64_(b, n_tensors);
    u64_(b, n_kv);
}
static void kv_u32(bb *b, const char *key, uint32_t v) {
    str_(b, key);
    u32_(b, GGUF_U32);
    u32_(b, v);
}
/* A tensor info with ne = {ne0, ne1} (n_dims given; extra dims come from ne1). */
static void tinfo(bb *b, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t off) {
    str_(b, name);
    u32_(b, n_dims);
    for (uint32_t d = 0; d < n_dims && d < 8; d++) u64_(b, d == 0 ? ne0 : ne1);
    u32_(b, type);
    u64_(b, off);
}
/* Junk bytes, so that counts stay plausible and the case reaches the field under test. */
static void filler(bb *b, size_t n) {
    for (size_t i = 0; i < n; i++) b->p[b->n++] = 0x5a;
}
/* Pad to `align` and append `n` data bytes. */
static void data_(bb *b, size_t align, size_t n) {
    while (b->n % align) b->p[b->n++] = 0;
    for (size_t i = 0; i < n; i++) b->p[b->n++] = (uint8_t)i;
}

static void expect(bb *b, int ok, const char *what, int line) {
    const char *path = mem_file("case.gguf", b->p, b->n);
    e0_err e = {{0}};
    gguf_file *f = gguf_open(path, &e);
    CHECKF(gguf_test_open_alloc_bytes() <= alloc_limit(b->n), "line %d: allocated %" PRIu64, line,
           gguf_test_open_alloc_bytes());
    if (ok) {
        CHECKF(f != NULL, "line %d: %s", line, e.msg);
        if (f) check_consistent(f);
    } else {
        CHECKF(f == NULL && strstr(e.msg, path) && strstr(e.msg, what), "line %d: wanted '%s', got '%s'", line, what, e.msg);
    }
    gguf_close(f);
}
#define FAILS(what) expect(&b, 0, what, __LINE__)
#define OPENS() expect(&b, 1, "", __LINE__)

/* One valid F32 tensor "w" of 8 elements, data at offset 0 (32 bytes). */
static void one_tensor(bb *b, uint32_t n_dims, uint64_t ne0, uint64_t ne1, uint32_t type, uint64_t off) {
    hdr(b, 3, 1, 0);
    tinfo(b, "w", n_dims, ne0, ne1, type, off);
    data_(b, 32, 64);
}

static void test_malformed_header_and_kv(void) {
    bb b;
    hdr(&b, 3, 0, 1);
    kv_u32(&b, "a", 1);
    OPENS();
    b.p[3] = 'X';
    FAILS("bad magic");
    hdr(&b, 3, 0, 0);
    b.n = 10;
    FAILS("too small");
    for (uint32_t v = 0; v <= 5; v++) {
        hdr(&b, v, 0, 1);
        kv_u32(&b, "a", 1);
        if (v == 2 || v == 3) OPENS();
        else {
            char want[64];
            snprintf(want, sizeof want, "unsupported GGUF version %u", v);
            FAILS(want);
        }
    }
    hdr(&b, 3, UINT64_MAX, 0);
    FAILS("tensor count");
    hdr(&b, 3, 0, UINT64_MAX);
    FAILS("kv count");
    /* Counts whose product with an entry size (file minimum or in-memory struct) wraps. */
    const uint64_t wraps[] = {UINT64_MAX / 14 + 1, UINT64_MAX / 33 + 1, UINT64_MAX / sizeof(gguf_kv) + 1,
                              UINT64_MAX / sizeof(gguf_tensor) + 1, 1ull << 60};
    for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++) {
        hdr(&b, 3, 0, wraps[i]);
        kv_u32(&b, "a", 1);
        FAILS("kv count");
        hdr(&b, 3, wraps[i], 0);
        tinfo(&b, "w", 1, 8, 1, 0, 0);
        FAILS("tensor count");
    }
    hdr(&b, 3, 0, 1); /* key length 2^64-1 / past the end */
    u64_(&b, UINT64_MAX);
    filler(&b, 64);
    FAILS("key length");
    hdr(&b, 3, 0, 1);
    u64_(&b, 1000);
    put(&b, "abcdefgh", 8);
    FAILS("key length 1000 exceeds");
    hdr(&b, 3, 0, 1); /* string value length 2^64-1 / past the end */
    str_(&b, "s");
    u32_(&b, GGUF_STR);
    u64_(&b, UINT64_MAX);
    FAILS("string value length");
    hdr(&b, 3, 0, 1);
    str_(&b, "s");
    u32_(&b, GGUF_STR);
    u64_(&b, 20);
    put(&b, "short", 5);
    FAILS("exceeds");
    hdr(&b, 3, 0, 1); /* empty key, NUL in key */
    str_(&b, "");
    u32_(&b, GGUF_U8);
    put(&b, "x", 1);
    filler(&b, 8);
    FAILS("empty key");
    hdr(&b, 3, 0, 1);
    u64_(&b, 3);
    put(&b, "a\0b", 3);
    u32_(&b, GGUF_U8);
    put(&b, "x", 1);
    FAILS("NUL");
    const uint32_t bad_types[] = {13, 14, 255, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        hdr(&b, 3, 0, 1);
        str_(&b, "t");
        u32_(&b, bad_types[i]);
        u64_(&b, 0);
        FAILS("value type");
    }
    hdr(&b, 3, 0, 1); /* bool 2 */
    str_(&b, "b");
    u32_(&b, GGUF_BOOL);
    put(&b, "\2", 1);
    FAILS("bool value 2");
    hdr(&b, 3, 0, 1); /* bool array element 2 */
    str_(&b, "b");
    u32_(&b, GGUF_ARR);
    u32_(&b, GGUF_BOOL);
    u64_(&b, 3);
    put(&b, "\1\0\2", 3);
    FAILS("bool array element 2");
    for (size_t i = 0; i < 4; i++) { /* array element type out of range */
        hdr(&b, 3, 0, 1);
        str_(&b, "a");
        u32_(&b, GGUF_ARR);
        u32_(&b, bad_types[i]);
        u64_(&b, 0);
        FAILS("element type");
    }
    hdr(&b, 3, 0, 1); /* array of arrays */
    str_(&b, "a");
    u32_(&b, GGUF_ARR);
    u32_(&b, GGUF_ARR);
    u64_(&b, 1);
    u32_(&b, GGUF_U8);
    u64_(&b, 0);
    FAILS("array of arrays");
    /* count x element size wraps to a small number */
    const struct { uint32_t et; uint64_t n; } wrapping[] = {{GGUF_U64, 1ull << 61}, {GGUF_U16, 1ull << 63},
                                                            {GGUF_U32, (1ull << 62) + 1}, {GGUF_U8, UINT64_MAX}};
    for (size_t i = 0; i < 4; i++) {
        hdr(&b, 3, 0, 1);
        str_(&b, "a");
        u32_(&b, GGUF_ARR);
        u32_(&b, wrapping[i].et);
        u64_(&b, wrapping[i].n);
        u64_(&b, 0);
        FAILS("array of");
    }
    hdr(&b, 3, 0, 1); /* string array of 2^61 */
    str_(&b, "a");
    u32_(&b, GGUF_ARR);
    u32_(&b, GGUF_STR);
    u64_(&b, 1ull << 61);
    u64_(&b, 0);
    FAILS("string array count");
    hdr(&b, 3, 0, 1); /* a string array element past the end */
    str_(&b, "a");
    u32_(&b, GGUF_ARR);
    u32_(&b, GGUF_STR);
    u64_(&b, 2);
    str_(&b, "ok");
    u64_(&b, 100);
    FAILS("exceeds");
    hdr(&b, 3, 0, 2);
    kv_u32(&b, "dup", 1);
    kv_u32(&b, "dup", 2);
    FAILS("duplicate key 'dup'");
    const uint32_t aligns[] = {0, 13, 3, 0x80000001u};
    for (size_t i = 0; i < 4; i++) {
        hdr(&b, 3, 0, 1);
        kv_u32(&b, "general.alignment", aligns[i]);
        FAILS("power of two");
    }
    hdr(&b, 3, 0, 1);
    str_(&b, "general.alignment");
    u32_(&b, GGUF_U64);
    u64_(&b, 64);
    FAILS("general.alignment has type u64");
}

static void test_malformed_tensors(void) {
    bb b;
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, 0);
    OPENS();
    one_tensor(&b, 2, 8, 2, E0_TYPE_F32, 0);
    OPENS();
    const uint32_t bad_dims[] = {0, 5, 255, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        one_tensor(&b, bad_dims[i], 8, 1, E0_TYPE_F32, 0);
        FAILS("n_dims");
    }
    one_tensor(&b, 2, 0, 1, E0_TYPE_F32, 0);
    FAILS("dim 0 is 0");
    one_tensor(&b, 2, 8, 0, E0_TYPE_F32, 0);
    FAILS("dim 1 is 0");
    one_tensor(&b, 2, 8, UINT64_MAX, E0_TYPE_F32, 0);
    FAILS("dim 1 is");
    one_tensor(&b, 2, 1ull << 32, 1ull << 32, E0_TYPE_F32, 0);
    FAILS("element count overflows");
    one_tensor(&b, 4, 1ull << 16, 1ull << 16, E0_TYPE_F32, 0);
    FAILS("element count overflows");
    one_tensor(&b, 2, 1ull << 31, 1ull << 31, E0_TYPE_F32, 0); /* 2^62 elements fit; 2^64 bytes do not */
    FAILS("byte size overflows");
    one_tensor(&b, 1, 1ull << 62, 1, E0_TYPE_F32, 0); /* a single row of 2^64 bytes */
    FAILS("byte size overflows");
    one_tensor(&b, 1, (1ull << 63) - 1, 1, E0_TYPE_F16, 0); /* 2^64 - 2 bytes: fits, but not in the file */
    FAILS("outside the file");
    one_tensor(&b, 2, 1ull << 30, 1ull << 31, E0_TYPE_F32, 0); /* 2^63 bytes: fits, but not in the file */
    FAILS("outside the file");
    one_tensor(&b, 1, 8, 1, 255, 0);
    FAILS("tensor 'w': unsupported tensor type 255");
    one_tensor(&b, 1, 8, 1, 4, 0);
    FAILS("tensor 'w': unsupported tensor type 4");
    one_tensor(&b, 1, 8, 1, 5, 0);
    FAILS("tensor 'w': unsupported tensor type 5");
    one_tensor(&b, 1, 256, 1, E0_TYPE_Q8_K, 0); /* known, but not a weight type */
    FAILS("unsupported tensor type 15");
    one_tensor(&b, 1, 256, 1, E0_TYPE_COUNT, 0);
    FAILS("unsupported tensor type");
    one_tensor(&b, 1, 16, 1, E0_TYPE_Q4_0, 0);
    FAILS("block size");
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, UINT64_MAX);
    FAILS("not a multiple of the alignment");
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, UINT64_MAX - 31);
    FAILS("outside the file");
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, 4);
    FAILS("not a multiple of the alignment");
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, 64);
    FAILS("outside the file");
    one_tensor(&b, 1, 8, 1, E0_TYPE_F32, 32);
    OPENS(); /* 64 data bytes: offset 32 + 32 bytes ends exactly at the end */

    const char *n63 = "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123";
    const char *n64 = "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234";
    hdr(&b, 3, 1, 0);
    tinfo(&b, n63, 1, 8, 1, E0_TYPE_F32, 0);
    data_(&b, 32, 32);
    OPENS();
    hdr(&b, 3, 1, 0);
    tinfo(&b, n64, 1, 8, 1, E0_TYPE_F32, 0);
    data_(&b, 32, 32);
    FAILS("too long");
    hdr(&b, 3, 1, 0);
    u64_(&b, UINT64_MAX);
    filler(&b, 64);
    FAILS("too long");
    hdr(&b, 3, 1, 0);
    tinfo(&b, "", 1, 8, 1, E0_TYPE_F32, 0);
    data_(&b, 32, 32);
    FAILS("empty name");

    hdr(&b, 3, 2, 0);
    tinfo(&b, "w", 1, 8, 1, E0_TYPE_F32, 0);
    tinfo(&b, "w", 1, 8, 1, E0_TYPE_F32, 32);
    data_(&b, 32, 64);
    FAILS("duplicate tensor name 'w'");
    hdr(&b, 3, 2, 0);
    tinfo(&b, "w1", 1, 16, 1, E0_TYPE_F32, 0);
    tinfo(&b, "w2", 1, 8, 1, E0_TYPE_F32, 32);
    data_(&b, 32, 128);
    FAILS("overlap");

    /* A custom alignment moves the data section and constrains offsets. */
    hdr(&b, 3, 1, 1);
    kv_u32(&b, "general.alignment", 256);
    tinfo(&b, "w", 1, 8, 1, E0_TYPE_F32, 0);
    data_(&b, 256, 256);
    OPENS();
    b.n -= 1; /* the padding after the last tensor is part of the file */
    FAILS("outside the file");
    hdr(&b, 3, 1, 1);
    kv_u32(&b, "general.alignment", 256);
    tinfo(&b, "w", 1, 8, 1, E0_TYPE_F32, 32);
    data_(&b, 256, 512);
    FAILS("not a multiple of the alignment 256");
    hdr(&b, 3, 1, 1); /* data section start (rounded up to 256) lies past the end */
    kv_u32(&b, "general.alignment", 256);
    tinfo(&b, "w", 1, 8, 1, E0_TYPE_F32, 0);
    FAILS("outside the file");
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/test-gguf", t_build());
    mkdir(t_build(), 0755);
    mkdir(dir, 0755);
    RUN(test_roundtrip);
    /* the golden models and vocabularies (the list in test_real_files) */
    if (t_need_shared("golden", "tokenizer", "golden/stories260K.gguf", NULL)) RUN(test_real_files);
    RUN(test_writer_errors);
    RUN(test_writer_large);
    RUN(test_open_errors);
    RUN(test_truncation);
    RUN(test_corruption);
    RUN(test_malformed_header_and_kv);
    RUN(test_malformed_tensors);
    return T_DONE();
}
