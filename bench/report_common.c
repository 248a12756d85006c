/* report_common.c — the metrics a report summarizes, reading numbers out of `bench` rows,
 * per-configuration summaries (median, min, max), loading a report file, writing text files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"

const metric_def METRICS[] = {
    {"prefill_seconds", "First token", "s", 1},
    {"prefill_tokens_per_second", "Prefill", "tokens/s", 0},
    {"decode_tokens_per_second", "Decode", "tokens/s", 0},
    {"memory.peak_rss_bytes", "Memory peak (RSS)", "bytes", 1},
    {"itl.p50", "Inter-token latency p50", "s", 1},
    {"itl.p99", "Inter-token latency p99", "s", 1},
    {"energy.joules_per_token", "Energy", "J/token", 1},
};
const size_t N_METRICS = sizeof METRICS / sizeof METRICS[0];

int json_path_number(const json_t *row, const char *path, double *out) {
    const json_t *cur = row;
    char key[128];
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len >= sizeof key) return -1;
        memcpy(key, p, len);
        key[len] = 0;
        cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
        p = dot ? dot + 1 : p + len;
    }
    if (!cur || !json_is_number(cur)) return -1;
    double v = json_number_value(cur);
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

json_t *metric_summary_json(const json_t *processes, const metric_def *m) {
    size_t n = json_array_size(processes), k = 0;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return e0_unavailable("out of memory");
    size_t i;
    json_t *p;
    json_array_foreach(processes, i, p) {
        const char *status = json_string_value(json_object_get(p, "status"));
        if (!status || strcmp(status, "ok") != 0) continue;
        if (json_path_number(json_object_get(p, "row"), m->key, &v[k]) == 0) k++;
    }
    json_t *o;
    if (k == 0) {
        o = e0_unavailable("no successful process reported %s", m->key);
    } else {
        e0_summary s;
        e0_summarize(v, k, &s);
        o = json_pack("{s:I, s:f, s:f, s:f, s:s}", "n", (json_int_t)k, "median", s.median, "min", s.min, "max",
                      s.max, "unit", m->unit);
    }
    free(v);
    return o;
}

json_t *report_load(const char *path, e0_err *e) {
    json_error_t je;
    json_t *r = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!r) {
        e0_fail(e, "%s: not a readable JSON file (%s, line %d)", path, je.text, je.line);
        return NULL;
    }
    const char *fmt = json_string_value(json_object_get(r, "format"));
    if (!json_is_object(r) || !fmt || strcmp(fmt, REPORT_FORMAT) != 0) {
        e0_fail(e, "%s: not an edge0-bench report (format is not \"%s\")", path, REPORT_FORMAT);
        json_decref(r);
        return NULL;
    }
    static const char *required[] = {"protocol", "device", "identity", "configurations"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        if (!json_object_get(r, required[i])) {
            e0_fail(e, "%s: report has no \"%s\"", path, required[i]);
            json_decref(r);
            return NULL;
        }
    }
    if (!json_is_array(json_object_get(r, "configurations"))) {
        e0_fail(e, "%s: \"configurations\" is not an array", path);
        json_decref(r);
        return NULL;
    }
    return r;
}

int write_text_file(const char *path, const char *text, e0_err *e) {
    FILE *f = fopen(path, "w");
    if (!f) return e0_fail(e, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return e0_fail(e, "writing %s failed", path);
    return 0;
}
