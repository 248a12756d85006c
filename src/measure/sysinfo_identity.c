/* sysinfo_identity.c — what was measured: the build identity baked in at compile time
 * ($(BUILD)/gen/e0_build_info.h, written by the Makefile), the binary's and the model's sha256
 * (libcrypto EVP), and the sha256 cache that keeps a multi-GiB model from being hashed on every
 * run. Cache file: one line per file, "<sha256> <size> <mtime_s>.<mtime_ns> <path>"; an entry
 * counts only when path, size and mtime all match. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "e0_build_info.h"
#include "measure/sysinfo.h"

#define CACHE_MAX_BYTES (1u << 20) /* a cache file larger than this is ignored and rewritten */

int e0_sha256_file(const char *path, char hex[65], e0_err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return e0_fail(e, "cannot open %s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    int rc = -1;
    if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        e0_fail(e, "sha256 of %s: cannot set up the digest", path);
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf, cap);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            e0_fail(e, "reading %s: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0) break;
        if (EVP_DigestUpdate(ctx, buf, (size_t)r) != 1) {
            e0_fail(e, "sha256 of %s failed", path);
            goto out;
        }
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
        e0_fail(e, "sha256 of %s failed", path);
        goto out;
    }
    for (unsigned i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    rc = 0;
out:
    free(buf);
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}

const char *e0_sha256_cache_path(char *buf, size_t cap) {
    const char *explicit = getenv("E0_SHA256_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (explicit && *explicit) n = snprintf(buf, cap, "%s", explicit);
    else if (xdg && *xdg == '/') n = snprintf(buf, cap, "%s/edge0-infer/sha256-cache", xdg);
    else if (home && *home == '/') n = snprintf(buf, cap, "%s/.cache/edge0-infer/sha256-cache", home);
    else return NULL;
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

/* mkdir -p of the directory part of path (best effort). */
static void make_parent_dirs(const char *path) {
    char d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d) return;
    char *slash = strrchr(d, '/');
    if (!slash || slash == d) return;
    *slash = 0;
    for (char *p = d + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(d, 0755);
        *p = '/';
    }
    mkdir(d, 0755);
}

static int valid_hex64(const char *s) {
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* Look up key "<size> <mtime> <path>" in the cache text. */
static int cache_lookup(const char *text, const char *key, char hex[65]) {
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len == 65 + klen && line[64] == ' ' && valid_hex64(line) && !memcmp(line + 65, key, klen)) {
            memcpy(hex, line, 64);
            hex[64] = 0;
            return 0;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* Rewrite the cache: old lines except those for the same path, then the new entry; written to a
 * temporary file and renamed so a concurrent reader never sees half a file. */
static void cache_store(const char *cache, const char *old, const char *path, const char *key, const char *hex) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", cache, (long)getpid()) >= (int)sizeof tmp) return;
    make_parent_dirs(cache);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    size_t plen = strlen(path);
    for (const char *line = old; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* "<hex> <size> <mtime> <path>": drop entries whose path is ours. */
        const char *sp1 = len > 65 ? memchr(line + 65, ' ', len - 65) : NULL;
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line + len - sp1 - 1)) : NULL;
        int same_path = sp2 && (size_t)(line + len - sp2 - 1) == plen && !memcmp(sp2 + 1, path, plen);
        if (!same_path && len > 0) fprintf(f, "%.*s\n", (int)len, line);
        line = nl ? nl + 1 : NULL;
    }
    fprintf(f, "%s %s\n", hex, key);
    if (fclose(f) != 0 || rename(tmp, cache) != 0) unlink(tmp);
}

int e0_sha256_file_cached(const char *path, char hex[65], e0_err *e) {
    char abs[4096];
    struct stat st;
    if (!realpath(path, abs)) return e0_fail(e, "cannot resolve %s: %s", path, strerror(errno));
    if (stat(abs, &st) != 0) return e0_fail(e, "cannot stat %s: %s", path, strerror(errno));
    if (strchr(abs, '\n')) return e0_sha256_file(abs, hex, e); /* cannot be a cache key */
    char key[4200];
    snprintf(key, sizeof key, "%lld %lld.%09ld %s", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec, abs);
    char cache_buf[4096];
    const char *cache = e0_sha256_cache_path(cache_buf, sizeof cache_buf);
    e0_err ignored;
    char *text = cache ? e0_read_text(cache, CACHE_MAX_BYTES, &ignored) : NULL;
    if (text && cache_lookup(text, key, hex) == 0) {
        free(text);
        return 0;
    }
    if (e0_sha256_file(abs, hex, e) != 0) {
        free(text);
        return -1;
    }
    if (cache) cache_store(cache, text, abs, key, hex);
    free(text);
    return 0;
}

json_t *e0_build_json(void) {
    json_t *dirty = !strcmp(E0_GIT_DIRTY, "true")    ? json_true()
                    : !strcmp(E0_GIT_DIRTY, "false") ? json_false()
                                                     : json_string("unknown");
    return json_pack("{s:s, s:s, s:o, s:s, s:s}", "version", E0_ENGINE_VERSION, "git_commit", E0_GIT_COMMIT,
                     "git_dirty", dirty, "compiler", E0_COMPILER, "cflags", E0_CFLAGS);
}

json_t *e0_engine_json(const char *simd_name) {
    json_t *o = e0_build_json();
    json_object_set_new(o, "simd", simd_name ? json_string(simd_name) : e0_unavailable("not reported"));
    char hex[65];
    e0_err e;
    json_object_set_new(o, "binary_sha256",
                        e0_sha256_file("/proc/self/exe", hex, &e) == 0 ? json_string(hex)
                                                                       : e0_unavailable("%s", e.msg));
    return o;
}

json_t *e0_model_json(const char *path, const char *architecture, json_t *tensor_types, uint64_t params_total,
                      uint64_t params_active, e0_err *e) {
    struct stat st;
    char hex[65];
    if (stat(path, &st) != 0) {
        json_decref(tensor_types);
        e0_fail(e, "cannot stat %s: %s", path, strerror(errno));
        return NULL;
    }
    if (e0_sha256_file_cached(path, hex, e) != 0) {
        json_decref(tensor_types);
        return NULL;
    }
    return json_pack("{s:s, s:I, s:I, s:s, s:o, s:o, s:I, s:I}", "path", path, "size", (json_int_t)st.st_size,
                     "mtime", (json_int_t)st.st_mtim.tv_sec, "sha256", hex, "architecture",
                     architecture ? json_string(architecture) : e0_unavailable("not reported"), "tensor_types",
                     tensor_types ? tensor_types : e0_unavailable("not reported"), "params_total",
                     (json_int_t)params_total, "params_active", (json_int_t)params_active);
}
