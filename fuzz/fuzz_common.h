/* fuzz_common.h — what the libFuzzer targets in fuzz/ share: the failure macro, where the shared
 * data lives, the list of chat templates (sorted, so a selector byte means the same template in
 * the fuzzer and in the seed builder) and reading small files.
 *
 * A target is `fuzz_NAME_init()` (once) + `fuzz_NAME_one(data, size)` (per input). Its libFuzzer
 * entry points (FUZZ_ENTRY_POINTS(NAME), at the end of its file) are compiled only without
 * FUZZ_NO_MAIN, so tests/test_fuzz_regress.c can include every target into one binary and
 * replay the committed inputs of tests/fuzz-regress/ with the same code under the ordinary (gcc)
 * build. */
#ifndef E0_FUZZ_COMMON_H
#define E0_FUZZ_COMMON_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "synth/synth.h"

/* A property the engine promises does not hold: abort (libFuzzer records the input). The
 * regression test overrides it to count a failed check instead. */
#ifndef FUZZ_FAIL
#define FUZZ_FAIL(...) (fprintf(stderr, "fuzz check failed: " __VA_ARGS__), fprintf(stderr, "\n"), abort())
#endif
#define FUZZ_CHECK(c, ...)                       \
    do {                                         \
        if (!(c)) FUZZ_FAIL(__VA_ARGS__);        \
    } while (0)

/* ../shared, or $E0_SHARED (as tests/run.sh). */
static inline const char *fuzz_shared(void) {
    const char *s = getenv("E0_SHARED");
    return s && *s ? s : "../shared";
}

/* A whole file, NUL-terminated (NULL if it cannot be read or is larger than max). */
static inline char *fuzz_read_file(const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *b = realloc(buf, cap);
            if (!b) break;
            buf = b;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0 || n > max) break;
    }
    bool ok = buf && !ferror(f) && n <= max;
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static int fuzz_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names "X" of the files "X.jinja" in dir (malloc'd array of malloc'd strings). */
static inline char **fuzz_list_templates(const char *dir, size_t *n_out) {
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l <= 6 || strcmp(de->d_name + l - 6, ".jinja") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        if (!(names[n] = strndup(de->d_name, l - 6))) break;
        n++;
    }
    closedir(d);
    if (names) qsort(names, n, sizeof *names, fuzz_cmp_str);
    *n_out = n;
    return names;
}

static inline void fuzz_free_list(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* The vocabularies of fuzz_tokenizer, in selector order: the five of ../shared/tokenizer with
 * their own pre-tokenizer, the GPT-2 vocabulary re-labelled with the other pre-tokenizer regex
 * lists (one name per distinct list in tokenizer_bpe.c), and two synth vocabularies. `file` is
 * relative to the shared folder; synth >= 0 means fuzz_synth_tiny(synth) instead. `roundtrip`:
 * detokenize(tokenize(x)) == x is promised (tokenizer.h; not for deepseek-coder). */
typedef struct fuzz_vocab {
    const char *file, *pre;
    int synth;
    int roundtrip;
} fuzz_vocab;
enum { FUZZ_N_VOCABS = 12 };
static inline const fuzz_vocab *fuzz_vocab_at(int i) {
    static const fuzz_vocab v[FUZZ_N_VOCABS] = {
        {"tokenizer/ggml-vocab-llama-spm.gguf", NULL, -1, 1},
        {"tokenizer/ggml-vocab-llama-bpe.gguf", NULL, -1, 1},
        {"tokenizer/ggml-vocab-qwen2.gguf", NULL, -1, 1},
        {"tokenizer/ggml-vocab-gpt-2.gguf", NULL, -1, 1},
        {"tokenizer/ggml-vocab-deepseek-coder.gguf", NULL, -1, 0},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "default", -1, 1},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "dbrx", -1, 1},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "deepseek-llm", -1, 1},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "falcon", -1, 1},
        {"tokenizer/ggml-vocab-gpt-2.gguf", "starcoder", -1, 1},
        {NULL, NULL, E0_ARCH_LLAMA, 1},
        {NULL, NULL, E0_ARCH_QWEN2, 1},
    };
    return i >= 0 && i < FUZZ_N_VOCABS ? &v[i] : NULL;
}

/* A tiny synth model (1 layer, 32-wide, 600 tokens, q8_0) of `arch`, written to path; with moe
 * (always for qwen*moe) 4 experts, 2 used; tmpl: its tokenizer.chat_template (NULL: none). The
 * fuzz targets' own small vocabularies and models, and the GGUF seeds. */
static inline int fuzz_synth_tiny_tmpl(enum e0_arch arch, int moe, int tied, const char *tmpl, const char *path, e0_err *e) {
    synth_params p = {.arch = arch, .n_threads = 1, .seed = 1, .tied_output = tied, .chat_template = tmpl};
    if (synth_shape_apply(&p, "tiny", e) < 0) return -1;
    p.type = (uint32_t)synth_type_from_name("q8_0");
    p.n_layer = 1, p.n_embd = 32, p.n_head = 2, p.n_head_kv = 1, p.head_dim = 16, p.n_ff = 32;
    p.n_vocab = 600, p.n_ctx = 64;
    if (moe || e0_arch_get(arch)->ffn == E0_FFN_MOE) {
        p.n_expert = 4, p.n_expert_used = 2;
        if (arch != E0_ARCH_LLAMA) p.n_ff_exp = 32;
        if (arch == E0_ARCH_QWEN2MOE) p.n_ff_shexp = 32;
    }
    synth_stats st;
    return synth_write(&p, path, &st, e);
}
static inline int fuzz_synth_tiny(enum e0_arch arch, int moe, int tied, const char *path, e0_err *e) {
    return fuzz_synth_tiny_tmpl(arch, moe, tied, NULL, path, e);
}

/* The libFuzzer entry points of target NAME: fuzz_NAME_init() once (a failure aborts: there is
 * nothing to fuzz), fuzz_NAME_one(data, size) per input. Empty under FUZZ_NO_MAIN
 * (tests/test_fuzz_regress.c includes every target into one binary). */
#ifdef FUZZ_NO_MAIN
#define FUZZ_ENTRY_POINTS(name)
#else
#define FUZZ_ENTRY_POINTS(name)                                                                               \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {                                                       \
        (void)argc;                                                                                           \
        (void)argv;                                                                                           \
        if (fuzz_##name##_init() != 0) abort();                                                               \
        return 0;                                                                                             \
    }                                                                                                         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_##name##_one(data, size); }
#endif

#endif
