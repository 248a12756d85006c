/* t.h — a tiny test framework. Each test binary calls RUN(fn) per test function; a test fails if
 * any CHECK in it fails, and is skipped (not passed) when it calls SKIP(reason) or t_skip(reason)
 * without a failed check. Output: "ok NAME" / "FAIL NAME" / "skip NAME: REASON" lines (tests/run.sh
 * counts them) and a closing "# N passed, N failed, N skipped". Shared data (../shared, or
 * $E0_SHARED) is checked up front with t_need_shared(): one FAIL line naming what is missing. */
#ifndef E0_T_H
#define E0_T_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>

static int t_cur_failed, t_npass, t_nfail, t_nskip;
static char t_cur_name[512], t_cur_skip[256];

static inline void t_begin(const char *name) {
    snprintf(t_cur_name, sizeof t_cur_name, "%s", name);
    t_cur_failed = 0;
    t_cur_skip[0] = 0;
}
/* Mark the current test skipped, with the reason (printf format); a failed check still fails it. */
static inline void t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_cur_skip, sizeof t_cur_skip, fmt, ap);
    va_end(ap);
    if (!t_cur_skip[0]) snprintf(t_cur_skip, sizeof t_cur_skip, "no reason given");
}
/* Skip the rest of the current test function (a void function run by RUN). */
#define SKIP(...)            \
    do {                     \
        t_skip(__VA_ARGS__); \
        return;              \
    } while (0)
static inline void t_end(void) {
    if (t_cur_failed) {
        t_nfail++;
        printf("FAIL %s\n", t_cur_name);
    } else if (t_cur_skip[0]) {
        t_nskip++;
        printf("skip %s: %s\n", t_cur_name, t_cur_skip);
    } else {
        t_npass++;
        printf("ok %s\n", t_cur_name);
    }
    fflush(stdout);
}
#define CHECKF(c, ...)                                                                   \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            if (t_cur_failed++ < 10) {                                                   \
                printf("  check failed %s:%d: %s: ", __FILE__, __LINE__, #c);            \
                printf(__VA_ARGS__);                                                     \
                printf("\n");                                                            \
            }                                                                            \
        }                                                                                \
    } while (0)
#define CHECK(c) CHECKF(c, "%s", "")
#define RUN(fn)          \
    do {                 \
        t_begin(#fn);    \
        fn();            \
        t_end();         \
    } while (0)
#define T_DONE() (printf("# %d passed, %d failed, %d skipped\n", t_npass, t_nfail, t_nskip), t_nfail ? 1 : 0)

/* Run a shell command; capture up to cap-1 bytes of its stdout into out (NUL-terminated; out may
 * be NULL to discard it). Returns its exit status, -1 if it did not exit normally. */
#include <sys/wait.h>
static inline int t_sh(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0;
    if (out) {
        n = fread(out, 1, cap - 1, p);
        out[n] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Seconds on the monotonic clock (for timeouts and waits). */
#include <time.h>
static inline double t_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The whole file at path, malloc'd (at least 1 byte) for the caller to free, its size in *n;
 * NULL (and *n = 0) when it cannot be opened or the memory is not there. */
static inline void *t_read_file(const char *path, size_t *n) {
    *n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *b = malloc(len > 0 ? (size_t)len : 1);
    if (b) *n = fread(b, 1, len > 0 ? (size_t)len : 0, fp);
    fclose(fp);
    return b;
}

/* Paths: the build dir (for the CLI binaries) and ../shared. */
static inline const char *t_build(void) {
    const char *b = getenv("E0_BUILD");
    return b ? b : "build";
}
static inline const char *t_shared(void) {
    const char *s = getenv("E0_SHARED");
    return s ? s : "../shared";
}

/* The shared data this test binary needs: n paths relative to t_shared(). Returns 1 when all
 * exist; otherwise prints ONE line "FAIL shared data: missing P, ..." naming each missing folder
 * or file (the outermost missing part of each path, so a missing folder is named once), counts
 * one failure and returns 0: the caller then skips (or returns T_DONE() before) what needs it. */
static inline int t_need_shared_list(const char *const *rel, int n) {
    char line[2048] = "", p[1024];
    size_t o = 0, base = strlen(t_shared());
    int nmiss = 0;
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", t_shared(), rel[i]);
        if (access(p, R_OK) == 0) continue;
        if (access(t_shared(), R_OK) != 0) p[base] = 0;
        else
            for (char *s = p + base + 1; (s = strchr(s, '/')); s++) {
                *s = 0;
                if (access(p, R_OK) != 0) break;
                *s = '/';
            }
        int named = 0; /* already named (the same missing folder)? */
        for (const char *q = line; (q = strstr(q, p)); q++) named |= (q[strlen(p)] == ',' || !q[strlen(p)]);
        if (named) continue;
        if (o < sizeof line) o += (size_t)snprintf(line + o, sizeof line - o, "%s%s", nmiss ? ", " : "", p);
        nmiss++;
    }
    if (!nmiss) return 1;
    printf("FAIL shared data: missing %s (the shared data folder is ../shared beside the repo, or $E0_SHARED)\n", line);
    t_nfail++;
    fflush(stdout);
    return 0;
}
/* The same with the paths as arguments, NULL-terminated (at most 64). */
static inline int t_need_shared(const char *rel, ...) {
    const char *list[64];
    int n = 0;
    va_list ap;
    va_start(ap, rel);
    for (const char *r = rel; r && n < 64; r = va_arg(ap, const char *)) list[n++] = r;
    va_end(ap);
    return t_need_shared_list(list, n);
}
#endif
