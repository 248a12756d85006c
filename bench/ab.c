/* ab.c — `edge0-bench ab`: paired A/B measurement for deciding whether a change stays. Runs the
 * two commands alternately (A B A B ...) so drift (heat, background work) hits both alike, takes
 * one metric from each command's JSON row, and reports the B/A ratio per pair, the median ratio
 * and its range. A verdict is given only when at least AB_MIN_PAIRS pairs succeeded and every
 * ratio lies on the same side of 1 (the spread of the ratios excludes "no change"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/stats.h"

#define AB_MIN_PAIRS 3

static const char AB_USAGE[] =
    "usage: edge0-bench ab --a 'CMD' --b 'CMD' --runs N [options]\n"
    "\n"
    "Runs A and B alternately N times each (A B A B ...) through /bin/sh -c; each must print a\n"
    "`bench` JSON row on stdout. Reports the ratio B/A of the metric per pair, the median ratio\n"
    "and its range, and a verdict only when at least 3 pairs succeeded and all ratios lie on the\n"
    "same side of 1.\n"
    "\n"
    "  --metric PATH   dotted path in the row [decode_tokens_per_second]\n"
    "  --cooldown S    idle seconds between processes [0]\n"
    "  --timeout S     stop a process after S seconds, recorded as failed [3600]\n"
    "  --json FILE     also write the pairs and the result as JSON\n";

typedef struct side {
    int ok;
    double value;
    char why[300];
} side;

static void run_side(const char *cmd, const char *metric, double timeout, side *s) {
    char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
    proc_result r;
    proc_run(argv, timeout, &r);
    s->ok = 0;
    json_t *row = r.started && r.exited && r.exit_status == 0 ? proc_last_json_row(r.out) : NULL;
    if (!row) {
        proc_describe_failure(&r, s->why, sizeof s->why);
    } else if (json_path_number(row, metric, &s->value) != 0) {
        snprintf(s->why, sizeof s->why, "the row has no numeric %s", metric);
    } else if (!(s->value > 0)) {
        snprintf(s->why, sizeof s->why, "%s is %g, not positive", metric, s->value);
    } else {
        s->ok = 1;
    }
    json_decref(row);
    proc_result_free(&r);
}

static json_t *side_json(const side *s) {
    return s->ok ? json_real(s->value) : json_pack("{s:s}", "failed", s->why);
}

int bench_ab(int argc, char **argv) {
    const char *a = NULL, *b = NULL, *metric = "decode_tokens_per_second", *json_path = NULL;
    int64_t runs = 0;
    double cooldown = 0, timeout = 3600;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(AB_USAGE, stdout);
            return 0;
        }
        if (i + 1 >= argc) return bench_error("%s needs a value (see edge0-bench ab --help)", o);
        const char *v = argv[++i];
        if (!strcmp(o, "--a")) a = v;
        else if (!strcmp(o, "--b")) b = v;
        else if (!strcmp(o, "--metric")) metric = v;
        else if (!strcmp(o, "--json")) json_path = v;
        else if (!strcmp(o, "--runs")) {
            if (e0_parse_i64(v, 1, 10000, &runs, "--runs", &e)) return bench_error("%s", e.msg);
        } else if (!strcmp(o, "--cooldown")) {
            if (e0_parse_f64(v, 0, 86400, &cooldown, "--cooldown", &e)) return bench_error("%s", e.msg);
        } else if (!strcmp(o, "--timeout")) {
            if (e0_parse_f64(v, 1, 7 * 86400, &timeout, "--timeout", &e)) return bench_error("%s", e.msg);
        } else {
            return bench_error("ab: unknown option '%s' (see edge0-bench ab --help)", o);
        }
    }
    if (!a || !b || runs == 0) return bench_error("ab needs --a, --b and --runs (see edge0-bench ab --help)");
    proc_install_signal_handlers();
    double *ratios = calloc((size_t)runs, sizeof *ratios);
    if (!ratios) return bench_error("out of memory");
    json_t *pairs = json_array();
    size_t n_ok = 0;
    for (int64_t k = 1; k <= runs && !proc_interrupted(); k++) {
        side sa, sb;
        bench_progress("pair %lld/%lld: A", (long long)k, (long long)runs);
        run_side(a, metric, timeout, &sa);
        if (cooldown > 0) proc_sleep(cooldown);
        if (proc_interrupted()) break;
        bench_progress("pair %lld/%lld: B", (long long)k, (long long)runs);
        run_side(b, metric, timeout, &sb);
        json_t *pj = json_pack("{s:I, s:o, s:o}", "pair", (json_int_t)k, "a", side_json(&sa), "b", side_json(&sb));
        if (sa.ok && sb.ok) {
            ratios[n_ok++] = sb.value / sa.value;
            json_object_set_new(pj, "ratio", json_real(sb.value / sa.value));
            printf("pair %lld: A %.6g, B %.6g, B/A %.4f\n", (long long)k, sa.value, sb.value, sb.value / sa.value);
        } else {
            printf("pair %lld: skipped: %s failed: %s\n", (long long)k, sa.ok ? "B" : "A", sa.ok ? sb.why : sa.why);
        }
        fflush(stdout);
        json_array_append_new(pairs, pj);
        if (k < runs && cooldown > 0) proc_sleep(cooldown);
    }
    json_t *result;
    int rc = 0;
    if (n_ok == 0) {
        printf("no pair succeeded: no result\n");
        result = json_pack("{s:i, s:s}", "pairs_ok", 0, "verdict", "none: no pair succeeded");
        rc = 1;
    } else {
        e0_summary s;
        e0_summarize(ratios, n_ok, &s);
        char verdict[256];
        enum e0_verdict v = e0_range_verdict(1.0, 1.0, s.min, s.max);
        if (n_ok < AB_MIN_PAIRS)
            snprintf(verdict, sizeof verdict, "none: %zu pair(s) succeeded, at least %d are needed", n_ok, AB_MIN_PAIRS);
        else if (v == E0_WITHIN_SPREAD)
            snprintf(verdict, sizeof verdict, "none: the ratios range from %.4f to %.4f, which includes 1 (no change)",
                     s.min, s.max);
        else
            snprintf(verdict, sizeof verdict, "B's %s is %s than A's in every pair (median %+.1f%%)", metric,
                     v == E0_HIGHER ? "higher" : "lower", 100.0 * (s.median - 1.0));
        printf("%s B/A: median %.4f, range %.4f to %.4f over %zu pair(s)\nverdict: %s\n", metric, s.median, s.min,
               s.max, n_ok, verdict);
        result = json_pack("{s:I, s:f, s:f, s:f, s:s}", "pairs_ok", (json_int_t)n_ok, "median_ratio", s.median,
                           "min_ratio", s.min, "max_ratio", s.max, "verdict", verdict);
    }
    if (json_path) {
        json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:o, s:o}", "a", a, "b", b, "metric", metric, "runs",
                                (json_int_t)runs, "pairs", pairs, "result", result);
        if (json_dump_file(doc, json_path, JSON_INDENT(1)) != 0) rc = bench_error("cannot write %s", json_path);
        json_decref(doc);
    } else {
        json_decref(pairs);
        json_decref(result);
    }
    free(ratios);
    return rc;
}
