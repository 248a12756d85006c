/* t_split.h — write a GGUF file as the n files of a split model, in llama.cpp's gguf-split
 * layout: PREFIX-0000i-of-0000n.gguf, the metadata in the first, split.no / split.count /
 * split.tensors.count in each, the tensors dealt out in order (file i gets tensors
 * [i T / n, (i + 1) T / n)). For tests; include after t.h and gguf/gguf.h. */
#ifndef E0_T_SPLIT_H
#define E0_T_SPLIT_H

#include <inttypes.h>

/* Returns 0, or -1 after printing why. first: the first file's path (cap bytes). */
static int t_write_split(const char *src, const char *prefix, unsigned n, char *first, size_t cap) {
    e0_err e;
    gguf_file *f = gguf_open(src, &e);
    if (!f) {
        printf("  t_write_split: %s\n", e.msg);
        return -1;
    }
    int rc = 0;
    for (unsigned i = 0; i < n && !rc; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%.4096s-%05u-of-%05u.gguf", prefix, i + 1, n);
        if (i == 0 && strlen(path) < cap) memcpy(first, path, strlen(path) + 1);
        gguf_writer *w = gguf_writer_open(path, &e);
        if (!w) {
            printf("  t_write_split: %s\n", e.msg);
            rc = -1;
            break;
        }
        for (uint64_t k = 0; i == 0 && k < f->n_kv; k++)
            if (strncmp(f->kv[k].key, "split.", 6)) gguf_writer_kv_copy(w, &f->kv[k]);
        uint16_t no = (uint16_t)i, count = (uint16_t)n;
        int32_t total = (int32_t)f->n_tensors;
        gguf_writer_kv(w, "split.no", GGUF_U16, &no);
        gguf_writer_kv(w, "split.count", GGUF_U16, &count);
        gguf_writer_kv(w, "split.tensors.count", GGUF_I32, &total);
        const uint64_t lo = f->n_tensors * i / n, hi = f->n_tensors * (i + 1) / n;
        for (uint64_t j = lo; j < hi; j++) {
            const gguf_tensor *t = &f->tensors[j];
            gguf_writer_tensor(w, t->name, t->n_dims, t->ne, t->type);
        }
        for (uint64_t j = lo; j < hi && !rc; j++) {
            const gguf_tensor *t = &f->tensors[j];
            void *buf = malloc(t->nbytes ? t->nbytes : 1);
            rc = buf && gguf_read_tensor(f, t, 0, buf, t->nbytes, &e) == 0 ? 0 : -1;
            if (!rc) gguf_writer_data(w, buf, t->nbytes);
            else printf("  t_write_split: reading '%s': %s\n", t->name, buf ? e.msg : "out of memory");
            free(buf);
        }
        if (gguf_writer_close(w, &e) != 0 && !rc) {
            printf("  t_write_split: %s\n", e.msg);
            rc = -1;
        }
    }
    gguf_close(f);
    return rc;
}

#endif
