/* cpus.c — usable CPUs (affinity mask and cgroup CPU quota) and thread-count capping; see cpus.h.
 *
 * The cgroup directories come from /proc/self/cgroup (one "id:controllers:path" line per
 * hierarchy; "0::path" is cgroup v2) and /proc/self/mountinfo (where each hierarchy is mounted,
 * and which of its directories the mount shows: in a container the mount's root is often the
 * container's own cgroup). The quota of a cgroup's ancestors limits it too, so every directory
 * from the process's cgroup up to the mount point is read. */
#include "base/cpus.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

#define TEXT_MAX (1 << 23) /* mountinfo of a host with many containers can be large */
#define PATH_LEN 4096

/* The whole of a small (possibly /proc, size-less) file, NUL-terminated; NULL when unreadable. */
static char *slurp(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap < TEXT_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
        }
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (buf) buf[n] = 0;
    return buf;
}

/* Does the comma-separated list s[0..len) contain the item `want`? */
static bool list_has(const char *s, size_t len, const char *want) {
    size_t w = strlen(want);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && s[j] != ',') j++;
        if (j - i == w && !strncmp(s + i, want, w)) return true;
        i = j + 1;
    }
    return false;
}

/* Copy the mountinfo field at s (space-terminated) into out, decoding the \ooo escapes the kernel
 * writes for spaces, tabs, newlines and backslashes. Returns the end of the field. */
static const char *mount_field(const char *s, char *out, size_t cap) {
    size_t n = 0;
    while (*s && *s != ' ' && *s != '\n') {
        char c = *s++;
        if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7') {
            c = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
            s += 3;
        }
        if (n + 1 < cap) out[n++] = c;
    }
    out[n] = 0;
    return s;
}

/* Find the mount of the v1 hierarchy that has controller `ctrl` (v2 when ctrl is NULL): its root
 * (the hierarchy path it shows) and mount point. 0 when found. */
static int find_mount(const char *mountinfo, const char *ctrl, char *root, char *point, size_t cap) {
    for (const char *line = mountinfo; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* "id parent major:minor root mount-point options [optional...] - fstype source super-options" */
        const char *sep = NULL;
        for (const char *p = line; p + 2 < line + len; p++)
            if (p[0] == ' ' && p[1] == '-' && p[2] == ' ') {
                sep = p;
                break;
            }
        if (sep) {
            const char *p = line;
            for (int f = 0; f < 3 && p < sep; f++) { /* skip id, parent, major:minor */
                p = memchr(p, ' ', (size_t)(sep - p));
                if (!p) break;
                p++;
            }
            if (p && p < sep) {
                char r[PATH_LEN], m[PATH_LEN];
                p = mount_field(p, r, sizeof r);
                if (*p == ' ') mount_field(p + 1, m, sizeof m);
                else m[0] = 0;
                const char *fs = sep + 3, *fs_end = memchr(fs, ' ', (size_t)(line + len - fs));
                if (fs_end) {
                    size_t fl = (size_t)(fs_end - fs);
                    const char *src = fs_end + 1, *src_end = memchr(src, ' ', (size_t)(line + len - src));
                    const char *opts = src_end ? src_end + 1 : line + len;
                    size_t ol = (size_t)(line + len - opts);
                    bool match = ctrl ? (fl == 6 && !strncmp(fs, "cgroup", 6) && list_has(opts, ol, ctrl))
                                      : (fl == 7 && !strncmp(fs, "cgroup2", 7));
                    if (match && m[0]) {
                        snprintf(root, cap, "%s", r);
                        snprintf(point, cap, "%s", m);
                        return 0;
                    }
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* The cgroup path of the v1 hierarchy with controller `ctrl` (v2 when NULL) in /proc/self/cgroup. */
static int find_cgroup(const char *proc_cgroup, const char *ctrl, char *path, size_t cap) {
    for (const char *line = proc_cgroup; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line + len - c1 - 1)) : NULL;
        if (c2) {
            bool v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
            bool match = ctrl ? (!v2 && list_has(c1 + 1, (size_t)(c2 - c1 - 1), ctrl)) : v2;
            if (match) {
                snprintf(path, cap, "%.*s", (int)(line + len - c2 - 1), c2 + 1);
                return 0;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* The first one or two integers of a file ("max" reads as -1); the number read, 0 if none. */
static int read_numbers(const char *path, long long *a, long long *b) {
    char *t = slurp(path);
    if (!t) return 0;
    int n = 0;
    char *p = t, *end;
    for (long long *out = a; out && n < 2; out = (n == 1 ? b : NULL)) {
        while (*p == ' ' || *p == '\t') p++;
        if (!strncmp(p, "max", 3)) {
            *out = -1;
            p += 3;
        } else {
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (errno || end == p) break;
            *out = v;
            p = end;
        }
        n++;
    }
    free(t);
    return n;
}

/* ceil(quota / period), or 0 when there is no limit. */
static int quota_cpus(long long quota, long long period) {
    if (quota <= 0 || period <= 0) return 0;
    long long n = (quota + period - 1) / period;
    return n > 4096 ? 4096 : (int)n;
}

/* The smallest quota from the directory of cgroup `path` (under the mount of `mroot` at `point`)
 * up to the mount point; v2 reads cpu.max, v1 cpu.cfs_quota_us and cpu.cfs_period_us. */
static int hierarchy_limit(const char *root, const char *point, const char *mroot, const char *path, bool v2) {
    size_t rl = strlen(mroot);
    if (rl == 1 && mroot[0] == '/') rl = 0;
    const char *rel = path;
    if (rl) {
        /* the mount shows only mroot and below; a path outside it cannot be read */
        if (strncmp(path, mroot, rl) != 0 || (path[rl] != 0 && path[rl] != '/')) rel = "";
        else rel = path + rl;
    }
    char dir[PATH_LEN];
    int n = snprintf(dir, sizeof dir, "%s%s%s", root, point, rel);
    if (n < 0 || (size_t)n >= sizeof dir) return 0;
    size_t base = strlen(root) + strlen(point);
    int best = 0;
    for (;;) {
        char f[PATH_LEN + 32];
        long long q = -1, p = -1;
        if (v2) {
            snprintf(f, sizeof f, "%s/cpu.max", dir);
            if (read_numbers(f, &q, &p) < 2) q = -1;
        } else {
            snprintf(f, sizeof f, "%s/cpu.cfs_quota_us", dir);
            if (read_numbers(f, &q, NULL) == 1) {
                snprintf(f, sizeof f, "%s/cpu.cfs_period_us", dir);
                if (read_numbers(f, &p, NULL) != 1) q = -1;
            }
        }
        int c = quota_cpus(q, p);
        if (c > 0 && (best == 0 || c < best)) best = c;
        /* up one directory, not above the mount point */
        size_t len = strlen(dir);
        while (len > base && dir[len - 1] == '/') len--;
        if (len <= base) break;
        while (len > base && dir[len - 1] != '/') len--;
        while (len > base && dir[len - 1] == '/') len--;
        dir[len] = 0;
    }
    return best;
}

int e0_cgroup_cpu_limit(const char *proc_cgroup, const char *mountinfo, const char *root) {
    if (!proc_cgroup || !mountinfo) return 0;
    if (!root) root = "";
    char path[PATH_LEN], mroot[PATH_LEN], point[PATH_LEN];
    int best = 0;
    for (int v2 = 0; v2 <= 1; v2++) {
        const char *ctrl = v2 ? NULL : "cpu";
        if (find_cgroup(proc_cgroup, ctrl, path, sizeof path) || find_mount(mountinfo, ctrl, mroot, point, sizeof point))
            continue;
        int c = hierarchy_limit(root, point, mroot, path, v2);
        if (c > 0 && (best == 0 || c < best)) best = c;
    }
    return best;
}

/* CPUs in the affinity mask (0 when it cannot be read). */
static int affinity_cpus(void) {
    for (int n = 1024; n <= (1 << 16); n *= 4) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set) return 0;
        size_t sz = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(sz, set);
        if (sched_getaffinity(0, sz, set) == 0) {
            int c = CPU_COUNT_S(sz, set);
            CPU_FREE(set);
            return c;
        }
        CPU_FREE(set);
        if (errno != EINVAL) return 0; /* EINVAL: the kernel's mask is larger than ours */
    }
    return 0;
}

int e0_usable_cpus(void) {
    int n = affinity_cpus();
    if (n <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int)online : 1;
    }
    char *cg = slurp("/proc/self/cgroup"), *mi = cg ? slurp("/proc/self/mountinfo") : NULL;
    int q = e0_cgroup_cpu_limit(cg, mi, "");
    free(cg);
    free(mi);
    if (q > 0 && q < n) n = q;
    return n > 0 ? n : 1;
}

bool e0_threads_forced(void) {
    const char *v = getenv(E0_FORCE_THREADS_ENV);
    return v && v[0] && strcmp(v, "0") != 0;
}

int e0_threads_cap(int n) {
    if (n < 1) n = 1;
    if (e0_threads_forced()) return n;
    int u = e0_usable_cpus();
    return n < u ? n : u;
}

int e0_threads_cap_warn(int n, const char *flag) {
    static _Atomic int warned;
    int c = e0_threads_cap(n);
    if (c < n && !atomic_exchange(&warned, 1))
        fprintf(stderr, "warning: %s %d > %d usable CPUs (affinity mask, cgroup CPU quota); using %d (set %s=1 to force)\n",
                flag ? flag : "threads", n, c, c, E0_FORCE_THREADS_ENV);
    return c;
}

int e0_default_threads(void) {
    int p = e0_physical_cores(), u = e0_usable_cpus();
    return p < u ? p : u;
}
