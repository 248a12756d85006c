/* gguf_impl.h — pieces shared by the GGUF reader (gguf.c), lookups (gguf_get.c) and writer
 * (gguf_write.c): value sizes and the name index (an open-addressing hash table of item indices).
 * Not part of the public API. */
#ifndef E0_GGUF_IMPL_H
#define E0_GGUF_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF is read and written as little-endian host data");

#define GGUF_MAGIC "GGUF"

/* gguf.c: open and validate one file (gguf_open() without looking for the other files of a split
 * model), with n_splits = 1; counted_calloc: its allocations, as gguf_test_open_alloc_bytes()
 * counts them (the caller resets the count). */
gguf_file *gguf_open_file(const char *path, e0_err *e);
void *gguf_counted_calloc(uint64_t n, uint64_t size);
void gguf_reset_open_alloc_bytes(void);
#define GGUF_VERSION_WRITTEN 3u

/* Bytes of one value of a fixed-size type in the file (and in memory); 0 for STR and ARR. */
static inline size_t gguf_vtype_size(enum gguf_vtype t) {
    switch (t) {
    case GGUF_U8: case GGUF_I8: case GGUF_BOOL: return 1;
    case GGUF_U16: case GGUF_I16: return 2;
    case GGUF_U32: case GGUF_I32: case GGUF_F32: return 4;
    case GGUF_U64: case GGUF_I64: case GGUF_F64: return 8;
    default: return 0;
    }
}

static inline bool gguf_vtype_is_int(enum gguf_vtype t) {
    return t == GGUF_U8 || t == GGUF_I8 || t == GGUF_U16 || t == GGUF_I16 || t == GGUF_U32 || t == GGUF_I32 ||
           t == GGUF_U64 || t == GGUF_I64;
}

/* Name index: `slots` has `cap` entries (a power of two), each 0 (empty) or item index + 1.
 * name_at(ctx, i) gives item i's NUL-terminated name (names never contain NUL bytes). */
typedef const char *(*gguf_name_at_fn)(const void *ctx, uint64_t i);

/* Slot holding `name` (*found = true) or the empty slot where it would go (*found = false).
 * The table is never full (cap >= 2 * items), so the probe ends. */
static inline uint64_t gguf_index_probe(const uint64_t *slots, uint64_t cap, const char *name, size_t len,
                                        gguf_name_at_fn name_at, const void *ctx, bool *found) {
    uint64_t mask = cap - 1, s = e0_fnv1a(name, len) & mask;
    while (slots[s]) {
        const char *other = name_at(ctx, slots[s] - 1);
        if (!strncmp(other, name, len) && other[len] == '\0') {
            *found = true;
            return s;
        }
        s = (s + 1) & mask;
    }
    *found = false;
    return s;
}

/* name_at callbacks for a gguf_file's kv and tensor indexes. */
static inline const char *gguf_kv_name_at(const void *ctx, uint64_t i) { return ((const gguf_file *)ctx)->kv[i].key; }
static inline const char *gguf_tensor_name_at(const void *ctx, uint64_t i) {
    return ((const gguf_file *)ctx)->tensors[i].name;
}

/* Smallest power of two >= 2 * n (at least 8); 0 if that would overflow. */
static inline uint64_t gguf_index_cap(uint64_t n) {
    uint64_t cap = 8;
    if (n > (UINT64_MAX >> 3)) return 0;
    while (cap < n * 2) {
        cap <<= 1;
    }
    return cap;
}

#endif
