/* bound.c — `edge0-bench bound`: a sweep report's decode speed next to the memory-bandwidth
 * bound of the bytes each decode step reads (the rows' bytes_per_token), as a Markdown table row
 * per configuration. `make bench` uses it for docs/perf.md. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "stats.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median [min to max] of a row metric over the successful processes of a configuration */
static int metric(const json_t *cfg, const char *path, double *med, double *lo, double *hi) {
    const json_t *procs = json_object_get(cfg, "processes");
    double v[256];
    size_t n = 0, i;
    const json_t *p;
    json_array_foreach(procs, i, p) {
        const json_t *row = json_object_get(p, "row");
        double x;
        if (row && n < 256 && json_path_number(row, path, &x) == 0) v[n++] = x;
    }
    if (!n) return -1;
    qsort(v, n, sizeof *v, cmp_double);
    *med = e0_median(v, n);
    *lo = v[0];
    *hi = v[n - 1];
    return 0;
}

int bench_bound(int argc, char **argv) {
    const char *path = NULL, *label = "";
    double gbps = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-bench bound R.json --bandwidth GB_PER_S [--label TEXT] [--header]\n"
                 "Prints, per configuration of the report, a Markdown table row: prefill and decode\n"
                 "median [min to max], bytes read per decode step, the bound bandwidth/bytes, and\n"
                 "decode as a share of that bound.");
            return 0;
        }
        if (!strcmp(argv[i], "--header")) {
            puts("| model | configuration | prompt tokens | prefill tok/s | decode tok/s | bytes/token | bound tok/s | decode / bound |\n"
                 "| --- | --- | --- | --- | --- | --- | --- | --- |");
            continue;
        }
        if ((!strcmp(argv[i], "--bandwidth") || !strcmp(argv[i], "--label")) && i + 1 < argc) {
            if (!strcmp(argv[i], "--label")) label = argv[++i];
            else {
                char *end;
                gbps = strtod(argv[++i], &end);
                if (*end || !(gbps > 0)) return bench_error("bound: --bandwidth must be a positive number of GB/s");
            }
        } else if (argv[i][0] != '-' && !path) path = argv[i];
        else return bench_error("bound: unexpected argument '%s' (see --help)", argv[i]);
    }
    if (!path) return argc > 1 && !strcmp(argv[argc - 1], "--header") ? 0 : bench_error("bound: a report path is required");
    if (!(gbps > 0)) return bench_error("bound: --bandwidth is required");
    e0_err e;
    json_t *r = report_load(path, &e);
    if (!r) return bench_error("%s", e.msg);
    size_t i;
    const json_t *cfg;
    int rows = 0;
    json_array_foreach(json_object_get(r, "configurations"), i, cfg) {
        double pm, pl, ph, dm, dl, dh, bm, bl, bh, nm, nl, nh;
        if (metric(cfg, "decode_tokens_per_second", &dm, &dl, &dh) < 0 || metric(cfg, "bytes_per_token", &bm, &bl, &bh) < 0 ||
            metric(cfg, "prefill_tokens_per_second", &pm, &pl, &ph) < 0 || metric(cfg, "n_prompt", &nm, &nl, &nh) < 0)
            continue;
        double bound = gbps * 1e9 / bm;
        printf("| %s | %s | %.0f | %.1f [%.1f to %.1f] | %.2f [%.2f to %.2f] | %.1f MB | %.2f | %.0f%% |\n", label,
               json_string_value(json_object_get(cfg, "name")), nm, pm, pl, ph, dm, dl, dh, bm / 1e6, bound,
               100.0 * dm / bound);
        rows++;
    }
    json_decref(r);
    if (!rows) return bench_error("bound: %s has no successful process with bytes_per_token", path);
    return 0;
}
