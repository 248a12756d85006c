/* report.c — `edge0-bench report render R.json` (the Markdown) and `edge0-bench report compare
 * R.json --baseline B.json`: refuses (exit 1) when the protocol, the device, the model or a
 * configuration's effective settings differ; otherwise prints each metric's change, both ranges
 * in readable units and whether the change lies beyond the noise (the ranges do not overlap and
 * the change exceeds --threshold percent); exit 2 when something is worse beyond the noise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"

static const char REPORT_USAGE[] =
    "usage: edge0-bench report render R.json\n"
    "       edge0-bench report compare R.json --baseline B.json [--threshold PCT]\n"
    "\n"
    "render   prints the report as Markdown (the same text as report.md).\n"
    "compare  refuses (exit 1, says why) when the protocol, the device, the model or the\n"
    "         effective configuration differ; otherwise prints, per configuration and metric,\n"
    "         the baseline and new median with their min-max ranges (in readable units), the\n"
    "         change, and whether it lies beyond the noise: the ranges do not overlap AND the\n"
    "         medians differ by more than --threshold percent (default 2). Only a change beyond\n"
    "         the noise is called better or worse. A report compared with itself (the same\n"
    "         content) is \"no change\".\n"
    "         Exit status: 0 when nothing is worse beyond the noise, 2 when something is,\n"
    "         1 when the reports cannot be compared (or on an error).\n";

/* A value in its unit, readable: bytes as KiB/MiB/GiB, seconds as s/ms/µs. */
static void value_unit(double v, const char *unit, char *buf, size_t cap) {
    if (!strcmp(unit, "bytes") && v >= 0 && v < 1e19) {
        static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        while (v >= 1024 && u < 4) v /= 1024, u++;
        snprintf(buf, cap, u == 0 ? "%.0f %s" : v >= 100 ? "%.0f %s" : "%.2f %s", v, units[u]);
    } else if (!strcmp(unit, "s") && fabs(v) < 1.0 && v != 0) {
        if (fabs(v) < 1e-3) snprintf(buf, cap, "%.1f us", v * 1e6);
        else snprintf(buf, cap, "%.2f ms", v * 1e3);
    } else {
        snprintf(buf, cap, fabs(v) >= 100 ? "%.0f %s" : fabs(v) >= 10 ? "%.1f %s" : "%.3g %s", v, unit);
    }
}

/* Short compact text of a JSON value (for messages), truncated. */
static void value_text(const json_t *v, char *buf, size_t cap) {
    if (!v) {
        snprintf(buf, cap, "(absent)");
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    snprintf(buf, cap, "%s", s ? s : "?");
    if (s && strlen(s) >= cap && cap > 4) strcpy(buf + cap - 4, "...");
    free(s);
}

/* Describe the first member where objects a and b differ ("runs: 3 vs 5"). */
static void first_difference(const json_t *a, const json_t *b, char *buf, size_t cap) {
    char va[160], vb[160];
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            if (!json_equal(v, json_object_get(b, k))) {
                value_text(v, va, sizeof va);
                value_text(json_object_get(b, k), vb, sizeof vb);
                snprintf(buf, cap, "%s is %s here and %s in the baseline", k, va, vb);
                return;
            }
        }
        json_object_foreach((json_t *)b, k, v) {
            if (!json_object_get(a, k)) {
                value_text(v, vb, sizeof vb);
                snprintf(buf, cap, "%s is absent here and %s in the baseline", k, vb);
                return;
            }
        }
    }
    value_text(a, va, sizeof va);
    value_text(b, vb, sizeof vb);
    snprintf(buf, cap, "%s here, %s in the baseline", va, vb);
}

static const json_t *find_config(const json_t *r, const char *name) {
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(r, "configurations"), i, c) {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, name)) return c;
    }
    return NULL;
}

/* 0 when the two reports may be compared; else 1 with the reason in why. */
static int comparable(const json_t *r, const json_t *base, char *why, size_t cap) {
    char d[600];
    const json_t *pr = json_object_get(r, "protocol"), *pb = json_object_get(base, "protocol");
    if (!json_equal(pr, pb)) {
        first_difference(pr, pb, d, sizeof d);
        snprintf(why, cap, "the protocol differs: %s", d);
        return 1;
    }
    const json_t *dr = json_object_get(r, "device"), *db = json_object_get(base, "device");
    if (!json_equal(dr, db)) {
        first_difference(dr, db, d, sizeof d);
        snprintf(why, cap, "the device differs: %s", d);
        return 1;
    }
    const json_t *mr = json_object_get(json_object_get(r, "identity"), "model_sha256");
    const json_t *mb = json_object_get(json_object_get(base, "identity"), "model_sha256");
    if (!json_is_string(mr) || e0_is_unavailable(mr) || !json_equal(mr, mb)) {
        first_difference(mr, mb, d, sizeof d);
        snprintf(why, cap, "the model differs or is unknown: sha256 %s", d);
        return 1;
    }
    size_t i;
    const json_t *name;
    json_array_foreach(json_object_get(pr, "configs"), i, name) {
        const char *n = json_string_value(name);
        const json_t *cr = n ? find_config(r, n) : NULL, *cb = n ? find_config(base, n) : NULL;
        if (!cr || !cb) {
            snprintf(why, cap, "configuration %s is missing from %s", n ? n : "?", cr ? "the baseline" : "this report");
            return 1;
        }
        const json_t *er = json_object_get(cr, "effective_config"), *eb = json_object_get(cb, "effective_config");
        if (!json_is_object(er) || !json_is_object(eb)) {
            snprintf(why, cap, "configuration %s has no effective configuration in %s (no successful process)", n,
                     json_is_object(er) ? "the baseline" : "this report");
            return 1;
        }
        if (!json_equal(er, eb)) {
            first_difference(er, eb, d, sizeof d);
            snprintf(why, cap, "the effective configuration of %s differs: %s", n, d);
            return 1;
        }
    }
    return 0;
}

static void print_engine_line(const char *label, const json_t *r) {
    const json_t *e = json_object_get(json_object_get(r, "identity"), "engine");
    char v[200];
    const json_t *commit = json_object_get(e, "git_commit");
    if (json_is_string(commit)) snprintf(v, sizeof v, "%s", json_string_value(commit));
    else value_text(commit ? commit : e, v, sizeof v);
    printf("%s engine commit %s%s\n", label, v, json_is_true(json_object_get(e, "git_dirty")) ? " (dirty)" : "");
}

static int compare(const char *path, const char *base_path, double threshold_pct) {
    e0_err e;
    json_t *r = report_load(path, &e);
    if (!r) return bench_error("%s", e.msg);
    json_t *base = report_load(base_path, &e);
    if (!base) {
        json_decref(r);
        return bench_error("%s", e.msg);
    }
    char why[800];
    if (json_equal(r, base)) { /* the same report (or a copy): nothing to weigh */
        printf("comparing %s against baseline %s: the same report, no change\n", path, base_path);
        json_decref(r);
        json_decref(base);
        return 0;
    }
    if (comparable(r, base, why, sizeof why)) {
        json_decref(r);
        json_decref(base);
        return bench_error("refusing to compare %s with baseline %s: %s", path, base_path, why);
    }
    printf("comparing %s against baseline %s (same protocol, device, model and configurations)\n", path, base_path);
    print_engine_line("baseline:", base);
    print_engine_line("this:    ", r);
    printf("noise: a change counts when the min-max ranges do not overlap and the medians differ by more than %g%%\n",
           threshold_pct);
    int n_worse = 0;
    size_t i;
    const json_t *name;
    json_array_foreach(json_object_get(json_object_get(r, "protocol"), "configs"), i, name) {
        const char *n = json_string_value(name);
        const json_t *mr = json_object_get(find_config(r, n), "metrics");
        const json_t *mb = json_object_get(find_config(base, n), "metrics");
        printf("\n%s:\n", n);
        for (size_t k = 0; k < N_METRICS; k++) {
            const json_t *a = json_object_get(mb, METRICS[k].key), *b = json_object_get(mr, METRICS[k].key);
            if (!json_is_object(a) || !json_is_object(b)) {
                printf("  %-28s not comparable (%s)\n", METRICS[k].key,
                       !json_is_object(a) ? "no value in the baseline" : "no value in this report");
                continue;
            }
            double amed = json_number_value(json_object_get(a, "median"));
            double amin = json_number_value(json_object_get(a, "min")), amax = json_number_value(json_object_get(a, "max"));
            double bmed = json_number_value(json_object_get(b, "median"));
            double bmin = json_number_value(json_object_get(b, "min")), bmax = json_number_value(json_object_get(b, "max"));
            enum e0_verdict v = e0_range_verdict(amin, amax, bmin, bmax);
            double change = amed != 0 ? 100.0 * (bmed - amed) / amed : NAN;
            if (v != E0_WITHIN_SPREAD && !(fabs(change) > threshold_pct)) v = E0_WITHIN_SPREAD; /* below the threshold */
            const char *verdict = "within the noise";
            if (v != E0_WITHIN_SPREAD) {
                bool better = (v == E0_LOWER) == (METRICS[k].lower_is_better != 0);
                verdict = better ? "better, beyond the noise" : "WORSE, beyond the noise";
                n_worse += !better;
            }
            if (amed == bmed && amin == bmin && amax == bmax) verdict = "no change";
            char t[6][48];
            value_unit(amed, METRICS[k].unit, t[0], sizeof t[0]);
            value_unit(amin, METRICS[k].unit, t[1], sizeof t[1]);
            value_unit(amax, METRICS[k].unit, t[2], sizeof t[2]);
            value_unit(bmed, METRICS[k].unit, t[3], sizeof t[3]);
            value_unit(bmin, METRICS[k].unit, t[4], sizeof t[4]);
            value_unit(bmax, METRICS[k].unit, t[5], sizeof t[5]);
            printf("  %-28s %s [%s to %s] -> %s [%s to %s], %+.1f%%: %s\n", METRICS[k].key, t[0], t[1], t[2], t[3],
                   t[4], t[5], change, verdict);
        }
    }
    if (n_worse) printf("\n%d metric(s) worse beyond the noise (exit status 2)\n", n_worse);
    json_decref(r);
    json_decref(base);
    return n_worse ? 2 : 0;
}

static int render(const char *path) {
    e0_err e;
    json_t *r = report_load(path, &e);
    if (!r) return bench_error("%s", e.msg);
    char *md = report_markdown(r);
    json_decref(r);
    if (!md) return bench_error("out of memory");
    fputs(md, stdout);
    free(md);
    return 0;
}

int bench_report(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(REPORT_USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(REPORT_USAGE, stdout);
            return 0;
        }
    if (!strcmp(argv[1], "render")) {
        if (argc != 3) return bench_error("usage: edge0-bench report render R.json");
        return render(argv[2]);
    }
    if (!strcmp(argv[1], "compare")) {
        const char *path = NULL, *base = NULL;
        double threshold = 2.0;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--baseline")) {
                if (i + 1 >= argc) return bench_error("--baseline needs a value");
                base = argv[++i];
            } else if (!strcmp(argv[i], "--threshold")) {
                e0_err e;
                if (i + 1 >= argc) return bench_error("--threshold needs a value");
                if (e0_parse_f64(argv[++i], 0, 1000, &threshold, "--threshold", &e)) return bench_error("%s", e.msg);
            } else if (argv[i][0] == '-') {
                return bench_error("report compare: unknown option '%s'", argv[i]);
            } else if (!path) {
                path = argv[i];
            } else {
                return bench_error("report compare: more than one report given");
            }
        }
        if (!path || !base) return bench_error("usage: edge0-bench report compare R.json --baseline B.json");
        return compare(path, base, threshold);
    }
    return bench_error("report: unknown action '%s' (render or compare)", argv[1]);
}
