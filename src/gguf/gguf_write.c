/* gguf_write.c — the streaming GGUF writer (see gguf.h).
 *
 * kvs are serialized into a memory buffer as they are added and tensor infos are collected; the
 * first gguf_writer_data() call (or close) computes the aligned offsets and writes header, kvs,
 * infos and padding; then tensor bytes are appended in declaration order with padding after each
 * tensor. Only metadata is held in memory, so files far larger than RAM can be written. Output
 * goes to "<path>.partial", renamed to <path> by a successful close. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf_impl.h"
#include "quant/quant.h"

#define WRITE_BUF (1u << 20)
#define KEY(k) ((k) ? (k) : "(null)")

typedef struct wtensor {
    char name[GGUF_MAX_NAME + 1];
    uint32_t n_dims, type;
    uint64_t ne[GGUF_MAX_DIMS];
    uint64_t nbytes, offset; /* offset relative to the data section */
} wtensor;

/* A growable set of names (items are keys or tensors, found through name_at). */
typedef struct name_set {
    uint64_t *slots, cap, n;
} name_set;

struct gguf_writer {
    int fd;
    char *path, *tmp_path;
    bool failed;
    char err[E0_ERR_LEN];

    uint8_t *meta; /* serialized kvs */
    size_t meta_len, meta_cap;
    char **keys;
    uint64_t n_kv, keys_cap;
    name_set key_set;

    wtensor *tensors;
    uint64_t n_tensors, tensors_cap;
    name_set tensor_set;
    uint64_t alignment, data_size; /* data_size: padded size of the data section so far */

    bool header_done;
    uint64_t cur, cur_done; /* tensor being written and how many of its bytes arrived */
    uint8_t *buf;           /* write buffer */
    size_t buf_len;
};

static int wfail(gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int wfail(gguf_writer *w, const char *fmt, ...) {
    if (w->failed) return -1; /* keep the first error */
    char what[E0_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    e0_err e;
    e0_fail(&e, "%s: %s", w->path, what);
    memcpy(w->err, e.msg, sizeof w->err);
    w->failed = true;
    return -1;
}

const char *gguf_writer_error(const gguf_writer *w) { return w ? w->err : "no writer"; }

/* ---- name sets ---- */
static const char *key_at(const void *ctx, uint64_t i) { return ((const gguf_writer *)ctx)->keys[i]; }
static const char *tname_at(const void *ctx, uint64_t i) { return ((const gguf_writer *)ctx)->tensors[i].name; }

/* Insert item `idx` named `name`; 1 if the name was already there, -1 on out of memory. */
static int set_insert(name_set *s, const char *name, uint64_t idx, gguf_name_at_fn at, const void *ctx) {
    if (s->n * 2 + 2 > s->cap) { /* grow and rehash */
        uint64_t cap = gguf_index_cap(s->n + 1) * 2;
        uint64_t *slots = cap ? calloc(cap, sizeof *slots) : NULL;
        if (!slots) return -1;
        for (uint64_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            const char *nm = at(ctx, s->slots[i] - 1);
            bool found;
            slots[gguf_index_probe(slots, cap, nm, strlen(nm), at, ctx, &found)] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    bool found;
    uint64_t slot = gguf_index_probe(s->slots, s->cap, name, strlen(name), at, ctx, &found);
    if (found) return 1;
    s->slots[slot] = idx + 1;
    s->n++;
    return 0;
}

/* ---- low-level output ---- */
static int write_all(gguf_writer *w, const void *p, size_t n) {
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t put = write(w->fd, b, n);
        if (put < 0) {
            if (errno == EINTR) continue;
            return wfail(w, "write failed: %s", strerror(errno));
        }
        b += put;
        n -= (size_t)put;
    }
    return 0;
}

static int flush_buf(gguf_writer *w) {
    if (w->buf_len && write_all(w, w->buf, w->buf_len)) return -1;
    w->buf_len = 0;
    return 0;
}

static int put(gguf_writer *w, const void *p, uint64_t n) {
    const uint8_t *b = p;
    while (n > 0) {
        if (w->buf_len == 0 && n >= WRITE_BUF) { /* big chunk: bypass the buffer */
            size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
            if (write_all(w, b, chunk)) return -1;
            b += chunk;
            n -= chunk;
            continue;
        }
        size_t take = WRITE_BUF - w->buf_len;
        if (take > n) take = (size_t)n;
        memcpy(w->buf + w->buf_len, b, take);
        w->buf_len += take;
        b += take;
        n -= take;
        if (w->buf_len == WRITE_BUF && flush_buf(w)) return -1;
    }
    return 0;
}

static int put_zeros(gguf_writer *w, uint64_t n) {
    static const uint8_t zeros[4096];
    while (n > 0) {
        uint64_t take = n < sizeof zeros ? n : sizeof zeros;
        if (put(w, zeros, take)) return -1;
        n -= take;
    }
    return 0;
}

static uint64_t pad_to(uint64_t pos, uint64_t align) { return (align - pos % align) % align; }

/* ---- open ---- */
gguf_writer *gguf_writer_open(const char *path, e0_err *e) {
    gguf_writer *w = calloc(1, sizeof *w);
    size_t plen = strlen(path);
    if (w) {
        w->path = malloc(plen + 1);
        w->tmp_path = malloc(plen + sizeof ".partial");
        w->buf = malloc(WRITE_BUF);
    }
    if (!w || !w->path || !w->tmp_path || !w->buf) {
        if (w) {
            free(w->path);
            free(w->tmp_path);
            free(w->buf);
            free(w);
        }
        e0_fail(e, "%s: out of memory", path);
        return NULL;
    }
    memcpy(w->path, path, plen + 1);
    memcpy(w->tmp_path, path, plen);
    memcpy(w->tmp_path + plen, ".partial", sizeof ".partial");
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        e0_fail(e, "cannot create %s: %s", w->tmp_path, strerror(errno));
        free(w->path);
        free(w->tmp_path);
        free(w->buf);
        free(w);
        return NULL;
    }
    return w;
}

/* ---- kvs ---- */
static int meta_put(gguf_writer *w, const void *p, uint64_t n) {
    if (n > SIZE_MAX - w->meta_len) return wfail(w, "metadata too large");
    if (w->meta_len + n > w->meta_cap) {
        size_t cap = w->meta_cap ? w->meta_cap : 4096;
        while (cap < w->meta_len + n) {
            if (cap > SIZE_MAX / 2) return wfail(w, "metadata too large");
            cap *= 2;
        }
        uint8_t *m = realloc(w->meta, cap);
        if (!m) return wfail(w, "out of memory for metadata");
        w->meta = m;
        w->meta_cap = cap;
    }
    if (n) memcpy(w->meta + w->meta_len, p, (size_t)n);
    w->meta_len += (size_t)n;
    return 0;
}
static int meta_u32(gguf_writer *w, uint32_t v) { return meta_put(w, &v, 4); }
static int meta_u64(gguf_writer *w, uint64_t v) { return meta_put(w, &v, 8); }
static int meta_str(gguf_writer *w, const char *s, uint64_t len) { return meta_u64(w, len) || meta_put(w, s, len); }

/* Checks shared by every kv: state, key, duplicates; writes key and type. */
static int begin_kv(gguf_writer *w, const char *key, enum gguf_vtype type) {
    if (w->failed) return -1;
    if (w->header_done) return wfail(w, "kv '%s' added after tensor data started", KEY(key));
    if (!key || !*key) return wfail(w, "empty key");
    if (w->n_kv == w->keys_cap) {
        uint64_t cap = w->keys_cap ? w->keys_cap * 2 : 16;
        char **k = realloc(w->keys, cap * sizeof *k);
        if (!k) return wfail(w, "out of memory");
        w->keys = k;
        w->keys_cap = cap;
    }
    char *copy = strdup(key);
    if (!copy) return wfail(w, "out of memory");
    w->keys[w->n_kv] = copy;
    int dup = set_insert(&w->key_set, key, w->n_kv, key_at, w);
    if (dup) {
        free(copy);
        return dup < 0 ? wfail(w, "out of memory") : wfail(w, "duplicate key '%s'", key);
    }
    w->n_kv++;
    return meta_str(w, key, strlen(key)) || meta_u32(w, (uint32_t)type);
}

int gguf_writer_kv(gguf_writer *w, const char *key, enum gguf_vtype type, const void *value) {
    if (w->failed) return -1;
    size_t size = gguf_vtype_size(type);
    if (!size || (unsigned)type >= GGUF_VTYPE_COUNT) return wfail(w, "kv '%s': %s is not a scalar type", KEY(key), gguf_vtype_name(type));
    if (!value) return wfail(w, "kv '%s': NULL value", KEY(key));
    uint8_t b = 0;
    if (type == GGUF_BOOL) { /* normalize whatever 1-byte bool representation to 0/1 */
        bool v;
        memcpy(&v, value, 1);
        b = v ? 1 : 0;
        value = &b;
    }
    if (key && !strcmp(key, "general.alignment")) {
        uint32_t a = 0;
        if (type != GGUF_U32) return wfail(w, "general.alignment must be u32, not %s", gguf_vtype_name(type));
        memcpy(&a, value, 4);
        if (a == 0 || (a & (a - 1))) return wfail(w, "general.alignment %u is not a non-zero power of two", a);
        w->alignment = a;
    }
    if (begin_kv(w, key, type)) return -1;
    return meta_put(w, value, size);
}

int gguf_writer_kv_u32(gguf_writer *w, const char *key, uint32_t v) { return gguf_writer_kv(w, key, GGUF_U32, &v); }
int gguf_writer_kv_i32(gguf_writer *w, const char *key, int32_t v) { return gguf_writer_kv(w, key, GGUF_I32, &v); }
int gguf_writer_kv_u64(gguf_writer *w, const char *key, uint64_t v) { return gguf_writer_kv(w, key, GGUF_U64, &v); }
int gguf_writer_kv_f32(gguf_writer *w, const char *key, float v) { return gguf_writer_kv(w, key, GGUF_F32, &v); }
int gguf_writer_kv_bool(gguf_writer *w, const char *key, bool v) { return gguf_writer_kv(w, key, GGUF_BOOL, &v); }

int gguf_writer_kv_str(gguf_writer *w, const char *key, const char *v) {
    if (w->failed) return -1;
    if (!v) return wfail(w, "kv '%s': NULL string", KEY(key));
    if (begin_kv(w, key, GGUF_STR)) return -1;
    return meta_str(w, v, strlen(v));
}

int gguf_writer_kv_arr(gguf_writer *w, const char *key, enum gguf_vtype elem, const void *data, uint64_t n) {
    if (w->failed) return -1;
    uint64_t size = gguf_vtype_size(elem), total;
    if (!size || (unsigned)elem >= GGUF_VTYPE_COUNT)
        return wfail(w, "kv '%s': %s arrays need gguf_writer_kv_str_arr or are not supported", KEY(key),
                     gguf_vtype_name(elem));
    if (e0_mul_overflow(n, size, &total)) return wfail(w, "kv '%s': array too large", KEY(key));
    if (n && !data) return wfail(w, "kv '%s': NULL array data", KEY(key));
    if (elem == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1) return wfail(w, "kv '%s': bool array element %" PRIu64 " is not 0 or 1", KEY(key), i);
    if (begin_kv(w, key, GGUF_ARR)) return -1;
    return meta_u32(w, (uint32_t)elem) || meta_u64(w, n) || meta_put(w, data, total);
}

int gguf_writer_kv_str_arr(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    if (w->failed) return -1;
    if (n && !strs) return wfail(w, "kv '%s': NULL string array", KEY(key));
    for (uint64_t i = 0; i < n; i++)
        if (!strs[i]) return wfail(w, "kv '%s': string %" PRIu64 " is NULL", KEY(key), i);
    if (begin_kv(w, key, GGUF_ARR) || meta_u32(w, GGUF_STR) || meta_u64(w, n)) return -1;
    for (uint64_t i = 0; i < n; i++)
        if (meta_str(w, strs[i], strlen(strs[i]))) return -1;
    return 0;
}

int gguf_writer_kv_copy(gguf_writer *w, const gguf_kv *kv) {
    if (w->failed) return -1;
    if (!kv) return wfail(w, "NULL kv");
    switch (kv->type) {
    case GGUF_STR:
        if (begin_kv(w, kv->key, GGUF_STR)) return -1;
        return meta_str(w, kv->v.str.s, kv->v.str.len);
    case GGUF_ARR:
        if (kv->v.arr.type != GGUF_STR) return gguf_writer_kv_arr(w, kv->key, kv->v.arr.type, kv->v.arr.data, kv->v.arr.n);
        if (begin_kv(w, kv->key, GGUF_ARR) || meta_u32(w, GGUF_STR) || meta_u64(w, kv->v.arr.n)) return -1;
        for (uint64_t i = 0; i < kv->v.arr.n; i++) {
            const gguf_string *s = &((const gguf_string *)kv->v.arr.data)[i];
            if (meta_str(w, s->s, s->len)) return -1;
        }
        return 0;
    default: { /* scalars are held widened in the union; narrow them back */
        uint8_t raw[8];
        uint8_t u8 = (uint8_t)kv->v.u64; uint16_t u16 = (uint16_t)kv->v.u64; uint32_t u32 = (uint32_t)kv->v.u64;
        int8_t i8 = (int8_t)kv->v.i64; int16_t i16 = (int16_t)kv->v.i64; int32_t i32 = (int32_t)kv->v.i64;
        float f32 = (float)kv->v.f64;
        switch (kv->type) {
        case GGUF_U8: memcpy(raw, &u8, 1); break;
        case GGUF_I8: memcpy(raw, &i8, 1); break;
        case GGUF_U16: memcpy(raw, &u16, 2); break;
        case GGUF_I16: memcpy(raw, &i16, 2); break;
        case GGUF_U32: memcpy(raw, &u32, 4); break;
        case GGUF_I32: memcpy(raw, &i32, 4); break;
        case GGUF_F32: memcpy(raw, &f32, 4); break;
        case GGUF_BOOL: raw[0] = kv->v.b ? 1 : 0; break;
        case GGUF_U64: case GGUF_I64: case GGUF_F64: memcpy(raw, &kv->v.u64, 8); break;
        default: return wfail(w, "kv '%s': invalid type %d", kv->key, (int)kv->type);
        }
        return gguf_writer_kv(w, kv->key, kv->type, raw);
    }
    }
}

/* ---- tensors ---- */
int gguf_writer_tensor(gguf_writer *w, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type) {
    if (w->failed) return -1;
    if (!name) return wfail(w, "NULL tensor name");
    if (w->header_done) return wfail(w, "tensor '%s' declared after tensor data started", name);
    size_t len = strlen(name);
    if (len == 0 || len > GGUF_MAX_NAME) return wfail(w, "tensor name '%s' must be 1..%d bytes", name, GGUF_MAX_NAME);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS || !ne)
        return wfail(w, "tensor '%s': n_dims %u out of range 1..%d", name, n_dims, GGUF_MAX_DIMS);
    const e0_type_traits *tr = e0_type_traits_of(type);
    if (!tr || !tr->weight_ok) return wfail(w, "tensor '%s': unsupported tensor type %u", name, type);
    wtensor t = {.n_dims = n_dims, .type = type, .ne = {1, 1, 1, 1}};
    memcpy(t.name, name, len + 1);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX) return wfail(w, "tensor '%s': dim %u is %" PRIu64, name, d, ne[d]);
        if (e0_mul_overflow(nel, ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return wfail(w, "tensor '%s': element count overflows", name);
        t.ne[d] = ne[d];
    }
    if (t.ne[0] % (uint64_t)tr->block_size)
        return wfail(w, "tensor '%s': ne[0] = %" PRIu64 " is not a multiple of %s's block size %" PRId64, name, t.ne[0],
                     tr->name, tr->block_size);
    uint64_t nbytes = t.ne[0] / (uint64_t)tr->block_size, padded, end;
    bool over = e0_mul_overflow(nbytes, tr->type_size, &nbytes);
    for (uint32_t d = 1; d < GGUF_MAX_DIMS && !over; d++) over = e0_mul_overflow(nbytes, t.ne[d], &nbytes);
    if (over || e0_add_overflow(nbytes, pad_to(nbytes, w->alignment), &padded) ||
        e0_add_overflow(w->data_size, padded, &end))
        return wfail(w, "tensor '%s': byte size overflows", name);
    t.nbytes = nbytes;
    t.offset = w->data_size;

    if (w->n_tensors == w->tensors_cap) {
        uint64_t cap = w->tensors_cap ? w->tensors_cap * 2 : 64;
        wtensor *ts = realloc(w->tensors, cap * sizeof *ts);
        if (!ts) return wfail(w, "out of memory");
        w->tensors = ts;
        w->tensors_cap = cap;
    }
    w->tensors[w->n_tensors] = t;
    int dup = set_insert(&w->tensor_set, name, w->n_tensors, tname_at, w);
    if (dup) return dup < 0 ? wfail(w, "out of memory") : wfail(w, "duplicate tensor name '%s'", name);
    w->n_tensors++;
    w->data_size = end;
    return 0;
}

/* ---- data ---- */
static int write_header(gguf_writer *w) {
    w->header_done = true;
    uint32_t version = GGUF_VERSION_WRITTEN;
    if (put(w, GGUF_MAGIC, 4) || put(w, &version, 4) || put(w, &w->n_tensors, 8) || put(w, &w->n_kv, 8) ||
        put(w, w->meta, w->meta_len))
        return -1;
    uint64_t pos = 24 + w->meta_len;
    /* The alignment may have been set after tensors were declared: recompute offsets. */
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        wtensor *t = &w->tensors[i];
        uint64_t len = strlen(t->name);
        t->offset = off;
        if (e0_add_overflow(off, t->nbytes, &off) || e0_add_overflow(off, pad_to(off, w->alignment), &off))
            return wfail(w, "data section size overflows");
        if (put(w, &len, 8) || put(w, t->name, len) || put(w, &t->n_dims, 4) || put(w, t->ne, 8ull * t->n_dims) ||
            put(w, &t->type, 4) || put(w, &t->offset, 8))
            return -1;
        pos += 8 + len + 4 + 8ull * t->n_dims + 4 + 8;
    }
    return put_zeros(w, pad_to(pos, w->alignment));
}

int gguf_writer_data(gguf_writer *w, const void *data, uint64_t len) {
    if (w->failed) return -1;
    if (len && !data) return wfail(w, "NULL tensor data");
    if (!w->header_done && write_header(w)) return -1;
    const uint8_t *p = data;
    while (len > 0) {
        if (w->cur >= w->n_tensors)
            return wfail(w, "%" PRIu64 " bytes of data beyond the %" PRIu64 " declared tensors", len, w->n_tensors);
        wtensor *t = &w->tensors[w->cur];
        uint64_t take = t->nbytes - w->cur_done;
        if (take > len) take = len;
        if (put(w, p, take)) return -1;
        p += take;
        len -= take;
        w->cur_done += take;
        if (w->cur_done == t->nbytes) {
            if (put_zeros(w, pad_to(t->nbytes, w->alignment))) return -1;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return 0;
}

/* ---- close ---- */
static void writer_free(gguf_writer *w) {
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    free(w->key_set.slots);
    free(w->tensor_set.slots);
    free(w->tensors);
    free(w->meta);
    free(w->buf);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

int gguf_writer_close(gguf_writer *w, e0_err *e) {
    if (!w) return e0_fail(e, "gguf_writer_close: no writer");
    if (!w->failed && !w->header_done) write_header(w);
    if (!w->failed && w->cur < w->n_tensors)
        wfail(w, "tensor '%s' got %" PRIu64 " of its %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64 " tensors complete)",
              w->tensors[w->cur].name, w->cur_done, w->tensors[w->cur].nbytes, w->cur, w->n_tensors);
    if (!w->failed) flush_buf(w);
    if (close(w->fd) != 0) wfail(w, "close failed: %s", strerror(errno));
    if (!w->failed && rename(w->tmp_path, w->path) != 0)
        wfail(w, "cannot rename %s to %s: %s", w->tmp_path, w->path, strerror(errno));
    int rc = 0;
    if (w->failed) {
        unlink(w->tmp_path);
        rc = e0_fail(e, "%s", w->err);
    }
    writer_free(w);
    return rc;
}
