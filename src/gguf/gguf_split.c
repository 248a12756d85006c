/* gguf_split.c — gguf_open(): a model in one GGUF file, or split into several by llama.cpp's
 * gguf-split convention, which llama.cpp, Ollama and the model hubs use for large models.
 *
 * A model split into N files: PREFIX-00001-of-0000N.gguf .. PREFIX-0000N-of-0000N.gguf (the
 * numbers %05d, 1-based). Every file is a GGUF of its own with split.count = N and split.no = its
 * 0-based index; the first holds the model's metadata and split.tensors.count, the tensors of all
 * files. gguf_open() of the first file opens each other one (gguf_open_file(): the same checks as
 * any file), checks that it belongs (its split.count and split.no) and appends its tensor
 * directory, each tensor tagged with its file. The other files' metadata beyond split.* is
 * ignored, as llama.cpp ignores it. Opening a later file is an error that names the first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_impl.h"

#define SPLIT_SUFFIX "-%05u-of-%05u.gguf"
#define SPLIT_SUFFIX_MAX 32

static void split_suffix(char out[SPLIT_SUFFIX_MAX], uint32_t i, uint32_t n) {
    snprintf(out, SPLIT_SUFFIX_MAX, SPLIT_SUFFIX, i + 1, n);
}

/* Length of path without file i's suffix of n; 0 when path does not end in it. */
static size_t prefix_len(const char *path, uint32_t i, uint32_t n) {
    char suffix[SPLIT_SUFFIX_MAX];
    split_suffix(suffix, i, n);
    size_t pl = strlen(path), sl = strlen(suffix);
    return pl > sl && !strcmp(path + pl - sl, suffix) ? pl - sl : 0;
}

/* f's split.count (1 when absent) and split.no (0 when absent), range-checked. */
static int split_keys(const gguf_file *f, uint32_t *count, uint32_t *no, e0_err *e) {
    int64_t c = 1, k = 0;
    int rc_c = gguf_get_i64(f, "split.count", &c, e);
    if (rc_c < 0 || gguf_get_i64(f, "split.no", &k, e) < 0) return -1;
    if (rc_c == 0) c = 1;
    if (c < 1 || c > GGUF_MAX_SPLITS)
        return e0_fail(e, "%s: split.count = %" PRId64 " out of range [1, %d]", f->path, c, GGUF_MAX_SPLITS);
    if (k < 0 || k >= c)
        return e0_fail(e, "%s: split.no = %" PRId64 " out of range [0, %" PRId64 ")", f->path, k, c);
    *count = (uint32_t)c;
    *no = (uint32_t)k;
    return 0;
}

/* Open file i of f's n and append its tensors (tagged i) to f's directory. */
static int add_split(gguf_file *f, size_t plen, uint32_t i, uint32_t n, e0_err *e) {
    char suffix[SPLIT_SUFFIX_MAX];
    split_suffix(suffix, i, n);
    char *name = malloc(plen + strlen(suffix) + 1);
    if (!name) return e0_fail(e, "%s: out of memory", f->path);
    memcpy(name, f->path, plen);
    strcpy(name + plen, suffix);
    gguf_file *g = gguf_open_file(name, e);
    if (!g) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        free(name);
        return e0_fail(e, "%s (file %u of the %u of %s)", why, i + 1, n, f->path);
    }
    free(name);
    uint32_t count, no;
    int rc = split_keys(g, &count, &no, e);
    if (rc == 0 && (count != n || no != i))
        rc = e0_fail(e, "%s: not file %u of the %u of %s: its split.count is %u, its split.no %u", g->path, i + 1, n,
                     f->path, count, no);
    gguf_tensor *t = rc ? NULL : realloc(f->tensors, (size_t)(f->n_tensors + g->n_tensors + 1) * sizeof *t);
    if (!rc && !t) rc = e0_fail(e, "%s: out of memory for %" PRIu64 " tensors", g->path, f->n_tensors + g->n_tensors);
    if (rc) {
        gguf_close(g);
        return -1;
    }
    f->tensors = t;
    for (uint64_t j = 0; j < g->n_tensors; j++) {
        t[f->n_tensors + j] = g->tensors[j];
        t[f->n_tensors + j].split = i;
    }
    f->n_tensors += g->n_tensors;
    f->splits[i] = (gguf_split){.fd = g->fd, .path = g->path, .size = g->file_size}; /* moved from g */
    f->n_splits = i + 1;
    f->total_size += g->file_size;
    g->fd = -1;
    g->path = NULL;
    gguf_close(g);
    return 0;
}

/* The name index of the whole directory; a tensor in two files is an error. */
static int index_tensors(gguf_file *f, e0_err *e) {
    free(f->tensor_index_);
    f->tensor_index_cap_ = gguf_index_cap(f->n_tensors);
    f->tensor_index_ = gguf_counted_calloc(f->tensor_index_cap_, sizeof *f->tensor_index_);
    if (!f->tensor_index_) return e0_fail(e, "%s: out of memory for %" PRIu64 " tensors", f->path, f->n_tensors);
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        bool found;
        uint64_t s = gguf_index_probe(f->tensor_index_, f->tensor_index_cap_, t->name, strlen(t->name),
                                      gguf_tensor_name_at, f, &found);
        if (found)
            return e0_fail(e, "%s: tensor '%s' is in both %s and %s", f->path, t->name,
                           f->splits[f->tensors[f->tensor_index_[s] - 1].split].path, f->splits[t->split].path);
        f->tensor_index_[s] = i + 1;
    }
    return 0;
}

static int open_splits(gguf_file *f, e0_err *e) {
    uint32_t n, no;
    if (split_keys(f, &n, &no, e)) return -1;
    if (n == 1) return 0;
    if (no != 0) {
        size_t plen = prefix_len(f->path, no, n);
        char first[SPLIT_SUFFIX_MAX];
        split_suffix(first, 0, n);
        if (plen)
            return e0_fail(e, "%s: file %u of a model split into %u files: open the first, %.*s%s", f->path, no + 1, n,
                           (int)plen, f->path, first);
        return e0_fail(e, "%s: file %u of a model split into %u files: open the first (its name ends in %s)", f->path,
                       no + 1, n, first);
    }
    size_t plen = prefix_len(f->path, 0, n);
    if (!plen) {
        char first[SPLIT_SUFFIX_MAX];
        split_suffix(first, 0, n);
        return e0_fail(e, "%s: the first file of a model split into %u files, but its name does not end in %s, so the "
                          "others cannot be found (keep the names gguf-split gave them)",
                       f->path, n, first);
    }
    gguf_split *s = realloc(f->splits, n * sizeof *s);
    if (!s) return e0_fail(e, "%s: out of memory", f->path);
    f->splits = s;
    for (uint32_t i = 1; i < n; i++)
        if (add_split(f, plen, i, n, e)) return -1;
    int64_t want;
    int rc = gguf_get_i64(f, "split.tensors.count", &want, e);
    if (rc < 0) return -1;
    if (rc == 1 && (want < 0 || (uint64_t)want != f->n_tensors))
        return e0_fail(e, "%s: split.tensors.count is %" PRId64 " but the %u files hold %" PRIu64 " tensors", f->path, want,
                       n, f->n_tensors);
    return index_tensors(f, e);
}

gguf_file *gguf_open(const char *path, e0_err *e) {
    gguf_reset_open_alloc_bytes();
    gguf_file *f = gguf_open_file(path, e);
    if (f && open_splits(f, e)) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

uint64_t gguf_model_size(const char *path, uint64_t file_size) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    uint64_t n = f ? f->total_size : file_size;
    gguf_close(f);
    return n;
}
