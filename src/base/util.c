/* util.c — error formatting, the memory ledger, time, small parsing helpers (see util.h). */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int e0_fail(e0_err *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static _Atomic size_t mem_cur[E0_MEM_NCAT], mem_peak[E0_MEM_NCAT], mem_total_cur, mem_total_peak;

static const char *const mem_names[E0_MEM_NCAT] = {"dense_weights", "expert_slots", "staging",
                                                   "kv_cache",      "scratch",      "other",
                                                   "recurrent_state"};

const char *e0_mem_cat_name(int cat) { return cat >= 0 && cat < E0_MEM_NCAT ? mem_names[cat] : "?"; }

static void raise_peak(_Atomic size_t *peak, size_t v) {
    size_t p = atomic_load(peak);
    while (v > p && !atomic_compare_exchange_weak(peak, &p, v)) {
    }
}

/* Buffers of at least HUGE_MIN bytes (weights, expert slots, the KV cache, scratch) start on a
 * 2 MiB boundary and their whole 2 MiB pages are asked to be transparent huge pages
 * (madvise(MADV_HUGEPAGE); Debian's kernels give them only to who asks, a no-op where THP is
 * off): one TLB entry per 2 MiB instead of 512, which the kernels streaming weights from memory
 * feel (docs/perf.md, session 16: decode +8%). Only pages wholly inside the n bytes are advised,
 * so resident memory never exceeds what the ledger counts. E0_NO_THP (set, any value) turns it
 * off, for A/B runs. */
#define HUGE_MIN ((size_t)8 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)

void *e0_alloc(int cat, size_t n) {
    if (n == 0 || cat < 0 || cat >= E0_MEM_NCAT) return NULL;
    const size_t align = n >= HUGE_MIN ? HUGE_ALIGN : 64;
    size_t rounded = (n + align - 1) & ~(align - 1);
    if (rounded < n) return NULL;
    void *p = aligned_alloc(align, rounded);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    if (align == HUGE_ALIGN && !getenv("E0_NO_THP")) (void)madvise(p, n & ~(HUGE_ALIGN - 1), MADV_HUGEPAGE);
#endif
    raise_peak(&mem_peak[cat], atomic_fetch_add(&mem_cur[cat], n) + n);
    raise_peak(&mem_total_peak, atomic_fetch_add(&mem_total_cur, n) + n);
    return p;
}

void e0_free(int cat, void *p, size_t n) {
    if (!p) return;
    free(p);
    if (cat >= 0 && cat < E0_MEM_NCAT) {
        atomic_fetch_sub(&mem_cur[cat], n);
        atomic_fetch_sub(&mem_total_cur, n);
    }
}

size_t e0_mem_current(int cat) { return cat >= 0 && cat < E0_MEM_NCAT ? atomic_load(&mem_cur[cat]) : 0; }
size_t e0_mem_peak(int cat) { return cat >= 0 && cat < E0_MEM_NCAT ? atomic_load(&mem_peak[cat]) : 0; }
size_t e0_mem_total_peak(void) { return atomic_load(&mem_total_peak); }

double e0_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

char *e0_read_file(const char *path, size_t max_len, size_t *len, e0_err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        e0_fail(e, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        e0_fail(e, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > max_len) {
        e0_fail(e, "%s: file too large (%lld bytes, limit %zu)", path, (long long)st.st_size, max_len);
        close(fd);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        e0_fail(e, "%s: out of memory", path);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(buf);
        e0_fail(e, "%s: short read", path);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int e0_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out, const char *what, e0_err *e) {
    if (!s || !*s) return e0_fail(e, "%s: missing value", what);
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s) return e0_fail(e, "%s: not an integer: '%s'", what, s);
    if (v < lo || v > hi) return e0_fail(e, "%s: %lld out of range [%lld, %lld]", what, v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int e0_parse_f64(const char *s, double lo, double hi, double *out, const char *what, e0_err *e) {
    if (!s || !*s) return e0_fail(e, "%s: missing value", what);
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v)) return e0_fail(e, "%s: not a number: '%s'", what, s);
    if (v < lo || v > hi) return e0_fail(e, "%s: %g out of range [%g, %g]", what, v, lo, hi);
    *out = v;
    return 0;
}

int e0_parse_size(const char *s, uint64_t *out, const char *what, e0_err *e) {
    if (!s || !*s) return e0_fail(e, "%s: missing value", what);
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0) return e0_fail(e, "%s: not a size: '%s'", what, s);
    double mult = 1;
    if (*end) {
        const char *u = end;
        if (!strcasecmp(u, "k") || !strcasecmp(u, "kb") || !strcasecmp(u, "kib")) mult = 1024.0;
        else if (!strcasecmp(u, "m") || !strcasecmp(u, "mb") || !strcasecmp(u, "mib")) mult = 1024.0 * 1024;
        else if (!strcasecmp(u, "g") || !strcasecmp(u, "gb") || !strcasecmp(u, "gib")) mult = 1024.0 * 1024 * 1024;
        else if (!strcasecmp(u, "t") || !strcasecmp(u, "tb") || !strcasecmp(u, "tib")) mult = 1024.0 * 1024 * 1024 * 1024;
        else if (!strcasecmp(u, "b")) mult = 1;
        else return e0_fail(e, "%s: unknown size unit in '%s' (use B, KiB, MiB, GiB, TiB)", what, s);
    }
    double bytes = v * mult;
    if (bytes > 9.0e18) return e0_fail(e, "%s: size too large: '%s'", what, s);
    *out = (uint64_t)bytes;
    return 0;
}

int e0_physical_cores(void) {
    /* Count distinct (physical id, core id) pairs in /proc/cpuinfo. */
    FILE *f = fopen("/proc/cpuinfo", "r");
    int n = 0;
    if (f) {
        char line[256];
        int phys = 0;
        int seen[1024][2];
        while (fgets(line, sizeof line, f)) {
            int v;
            if (sscanf(line, "physical id : %d", &v) == 1) phys = v;
            else if (sscanf(line, "core id : %d", &v) == 1) {
                int dup = 0;
                for (int i = 0; i < n; i++)
                    if (seen[i][0] == phys && seen[i][1] == v) dup = 1;
                if (!dup && n < 1024) {
                    seen[n][0] = phys;
                    seen[n][1] = v;
                    n++;
                }
            }
        }
        fclose(f);
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = online > 0 ? (int)online : 1;
    return n;
}
