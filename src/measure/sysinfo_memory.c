/* sysinfo_memory.c — the process's memory: VmHWM/VmRSS, PSS from smaps_rollup, the memory
 * cgroup's usage/peak/limit (v1 and v2) and the engine ledger's peaks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/sysinfo.h"

/* v1 reports "no limit" as a huge page-rounded number; anything this large is no limit. */
#define CGROUP_V1_NO_LIMIT (UINT64_C(1) << 62)

static json_t *kb_value(const char *text, const char *key, const char *src, const char *why_missing) {
    uint64_t v;
    if (!text) return e0_unavailable("%s", why_missing);
    if (e0_parse_kb_field(text, key, &v) != 0) return e0_unavailable("no %s in %s", key, src);
    return json_integer((json_int_t)v);
}

/* A cgroup file holding one number (or "max"); -1 unreadable, 1 "max", 0 number. */
static int read_cgroup_number(const char *dir, const char *file, uint64_t *v, char *why, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    e0_err e;
    char *t = e0_read_text(path, 256, &e);
    if (!t) {
        e0_copy_str(why, cap, e.msg);
        return -1;
    }
    int rc = 0;
    if (!strncmp(t, "max", 3)) {
        rc = 1;
    } else {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(t, &end, 10);
        if (errno || end == t || (*end && *end != '\n')) {
            snprintf(why, cap, "%.500s: not a number", path);
            rc = -1;
        } else {
            *v = x;
        }
    }
    free(t);
    return rc;
}

static json_t *cgroup_number_json(const char *dir, const char *file) {
    uint64_t v = 0;
    char why[600];
    int rc = read_cgroup_number(dir, file, &v, why, sizeof why);
    if (rc < 0) return e0_unavailable("%s", why);
    if (rc > 0) return json_string("max");
    return json_integer((json_int_t)v);
}

/* Find the cgroup path for a controller in /proc/self/cgroup text: v2 when controller == NULL
 * ("0::/path"), else the v1 line whose controller list contains it. */
static int find_cgroup_path(const char *text, const char *controller, char *out, size_t cap) {
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = 0;
            char *c1 = strchr(buf, ':');
            char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (c2) {
                *c1 = *c2 = 0;
                const char *ctrls = c1 + 1, *path = c2 + 1;
                int match = 0;
                if (!controller) {
                    match = !strcmp(buf, "0") && *ctrls == 0;
                } else {
                    char list[512];
                    e0_copy_str(list, sizeof list, ctrls);
                    for (char *save, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        if (!strcmp(tok, controller)) match = 1;
                }
                if (match && strlen(path) < cap && !strstr(path, "..")) {
                    e0_copy_str(out, cap, path);
                    return 0;
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

json_t *e0_cgroup_memory_json_at(const char *text, const char *root) {
    char path[512], dir[1024];
    if (!text) return e0_unavailable("cannot read /proc/self/cgroup");
    if (find_cgroup_path(text, "memory", path, sizeof path) == 0) {
        snprintf(dir, sizeof dir, "%s/memory%s", root, path);
        uint64_t limit = 0;
        char why[600];
        int rc = read_cgroup_number(dir, "memory.limit_in_bytes", &limit, why, sizeof why);
        if (rc < 0) return e0_unavailable("cgroup v1 %s: %s", path, why);
        if (rc > 0 || limit >= CGROUP_V1_NO_LIMIT)
            return e0_unavailable("cgroup v1 %s has no memory limit", path);
        return json_pack("{s:i, s:s, s:o, s:o, s:I}", "version", 1, "path", path, "usage_bytes",
                         cgroup_number_json(dir, "memory.usage_in_bytes"), "peak_bytes",
                         cgroup_number_json(dir, "memory.max_usage_in_bytes"), "limit_bytes", (json_int_t)limit);
    }
    if (find_cgroup_path(text, NULL, path, sizeof path) == 0) {
        snprintf(dir, sizeof dir, "%s%s", root, path);
        uint64_t limit = 0;
        char why[600];
        int rc = read_cgroup_number(dir, "memory.max", &limit, why, sizeof why);
        if (rc < 0) return e0_unavailable("cgroup v2 %s: %s", path, why);
        if (rc > 0) return e0_unavailable("cgroup v2 %s has no memory limit", path);
        /* memory.peak exists from Linux 5.19; older kernels give "unavailable: ...". */
        return json_pack("{s:i, s:s, s:o, s:o, s:I}", "version", 2, "path", path, "usage_bytes",
                         cgroup_number_json(dir, "memory.current"), "peak_bytes",
                         cgroup_number_json(dir, "memory.peak"), "limit_bytes", (json_int_t)limit);
    }
    return e0_unavailable("no memory cgroup in /proc/self/cgroup");
}

static json_t *ledger_json(void) {
    json_t *o = json_object();
    for (int c = 0; c < E0_MEM_NCAT; c++)
        json_object_set_new(o, e0_mem_cat_name(c), json_integer((json_int_t)e0_mem_peak(c)));
    json_object_set_new(o, "total", json_integer((json_int_t)e0_mem_total_peak()));
    return o;
}

json_t *e0_memory_json(void) {
    e0_err e1, e2, e3;
    char *status = e0_read_text("/proc/self/status", 1 << 16, &e1);
    char *rollup = e0_read_text("/proc/self/smaps_rollup", 1 << 16, &e2);
    char *cgroup = e0_read_text("/proc/self/cgroup", 1 << 16, &e3);
    char why_rollup[600];
    e0_copy_str(why_rollup, sizeof why_rollup, rollup ? "" : e2.msg);
    json_t *o = json_object();
    json_object_set_new(o, "peak_rss_bytes", kb_value(status, "VmHWM:", "/proc/self/status", e1.msg));
    json_object_set_new(o, "rss_bytes", kb_value(status, "VmRSS:", "/proc/self/status", e1.msg));
    json_object_set_new(o, "pss_bytes", kb_value(rollup, "Pss:", "smaps_rollup", why_rollup));
    json_object_set_new(o, "pss_anon_bytes", kb_value(rollup, "Pss_Anon:", "smaps_rollup", why_rollup));
    json_object_set_new(o, "pss_file_bytes", kb_value(rollup, "Pss_File:", "smaps_rollup", why_rollup));
    json_object_set_new(o, "pss_peak", e0_unavailable("no kernel counter"));
    json_object_set_new(o, "cgroup", e0_cgroup_memory_json_at(cgroup, "/sys/fs/cgroup"));
    json_object_set_new(o, "ledger_peak_bytes", ledger_json());
    free(status);
    free(rollup);
    free(cgroup);
    return o;
}
