/* t_llamacpp.h — what the two differential tests against llama.cpp (test_llamacpp.c,
 * test_tokenizer_llamacpp.c) share: where the llama.cpp install and the reference cache are
 * (lb, ref_tool, cache), the install step that finds out whether llama.cpp is available at all
 * (t_llamacpp_setup: when not, `unavailable` says why and every case is reported skipped), the
 * cache counters, and small helpers (paths, directory listings, id lines). Include after t.h. */
#ifndef E0_T_LLAMACPP_H
#define E0_T_LLAMACPP_H
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH 1024
#define CMD 16384

static char lb[PATH];            /* build dir with llamacpp/ and bin/llamacpp-ref */
static char ref_tool[PATH];      /* LB/bin/llamacpp-ref */
static char cache[PATH];         /* LB/llamacpp-ref */
static char unavailable[256];    /* non-empty: why every case is skipped */
static int n_computed, n_cached; /* references computed this run / found in the cache */

/* snprintf for paths and commands (all far below their buffers; a cut one fails to open). */
static inline int sfmt(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int sfmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n < 0 ? 0 : (size_t)n >= cap ? (int)(cap ? cap - 1 : 0) : n;
}

static inline int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}
static inline int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* qsort comparison of two char * (strcmp order). */
static inline int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names in dir ending with suffix; returns the count (names malloc'd). */
static inline int list_dir(const char *dir, const char *suffix, char **names, int cap) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *de; (de = readdir(d)) && n < cap;) {
        size_t l = strlen(de->d_name), s = strlen(suffix);
        if (l > s && !strcmp(de->d_name + l - s, suffix)) names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    return n;
}

/* Token ids of a whitespace-separated line; returns the count (at most cap). */
static inline int parse_line_ids(const char *s, int32_t *ids, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        ids[n++] = (int32_t)v;
        s = end;
    }
    return n;
}

/* LB is $E0_LLAMACPP if set, else $E0_BUILD when it has a llamacpp/ install, else build/. Runs
 * the install (the case llamacpp/install) and sets `unavailable` when llama.cpp cannot be used. */
static inline void t_llamacpp_setup(void) {
    const char *env = getenv("E0_LLAMACPP");
    char probe[PATH + 32];
    sfmt(probe, sizeof probe, "%s/llamacpp", t_build());
    sfmt(lb, sizeof lb, "%s", env && *env ? env : is_dir(probe) ? t_build() : "build");
    sfmt(ref_tool, sizeof ref_tool, "%s/bin/llamacpp-ref", lb);
    sfmt(cache, sizeof cache, "%s/llamacpp-ref", lb);
    /* tools/llamacpp.sh is what `make llamacpp BUILD=LB` runs; called directly for its exit
     * status: 3 = the registry cannot be reached (or no npm). Cheap when already installed. */
    char cmd[PATH * 3];
    mkdir(lb, 0755);
    sfmt(cmd, sizeof cmd, "sh tools/llamacpp.sh '%s' >'%s/llamacpp-setup.log' 2>&1", lb, lb);
    int rc = t_sh(cmd, NULL, 0);
    t_begin("llamacpp/install");
    if (rc == 3)
        sfmt(unavailable, sizeof unavailable, "llama.cpp could not be installed: npm registry unreachable (see %s/llamacpp-setup.log)", lb);
    if (unavailable[0]) t_skip("%s", unavailable);
    else CHECKF(rc == 0 && is_file(ref_tool), "tools/llamacpp.sh %s failed (%d): see %s/llamacpp-setup.log", lb, rc, lb);
    if (rc != 0 && !unavailable[0]) sfmt(unavailable, sizeof unavailable, "llama.cpp install failed");
    t_end();
}
#endif
