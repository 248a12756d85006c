/* gguf_get.c — lookups in an opened GGUF file: kv and tensor by name (through the hash indexes
 * gguf_open() built) and the typed kv getters with their type and range checks. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf_impl.h"


const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    if (!f || !key || !f->kv_index_) return NULL;
    bool found;
    uint64_t s = gguf_index_probe(f->kv_index_, f->kv_index_cap_, key, strlen(key), gguf_kv_name_at, f, &found);
    return found ? &f->kv[f->kv_index_[s] - 1] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (!f || !name || !f->tensor_index_) return NULL;
    bool found;
    uint64_t s = gguf_index_probe(f->tensor_index_, f->tensor_index_cap_, name, strlen(name), gguf_tensor_name_at, f, &found);
    return found ? &f->tensors[f->tensor_index_[s] - 1] : NULL;
}

const char *gguf_vtype_name(enum gguf_vtype t) {
    static const char *const names[GGUF_VTYPE_COUNT] = {"u8",   "i8",  "u16",   "i16", "u32", "i32", "f32",
                                                        "bool", "str", "array", "u64", "i64", "f64"};
    return (unsigned)t < GGUF_VTYPE_COUNT ? names[t] : "invalid";
}

static int wrong_type(const gguf_file *f, const gguf_kv *kv, const char *wanted, e0_err *e) {
    if (kv->type == GGUF_ARR)
        return e0_fail(e, "%s: key '%s' is an array of %s, expected %s", f->path, kv->key, gguf_vtype_name(kv->v.arr.type),
                       wanted);
    return e0_fail(e, "%s: key '%s' has type %s, expected %s", f->path, kv->key, gguf_vtype_name(kv->type), wanted);
}

/* Signed/unsigned views of an integer kv: is_neg tells which half of the union is meaningful. */
static bool kv_is_signed(const gguf_kv *kv) {
    return kv->type == GGUF_I8 || kv->type == GGUF_I16 || kv->type == GGUF_I32 || kv->type == GGUF_I64;
}

int gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (!gguf_vtype_is_int(kv->type)) return wrong_type(f, kv, "an integer", e);
    if (kv_is_signed(kv)) *out = kv->v.i64;
    else if (kv->v.u64 > (uint64_t)INT64_MAX)
        return e0_fail(e, "%s: key '%s' = %" PRIu64 " is out of range for int64", f->path, key, kv->v.u64);
    else *out = (int64_t)kv->v.u64;
    return 1;
}

int gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (!gguf_vtype_is_int(kv->type)) return wrong_type(f, kv, "an integer", e);
    if (kv_is_signed(kv) ? (kv->v.i64 < 0 || kv->v.i64 > (int64_t)UINT32_MAX) : kv->v.u64 > UINT32_MAX) {
        if (kv_is_signed(kv))
            return e0_fail(e, "%s: key '%s' = %" PRId64 " is out of range for u32", f->path, key, kv->v.i64);
        return e0_fail(e, "%s: key '%s' = %" PRIu64 " is out of range for u32", f->path, key, kv->v.u64);
    }
    *out = kv_is_signed(kv) ? (uint32_t)kv->v.i64 : (uint32_t)kv->v.u64;
    return 1;
}

int gguf_get_f32(const gguf_file *f, const char *key, float *out, e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (kv->type != GGUF_F32 && kv->type != GGUF_F64) return wrong_type(f, kv, "f32 or f64", e);
    /* An f64 that is finite but beyond float range would silently become infinity. */
    if (isfinite(kv->v.f64) && fabs(kv->v.f64) > 3.4028234663852886e38)
        return e0_fail(e, "%s: key '%s' = %g is out of range for f32", f->path, key, kv->v.f64);
    *out = (float)kv->v.f64;
    return 1;
}

int gguf_get_bool(const gguf_file *f, const char *key, bool *out, e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (kv->type != GGUF_BOOL) return wrong_type(f, kv, "bool", e);
    *out = kv->v.b;
    return 1;
}

int gguf_get_str(const gguf_file *f, const char *key, const gguf_string **out, e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (kv->type != GGUF_STR) return wrong_type(f, kv, "str", e);
    *out = &kv->v.str;
    return 1;
}

int gguf_get_arr(const gguf_file *f, const char *key, enum gguf_vtype elem, const void **data, uint64_t *n,
                 e0_err *e) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return 0;
    if (kv->type != GGUF_ARR || kv->v.arr.type != elem) {
        char wanted[48];
        snprintf(wanted, sizeof wanted, "an array of %s", gguf_vtype_name(elem));
        return wrong_type(f, kv, wanted, e);
    }
    *data = kv->v.arr.data;
    *n = kv->v.arr.n;
    return 1;
}
