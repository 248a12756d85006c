/* gguf.c — the GGUF reader of one file: gguf_open_file() parses and validates the header, the
 * metadata (kv) and the tensor directory; gguf_read() / gguf_read_tensor() read tensor bytes;
 * gguf_close() frees everything. gguf_open() (gguf_split.c) adds the other files of a split
 * model. Lookups and typed getters live in gguf_get.c, the writer in gguf_write.c.
 *
 * Every count, length, dim and offset is checked against the bytes left in the file before
 * anything is allocated or read, so allocation stays proportional to the file size. The file is
 * read with pread() through a small read-ahead window (no mmap). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf_impl.h"
#include "quant/quant.h"

/* Smallest possible kv in the file: key length (8) + 1 key byte + value type (4) + a u8 value. */
#define MIN_KV_BYTES 14u
/* Smallest possible tensor info: name length (8) + 1 name byte + n_dims (4) + one dim (8) +
 * type (4) + offset (8). */
#define MIN_TENSOR_INFO_BYTES 33u
#define READ_WINDOW (64u * 1024u)
#define MAX_IO_CHUNK (1u << 30) /* per pread() call; Linux caps one call near 2 GiB */

/* ---- allocation, counted for gguf_test_open_alloc_bytes() ---- */
static _Thread_local uint64_t open_alloc_bytes;

uint64_t gguf_test_open_alloc_bytes(void) { return open_alloc_bytes; }
void gguf_reset_open_alloc_bytes(void) { open_alloc_bytes = 0; }

void *gguf_counted_calloc(uint64_t n, uint64_t size) {
    uint64_t total;
    if (e0_mul_overflow(n, size, &total) || total > SIZE_MAX) return NULL;
    open_alloc_bytes += total;
    return calloc(total ? total : 1, 1);
}

/* ---- pread helpers ---- */

/* Read exactly len bytes at off. Returns 0, or -1 with errno set (0 for end of file). */
static int pread_full(int fd, void *dst, uint64_t len, uint64_t off) {
    uint8_t *p = dst;
    while (len > 0) {
        size_t chunk = len > MAX_IO_CHUNK ? MAX_IO_CHUNK : (size_t)len;
        ssize_t got = pread(fd, p, chunk, (off_t)off);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) {
            errno = 0;
            return -1;
        }
        p += got;
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
    return 0;
}

static int io_error(e0_err *e, const char *path, uint64_t off) {
    if (errno == 0) return e0_fail(e, "%s: unexpected end of file (at offset %" PRIu64 "; did the file shrink?)", path, off);
    return e0_fail(e, "%s: read error at offset %" PRIu64 ": %s", path, off, strerror(errno));
}

/* ---- the parsing cursor ---- */
typedef struct reader {
    int fd;
    const char *path;
    uint64_t size; /* file size at open */
    uint64_t pos;  /* offset of the next byte to parse */
    uint8_t *win;  /* read-ahead window */
    size_t win_cap, win_len;
    uint64_t win_off; /* file offset of win[0] */
    e0_err *e;
} reader;

static int rfail(reader *r, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rfail(reader *r, uint64_t at, const char *fmt, ...) {
    char what[E0_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return e0_fail(r->e, "%s: %s (at offset %" PRIu64 ")", r->path, what, at);
}

static uint64_t bytes_left(const reader *r) { return r->size - r->pos; }

/* Copy the next n bytes into dst; `what` names the field for the truncation message. */
static int rd_bytes(reader *r, void *dst, uint64_t n, const char *what) {
    if (n > bytes_left(r))
        return rfail(r, r->pos, "file truncated: %s needs %" PRIu64 " bytes, %" PRIu64 " left", what, n, bytes_left(r));
    uint8_t *p = dst;
    while (n > 0) {
        if (r->pos >= r->win_off && r->pos < r->win_off + r->win_len) {
            uint64_t avail = r->win_off + r->win_len - r->pos, take = n < avail ? n : avail;
            memcpy(p, r->win + (r->pos - r->win_off), (size_t)take);
            p += take;
            r->pos += take;
            n -= take;
            continue;
        }
        if (n >= r->win_cap) { /* large: straight into dst */
            if (pread_full(r->fd, p, n, r->pos)) return io_error(r->e, r->path, r->pos);
            r->pos += n;
            return 0;
        }
        uint64_t want = bytes_left(r) < r->win_cap ? bytes_left(r) : r->win_cap;
        if (pread_full(r->fd, r->win, want, r->pos)) return io_error(r->e, r->path, r->pos);
        r->win_off = r->pos;
        r->win_len = (size_t)want;
    }
    return 0;
}

static int rd_u32(reader *r, uint32_t *v, const char *what) { return rd_bytes(r, v, 4, what); }
static int rd_u64(reader *r, uint64_t *v, const char *what) { return rd_bytes(r, v, 8, what); }

/* A gguf string: u64 length + bytes, copied NUL-terminated. */
static int rd_string(reader *r, gguf_string *s, const char *what) {
    uint64_t at = r->pos, len;
    if (rd_u64(r, &len, what)) return -1;
    if (len > bytes_left(r))
        return rfail(r, at, "%s length %" PRIu64 " exceeds the %" PRIu64 " bytes left in the file", what, len,
                     bytes_left(r));
    s->s = gguf_counted_calloc(len + 1, 1);
    if (!s->s) return rfail(r, at, "out of memory for a %s of %" PRIu64 " bytes", what, len);
    s->len = len;
    return rd_bytes(r, s->s, len, what);
}

/* ---- metadata ---- */


static int rd_scalar(reader *r, gguf_kv *kv, enum gguf_vtype t, const char *key) {
    uint64_t at = r->pos;
    uint8_t raw[8] = {0};
    if (rd_bytes(r, raw, gguf_vtype_size(t), "a value")) return -1;
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
    switch (t) {
    case GGUF_U8: memcpy(&u8, raw, 1); kv->v.u64 = u8; break;
    case GGUF_I8: memcpy(&i8, raw, 1); kv->v.i64 = i8; break;
    case GGUF_U16: memcpy(&u16, raw, 2); kv->v.u64 = u16; break;
    case GGUF_I16: memcpy(&i16, raw, 2); kv->v.i64 = i16; break;
    case GGUF_U32: memcpy(&u32, raw, 4); kv->v.u64 = u32; break;
    case GGUF_I32: memcpy(&i32, raw, 4); kv->v.i64 = i32; break;
    case GGUF_U64: memcpy(&kv->v.u64, raw, 8); break;
    case GGUF_I64: memcpy(&kv->v.i64, raw, 8); break;
    case GGUF_F32: memcpy(&f32, raw, 4); kv->v.f64 = f32; break;
    case GGUF_F64: memcpy(&kv->v.f64, raw, 8); break;
    case GGUF_BOOL:
        if (raw[0] > 1) return rfail(r, at, "key '%s': bool value %u is not 0 or 1", key, raw[0]);
        kv->v.b = raw[0];
        break;
    default: return rfail(r, at, "key '%s': internal error: not a scalar type", key);
    }
    return 0;
}

static int rd_array(reader *r, gguf_kv *kv, const char *key) {
    uint64_t at = r->pos, n;
    uint32_t elem;
    if (rd_u32(r, &elem, "an array element type")) return -1;
    if (elem == GGUF_ARR) return rfail(r, at, "key '%s': array of arrays is not supported", key);
    if (elem >= GGUF_VTYPE_COUNT) return rfail(r, at, "key '%s': array element type %u out of range", key, elem);
    at = r->pos;
    if (rd_u64(r, &n, "an array count")) return -1;
    kv->v.arr.type = (enum gguf_vtype)elem;
    if (elem == GGUF_STR) {
        if (n > bytes_left(r) / 8)
            return rfail(r, at, "key '%s': string array count %" PRIu64 " exceeds what the %" PRIu64 " bytes left can hold",
                         key, n, bytes_left(r));
        gguf_string *strs = gguf_counted_calloc(n, sizeof *strs);
        if (!strs) return rfail(r, at, "key '%s': out of memory for %" PRIu64 " strings", key, n);
        kv->v.arr.data = strs;
        kv->v.arr.n = n; /* entries not read yet are zero, so gguf_close() can free a partial array */
        for (uint64_t i = 0; i < n; i++)
            if (rd_string(r, &strs[i], "a string array element")) return -1;
        return 0;
    }
    uint64_t esize = gguf_vtype_size((enum gguf_vtype)elem), total;
    if (e0_mul_overflow(n, esize, &total) || total > bytes_left(r))
        return rfail(r, at, "key '%s': array of %" PRIu64 " x %" PRIu64 "-byte elements exceeds the %" PRIu64 " bytes left",
                     key, n, esize, bytes_left(r));
    uint8_t *data = gguf_counted_calloc(total, 1);
    if (!data) return rfail(r, at, "key '%s': out of memory for an array of %" PRIu64 " bytes", key, total);
    kv->v.arr.data = data;
    kv->v.arr.n = n;
    if (rd_bytes(r, data, total, "array data")) return -1;
    if (elem == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (data[i] > 1)
                return rfail(r, r->pos - total + i, "key '%s': bool array element %" PRIu64 " is %u, not 0 or 1", key, i,
                             data[i]);
    return 0;
}

static int rd_kv(reader *r, gguf_file *f, uint64_t i) {
    gguf_kv *kv = &f->kv[i];
    uint64_t at = r->pos;
    gguf_string key = {0};
    if (rd_string(r, &key, "key")) {
        free(key.s);
        return -1;
    }
    kv->key = key.s;
    if (key.len == 0) return rfail(r, at, "empty key in kv %" PRIu64, i);
    if (strlen(key.s) != key.len) return rfail(r, at, "key of kv %" PRIu64 " contains a NUL byte", i);
    bool found;
    uint64_t slot = gguf_index_probe(f->kv_index_, f->kv_index_cap_, key.s, key.len, gguf_kv_name_at, f, &found);
    if (found) return rfail(r, at, "duplicate key '%s'", key.s);
    f->kv_index_[slot] = i + 1;

    uint32_t type;
    at = r->pos;
    if (rd_u32(r, &type, "a value type")) return -1;
    if (type >= GGUF_VTYPE_COUNT) return rfail(r, at, "key '%s': value type %u out of range", key.s, type);
    kv->type = (enum gguf_vtype)type;
    if (type == GGUF_STR) return rd_string(r, &kv->v.str, "string value");
    if (type == GGUF_ARR) return rd_array(r, kv, key.s);
    return rd_scalar(r, kv, kv->type, key.s);
}

/* general.alignment: u32, a non-zero power of two. */
static int read_alignment(reader *r, gguf_file *f) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find(f, "general.alignment");
    if (!kv) return 0;
    if (kv->type != GGUF_U32)
        return e0_fail(r->e, "%s: general.alignment has type %s, expected u32", r->path, gguf_vtype_name(kv->type));
    uint64_t a = kv->v.u64;
    if (a == 0 || (a & (a - 1)))
        return e0_fail(r->e, "%s: general.alignment %" PRIu64 " is not a non-zero power of two", r->path, a);
    f->alignment = a;
    return 0;
}

/* ---- tensor directory ---- */

/* Reads one tensor info; t->offset holds the offset relative to the data section afterwards. */
static int rd_tensor_info(reader *r, gguf_file *f, uint64_t i) {
    gguf_tensor *t = &f->tensors[i];
    uint64_t at = r->pos, len;
    if (rd_u64(r, &len, "a tensor name length")) return -1;
    if (len == 0) return rfail(r, at, "tensor %" PRIu64 " has an empty name", i);
    if (len > GGUF_MAX_NAME)
        return rfail(r, at, "tensor %" PRIu64 ": name length %" PRIu64 " is too long (at most %d bytes)", i, len,
                     GGUF_MAX_NAME);
    if (rd_bytes(r, t->name, len, "a tensor name")) return -1;
    t->name[len] = '\0';
    if (strlen(t->name) != len) return rfail(r, at, "tensor %" PRIu64 ": name contains a NUL byte", i);
    bool found;
    uint64_t slot = gguf_index_probe(f->tensor_index_, f->tensor_index_cap_, t->name, len, gguf_tensor_name_at, f, &found);
    if (found) return rfail(r, at, "duplicate tensor name '%s'", t->name);
    f->tensor_index_[slot] = i + 1;

    at = r->pos;
    if (rd_u32(r, &t->n_dims, "n_dims")) return -1;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return rfail(r, at, "tensor '%s': n_dims %u out of range 1..%d", t->name, t->n_dims, GGUF_MAX_DIMS);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = r->pos;
        if (rd_u64(r, &t->ne[d], "a tensor dim")) return -1;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
            return rfail(r, at, "tensor '%s': dim %u is %" PRIu64 " (must be 1..2^63-1)", t->name, d, t->ne[d]);
        if (e0_mul_overflow(nel, t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return rfail(r, at, "tensor '%s': element count overflows 64 bits", t->name);
    }
    t->nelements = nel;

    at = r->pos;
    if (rd_u32(r, &t->type, "a tensor type")) return -1;
    const e0_type_traits *tr = e0_type_traits_of(t->type);
    if (!tr) return rfail(r, at, "tensor '%s': unsupported tensor type %u", t->name, t->type);
    if (!tr->weight_ok)
        return rfail(r, at, "tensor '%s': unsupported tensor type %u (%s is not a weight type)", t->name, t->type, tr->name);
    if (t->ne[0] % (uint64_t)tr->block_size)
        return rfail(r, at, "tensor '%s': ne[0] = %" PRIu64 " is not a multiple of %s's block size %" PRId64, t->name,
                     t->ne[0], tr->name, tr->block_size);
    /* nbytes = row size * rows, each step overflow-checked (e0_row_size() itself is not). */
    uint64_t nbytes = t->ne[0] / (uint64_t)tr->block_size;
    bool over = e0_mul_overflow(nbytes, tr->type_size, &nbytes);
    for (uint32_t d = 1; d < GGUF_MAX_DIMS && !over; d++) over = e0_mul_overflow(nbytes, t->ne[d], &nbytes);
    if (over) return rfail(r, at, "tensor '%s': byte size overflows 64 bits", t->name);
    t->nbytes = nbytes;

    at = r->pos;
    if (rd_u64(r, &t->offset, "a tensor offset")) return -1;
    if (t->offset % f->alignment)
        return rfail(r, at, "tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, t->name,
                     t->offset, f->alignment);
    return 0;
}

typedef struct span {
    uint64_t start, end, idx;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Make offsets absolute; every tensor inside the file, no two overlapping. */
static int place_tensors(reader *r, gguf_file *f) {
    if (f->n_tensors == 0) return 0;
    span *spans = gguf_counted_calloc(f->n_tensors, sizeof *spans);
    if (!spans) return e0_fail(r->e, "%s: out of memory for %" PRIu64 " tensors", r->path, f->n_tensors);
    int rc = 0;
    for (uint64_t i = 0; i < f->n_tensors && !rc; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t start = 0, end = 0, padded_end;
        /* The padding after each tensor (the last one's included) is part of the file, as
         * llama.cpp writes and requires it; a file cut inside it is truncated. */
        if (e0_add_overflow(f->data_offset, t->offset, &start) || e0_add_overflow(start, t->nbytes, &end) ||
            e0_add_overflow(end, (f->alignment - end % f->alignment) % f->alignment, &padded_end) ||
            padded_end > f->file_size)
            rc = e0_fail(r->e,
                         "%s: tensor '%s': data at offset %" PRIu64 " + %" PRIu64 " bytes (+ padding to %" PRIu64
                         ") lies outside the file (size %" PRIu64 ", data section at %" PRIu64 ")",
                         r->path, t->name, t->offset, t->nbytes, f->alignment, f->file_size, f->data_offset);
        t->offset = start;
        spans[i] = (span){start, end, i};
    }
    if (!rc) {
        qsort(spans, f->n_tensors, sizeof *spans, span_cmp);
        for (uint64_t i = 1; i < f->n_tensors && !rc; i++)
            if (spans[i].start < spans[i - 1].end)
                rc = e0_fail(r->e, "%s: tensors '%s' and '%s' overlap in the file", r->path,
                             f->tensors[spans[i - 1].idx].name, f->tensors[spans[i].idx].name);
    }
    free(spans);
    return rc;
}

/* ---- open / close ---- */

static int parse(reader *r, gguf_file *f) {
    char magic[4];
    if (r->size < 24) {
        if (r->size >= 4 && pread_full(r->fd, magic, 4, 0) == 0 && memcmp(magic, GGUF_MAGIC, 4))
            return e0_fail(r->e, "%s: not a GGUF file (bad magic)", r->path);
        return e0_fail(r->e, "%s: file too small for a GGUF header (%" PRIu64 " bytes)", r->path, r->size);
    }
    if (rd_bytes(r, magic, 4, "magic")) return -1;
    if (memcmp(magic, GGUF_MAGIC, 4)) return e0_fail(r->e, "%s: not a GGUF file (bad magic)", r->path);
    if (rd_u32(r, &f->version, "version")) return -1;
    if (f->version != 2 && f->version != 3) {
        if (f->version == 0x03000000u || f->version == 0x02000000u)
            return e0_fail(r->e, "%s: unsupported GGUF version %u (a big-endian file?)", r->path, f->version);
        return e0_fail(r->e, "%s: unsupported GGUF version %u", r->path, f->version);
    }
    uint64_t n_tensors, n_kv, at = r->pos;
    if (rd_u64(r, &n_tensors, "n_tensors") || rd_u64(r, &n_kv, "n_kv")) return -1;
    /* Each entry takes a minimum number of bytes, so the counts are bounded by the bytes left. */
    if (n_tensors > bytes_left(r) / MIN_TENSOR_INFO_BYTES)
        return rfail(r, at, "tensor count %" PRIu64 " is impossible in the %" PRIu64 " bytes left", n_tensors, bytes_left(r));
    if (n_kv > (bytes_left(r) - n_tensors * MIN_TENSOR_INFO_BYTES) / MIN_KV_BYTES)
        return rfail(r, at + 8, "kv count %" PRIu64 " is impossible in the %" PRIu64 " bytes left", n_kv, bytes_left(r));

    f->kv = gguf_counted_calloc(n_kv, sizeof *f->kv);
    f->kv_index_cap_ = gguf_index_cap(n_kv);
    f->kv_index_ = gguf_counted_calloc(f->kv_index_cap_, sizeof *f->kv_index_);
    if (!f->kv || !f->kv_index_) return e0_fail(r->e, "%s: out of memory for %" PRIu64 " kvs", r->path, n_kv);
    f->n_kv = n_kv;
    for (uint64_t i = 0; i < n_kv; i++)
        if (rd_kv(r, f, i)) return -1;
    if (read_alignment(r, f)) return -1;

    f->tensors = gguf_counted_calloc(n_tensors, sizeof *f->tensors);
    f->tensor_index_cap_ = gguf_index_cap(n_tensors);
    f->tensor_index_ = gguf_counted_calloc(f->tensor_index_cap_, sizeof *f->tensor_index_);
    if (!f->tensors || !f->tensor_index_)
        return e0_fail(r->e, "%s: out of memory for %" PRIu64 " tensors", r->path, n_tensors);
    f->n_tensors = n_tensors;
    for (uint64_t i = 0; i < n_tensors; i++)
        if (rd_tensor_info(r, f, i)) return -1;

    /* The data section starts at the next multiple of the alignment. */
    uint64_t pad = (f->alignment - r->pos % f->alignment) % f->alignment;
    if (e0_add_overflow(r->pos, pad, &f->data_offset))
        return rfail(r, r->pos, "data section offset overflows");
    return place_tensors(r, f);
}

gguf_file *gguf_open_file(const char *path, e0_err *e) {
    /* O_NONBLOCK: opening a FIFO must not hang; it is rejected below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        e0_fail(e, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        e0_fail(e, "cannot stat %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        e0_fail(e, "%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory, not a GGUF file" : "not a regular file");
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) {
        e0_fail(e, "%s: empty file", path);
        close(fd);
        return NULL;
    }
    gguf_file *f = gguf_counted_calloc(1, sizeof *f);
    size_t plen = strlen(path);
    char *pcopy = gguf_counted_calloc(plen + 1, 1);
    if (!f || !pcopy) {
        free(f);
        free(pcopy);
        close(fd);
        e0_fail(e, "%s: out of memory", path);
        return NULL;
    }
    memcpy(pcopy, path, plen);
    f->fd = fd;
    f->path = pcopy;
    f->file_size = f->total_size = (uint64_t)st.st_size;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    f->splits = gguf_counted_calloc(1, sizeof *f->splits);
    if (!f->splits) {
        gguf_close(f);
        e0_fail(e, "%s: out of memory", path);
        return NULL;
    }
    f->n_splits = 1;
    f->splits[0] = (gguf_split){.fd = fd, .path = pcopy, .size = f->file_size};

    reader r = {.fd = fd, .path = path, .size = f->file_size, .e = e};
    r.win_cap = f->file_size < READ_WINDOW ? (size_t)f->file_size : READ_WINDOW;
    r.win = gguf_counted_calloc(r.win_cap, 1);
    int rc = r.win ? parse(&r, f) : e0_fail(e, "%s: out of memory", path);
    free(r.win);
    if (rc) {
        gguf_close(f);
        return NULL;
    }
    return f;
}

static void free_kv(gguf_kv *kv) {
    free(kv->key);
    if (kv->type == GGUF_STR) free(kv->v.str.s);
    if (kv->type == GGUF_ARR) {
        if (kv->v.arr.type == GGUF_STR && kv->v.arr.data) {
            gguf_string *s = kv->v.arr.data;
            for (uint64_t i = 0; i < kv->v.arr.n; i++) free(s[i].s);
        }
        free(kv->v.arr.data);
    }
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    if (f->kv)
        for (uint64_t i = 0; i < f->n_kv; i++) free_kv(&f->kv[i]);
    free(f->kv);
    free(f->kv_index_);
    free(f->tensors);
    free(f->tensor_index_);
    for (uint32_t i = 1; i < f->n_splits; i++) { /* splits[0] is the file's own fd and path */
        if (f->splits[i].fd >= 0) close(f->splits[i].fd);
        free(f->splits[i].path);
    }
    free(f->splits);
    if (f->fd >= 0) close(f->fd);
    free(f->path);
    free(f);
}

int gguf_read(const gguf_file *f, uint64_t offset, void *dst, uint64_t len, e0_err *e) {
    uint64_t end;
    if (e0_add_overflow(offset, len, &end) || end > f->file_size)
        return e0_fail(e, "%s: read of %" PRIu64 " bytes at offset %" PRIu64 " is outside the file (size %" PRIu64 ")",
                       f->path, len, offset, f->file_size);
    if (len == 0) return 0;
    if (!dst) return e0_fail(e, "%s: read into a NULL buffer", f->path);
    if (pread_full(f->fd, dst, len, offset)) return io_error(e, f->path, offset); /* offset of the request */
    return 0;
}

int gguf_read_tensor(const gguf_file *f, const gguf_tensor *t, uint64_t off, void *dst, uint64_t len, e0_err *e) {
    uint64_t end;
    if (e0_add_overflow(off, len, &end) || end > t->nbytes)
        return e0_fail(e, "%s: read of %" PRIu64 " bytes at %" PRIu64 " is outside tensor '%s' (%" PRIu64 " bytes)", f->path,
                       len, off, t->name, t->nbytes);
    if (t->split >= f->n_splits) return e0_fail(e, "%s: tensor '%s' has no file", f->path, t->name);
    if (len == 0) return 0;
    if (!dst) return e0_fail(e, "%s: read into a NULL buffer", f->path);
    const gguf_split *s = &f->splits[t->split];
    if (pread_full(s->fd, dst, len, t->offset + off)) return io_error(e, s->path, t->offset + off);
    return 0;
}
