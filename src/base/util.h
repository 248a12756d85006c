/* util.h — small shared helpers: error reporting, the memory ledger, time, checked math.
 *
 * Errors: functions that can fail take an `e0_err *` and return -1 (or NULL) after filling it
 * with one human-readable line via e0_fail(). Callers carry the error up unchanged; the CLI
 * prints it as "edge0-infer: <msg>" and exits 1.
 *
 * Also: FNV-1a hashing, checked math, strict flag parsing.
 *
 * Memory ledger: every large engine allocation goes through e0_alloc(category, n) so that the
 * current and peak bytes per category (dense weights, expert slots, KV cache, ...) are known. */
#ifndef E0_UTIL_H
#define E0_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E0_ERR_LEN 512
typedef struct e0_err {
    char msg[E0_ERR_LEN];
} e0_err;

/* Format msg into *e (if e != NULL) and return -1. */
int e0_fail(e0_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Memory ledger categories. */
enum e0_mem_cat {
    E0_MEM_DENSE = 0, /* resident non-expert weights */
    E0_MEM_EXPERTS,   /* routed-expert weights or slots */
    E0_MEM_STAGING,   /* I/O staging buffers (none now: O_DIRECT reads land in the expert slots) */
    E0_MEM_KV,        /* KV cache */
    E0_MEM_SCRATCH,   /* activations and other per-step buffers */
    E0_MEM_OTHER,     /* tokenizer, metadata, ... */
    E0_MEM_RECURRENT, /* per-sequence recurrent state of hybrid models (DeltaNet conv + delta-rule states) */
    E0_MEM_NCAT
};
const char *e0_mem_cat_name(int cat);
/* 64-byte aligned (2 MiB from 8 MiB up, with transparent huge pages asked for: util.c), NOT zeroed
 * (large buffers are overwritten anyway); NULL when n == 0 or out of memory. Accounted in `cat`. */
void *e0_alloc(int cat, size_t n);
void e0_free(int cat, void *p, size_t n);
size_t e0_mem_current(int cat);
size_t e0_mem_peak(int cat);
size_t e0_mem_total_peak(void);

/* Monotonic time in seconds. */
double e0_now(void);

/* FNV-1a (64-bit) over n bytes: for hash tables and seeds, not for security. */
static inline uint64_t e0_fnv1a(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* Checked arithmetic: return true on overflow. */
static inline bool e0_mul_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool e0_add_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }

/* Read a whole (small) file into a NUL-terminated buffer; *len excludes the NUL. max_len bounds it. */
char *e0_read_file(const char *path, size_t max_len, size_t *len, e0_err *e);

/* Parse helpers for flags: strict, whole-string, range-checked. Return -1 with an error on junk. */
int e0_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, e0_err *e);
int e0_parse_f64(const char *s, double lo, double hi, double *out, const char *what, e0_err *e);
/* Sizes like "3GiB", "512MiB", "1000000", "2G" (powers of 1024). */
int e0_parse_size(const char *s, uint64_t *out, const char *what, e0_err *e);

/* Number of physical cores (falls back to online CPUs). */
int e0_physical_cores(void);

#endif
