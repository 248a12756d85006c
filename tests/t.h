/* t.h — a tiny test framework. Each test binary calls RUN(fn) per test function; a test fails if
 * any CHECK in it fails. Output: "ok NAME" / "FAIL NAME" lines (tests/run.sh counts them) and a
 * closing "# N passed, N failed". */
#ifndef E0_T_H
#define E0_T_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_cur_failed, t_npass, t_nfail;
static char t_cur_name[512];

static inline void t_begin(const char *name) {
    snprintf(t_cur_name, sizeof t_cur_name, "%s", name);
    t_cur_failed = 0;
}
static inline void t_end(void) {
    if (t_cur_failed) {
        t_nfail++;
        printf("FAIL %s\n", t_cur_name);
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
#define T_DONE() (printf("# %d passed, %d failed\n", t_npass, t_nfail), t_nfail ? 1 : 0)

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

/* Paths: the build dir (for the CLI binaries) and ../shared. */
static inline const char *t_build(void) {
    const char *b = getenv("E0_BUILD");
    return b ? b : "build";
}
static inline const char *t_shared(void) {
    const char *s = getenv("E0_SHARED");
    return s ? s : "../shared";
}
#endif
