/* gguf.h — the GGUF file format: a strict reader and a streaming writer.
 *
 * Reader: gguf_open() parses header, metadata and the tensor directory with every count, length,
 * offset, dim, element count and byte size checked against the file size and sane limits before
 * anything is allocated or read. Tensor data is not loaded by gguf_open(); callers read it with
 * gguf_read_tensor() (pread into memory the caller owns). Versions 2 and 3 are supported.
 *
 * Split models (llama.cpp's gguf-split: NAME-00001-of-0000N.gguf .. NAME-0000N-of-0000N.gguf, the
 * metadata in the first, split.count / split.no / split.tensors.count in each): gguf_open() of the
 * first file opens the others too (gguf_split.c), and the tensor directory is that of the whole
 * model; each tensor says which file holds its data.
 *
 * Writer: gguf_writer_* writes metadata and tensor infos, then tensor data streamed in order, so a
 * file far larger than memory can be produced. */
#ifndef E0_GGUF_H
#define E0_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

enum gguf_vtype {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STR = 8, GGUF_ARR = 9, GGUF_U64 = 10, GGUF_I64 = 11,
    GGUF_F64 = 12, GGUF_VTYPE_COUNT
};

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 63            /* tensor names are < 64 bytes */
#define GGUF_DEFAULT_ALIGNMENT 32

typedef struct gguf_string {
    uint64_t len;
    char *s; /* NUL-terminated copy (may contain NULs before len) */
} gguf_string;

typedef struct gguf_kv {
    char *key;
    enum gguf_vtype type;
    union {
        uint64_t u64;  /* U8 U16 U32 U64 (zero-extended) */
        int64_t i64;   /* I8 I16 I32 I64 (sign-extended) */
        double f64;    /* F32 F64 */
        bool b;        /* BOOL */
        gguf_string str;
        struct {
            enum gguf_vtype type; /* element type; never GGUF_ARR */
            uint64_t n;
            void *data; /* packed elements of that type's native size (bool: uint8_t 0/1);
                           for strings: gguf_string[n] */
        } arr;
    } v;
} gguf_kv;

typedef struct gguf_tensor {
    char name[GGUF_MAX_NAME + 1];
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; /* dims beyond n_dims are 1 */
    uint32_t type;              /* e0_type id; always a known weight type (checked) */
    uint64_t nelements;
    uint64_t nbytes;
    uint64_t offset;            /* absolute offset of the data in its file */
    uint32_t split;             /* its file: splits[split] of the gguf_file (0: the first or only one) */
} gguf_tensor;

/* One file of a model: the first (the gguf_file's own fd, path, file_size) or another split. */
typedef struct gguf_split {
    int fd;
    char *path;
    uint64_t size;
} gguf_split;

#define GGUF_MAX_SPLITS 1024

typedef struct gguf_file {
    int fd;             /* the first (or only) file's: where the metadata is */
    char *path;
    uint64_t file_size;
    uint32_t n_splits;  /* files of the model: 1, or split.count */
    gguf_split *splits; /* [n_splits]; splits[0] is {fd, path, file_size} above */
    uint64_t total_size; /* bytes of all its files */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;
    uint64_t data_offset; /* start of the tensor data section */
    /* Private to gguf.c / gguf_get.c: hash indexes for gguf_find() and gguf_find_tensor()
     * (slot = item index + 1, 0 = empty; capacities are powers of two). */
    uint64_t *kv_index_, kv_index_cap_;
    uint64_t *tensor_index_, tensor_index_cap_;
} gguf_file;

/* Open and validate (a split model: from its first file, with all its files). NULL with *e
 * filled on any problem (missing file, directory, permission, truncation, bad magic, unsupported
 * version, bad types, overflow, duplicate keys/tensors, a missing or foreign split, ...).
 * Errors are one line: "<path>: <what is wrong> (at offset N)".
 * Beyond the basic checks, gguf_open() also rejects: empty keys or tensor names, keys or names
 * containing NUL bytes, general.alignment of a type other than u32, and tensors whose data
 * ranges overlap. The fd stays open until gguf_close() (gguf_read() uses it; pread is
 * thread-safe, so several threads may gguf_read() one file at once). */
gguf_file *gguf_open(const char *path, e0_err *e);
void gguf_close(gguf_file *f);

/* Bytes of the model whose (first) file is path: all its files' (gguf_file.total_size), or
 * file_size (the caller's stat of path) when path does not open as a GGUF. */
uint64_t gguf_model_size(const char *path, uint64_t file_size);

const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters: return 1 if present and convertible, 0 if absent, -1 (with *e) if present with
 * an incompatible type or out of range. Integer getters accept any integer kv type. */
int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, e0_err *e);
int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, e0_err *e);
int gguf_get_f32(const gguf_file *f, const char *key, float *out, e0_err *e); /* F32 or F64 */
int gguf_get_bool(const gguf_file *f, const char *key, bool *out, e0_err *e);
int gguf_get_str(const gguf_file *f, const char *key, const gguf_string **out, e0_err *e);
/* Array of the given element type (GGUF_STR for strings). */
int gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem, const void **data, uint64_t *n,
                 e0_err *e);

/* pread `len` bytes at absolute `offset` of the first (or only) file into dst; checks bounds;
 * handles EINTR/short reads. */
int gguf_read(const gguf_file *f, uint64_t offset, void *dst, uint64_t len, e0_err *e);
/* The same for bytes [off, off + len) of tensor t's data, from whichever file holds it. */
int gguf_read_tensor(const gguf_file *f, const gguf_tensor *t, uint64_t off, void *dst, uint64_t len, e0_err *e);

const char *gguf_vtype_name(enum gguf_vtype t);

/* Test hook: total bytes the calling thread's most recent gguf_open() asked malloc for (every
 * allocation counted, frees ignored), so tests can check allocation stays proportional to the
 * file size. */
uint64_t gguf_test_open_alloc_bytes(void);

/* ---- writer ----
 * Writes to "<path>.partial" and renames it to `path` only when gguf_writer_close() succeeds;
 * on any failure the partial file is removed. Errors are sticky: after one call fails, every later
 * call fails too and gguf_writer_close() reports the first error. Keys must be unique and non-empty;
 * "general.alignment" (u32, a power of two) sets the alignment of the data section (default 32).
 * Tensor checks match the reader (name 1..63 bytes, unique, n_dims 1..4, dims >= 1, known weight
 * type, ne[0] a multiple of the block size, no overflow). Data is buffered (1 MiB); padding after
 * every tensor, the last included (as llama.cpp writes it). */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_open(const char *path, e0_err *e);
int gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v);
int gguf_writer_kv_i32(gguf_writer *w, const char *key, int32_t v);
int gguf_writer_kv_u64(gguf_writer *w, const char *key, uint64_t v);
int gguf_writer_kv_f32(gguf_writer *w, const char *key, float v);
int gguf_writer_kv_bool(gguf_writer *w, const char *key, bool v);
int gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v);
/* Any scalar type (not STR/ARR): `value` points at one value of the type's native C size
 * (uint8_t/int8_t/.../float/double; bool as a 1-byte bool). */
int gguf_writer_kv(gguf_writer *w, const char *key, enum gguf_vtype type, const void *value);
/* Copy a kv read by gguf_open() (any type, arrays and strings included), e.g. to rewrite a file. */
int gguf_writer_kv_copy(gguf_writer *w, const gguf_kv *kv);
/* Numeric array: n packed elements of type `elem`. */
int gguf_writer_kv_arr(gguf_writer *w, const char *key, enum gguf_vtype elem, const void *data, uint64_t n);
int gguf_writer_kv_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Declare a tensor (all declared before any data). ne has n_dims entries. */
int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type);
/* Append data for the tensors in declaration order; may be called many times per tensor. The
 * header is written on the first call. Padding between tensors is inserted automatically. */
int gguf_writer_data(gguf_writer *w, const void *data, uint64_t len);
/* Check every tensor got exactly its bytes, flush, close. Frees w in all cases. */
int gguf_writer_close(gguf_writer *w, e0_err *e);
/* Error of the last failed writer call (valid until close). */
const char *gguf_writer_error(const gguf_writer *w);

#endif
