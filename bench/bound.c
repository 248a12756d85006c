/* bound.c — `edge0-bench bound`: a sweep report's decode speed next to the memory-bandwidth
 * bound of the bytes each decode step reads (the rows' bytes_per_token), as a Markdown table row
 * per configuration. `make bench` uses it for docs/perf.md. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/stats.h"

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

/* `edge0-bench stream-row ROW.json --disk-mbps X --label L [--header]`: one Markdown row for the
 * expert-streaming benchmark (tools/bench_stream.sh) from one `edge0-infer bench` JSON row:
 * decode speed next to the disk-bandwidth bound of the bytes actually read per token, the reads
 * and the time decode waited for them, and the routing the run used (config.routing: "replay
 * ..." for a replayed trace, so a replay never reads as a real run). A row without the streaming
 * accounting (llamacpp-bench's, llama.cpp reading through mmap) gets n/a in those columns. */
static void fmt_rate(const json_t *v, char *buf, size_t cap) {
    if (json_is_number(v)) snprintf(buf, cap, "%.3f", json_number_value(v));
    else snprintf(buf, cap, "n/a");
}

int bench_stream_row(int argc, char **argv) {
    const char *path = NULL, *label = "";
    double disk = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-bench stream-row ROW.json --disk-mbps X [--label TEXT] | --header\n"
                 "One Markdown row: routing, decode tok/s, MB and reads per token, ms per token waited for\n"
                 "reads, the disk bound X / MB per token, the share reached, cache and prediction hit\n"
                 "rates, peak RSS, cgroup peak, time to first token (n/a where the row lacks a field).");
            return 0;
        }
        if (!strcmp(argv[i], "--header")) {
            puts("| configuration | routing | decode tok/s | MB read/token | reads/token | stall ms/token | disk bound tok/s | "
                 "decode / bound | cache hit rate | prediction hit rate | peak RSS MiB | cgroup peak MiB | first token s |\n"
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
            return 0;
        }
        if (!strcmp(argv[i], "--label") && i + 1 < argc) label = argv[++i];
        else if (!strcmp(argv[i], "--disk-mbps") && i + 1 < argc) {
            char *end;
            disk = strtod(argv[++i], &end);
            if (*end || !(disk > 0)) return bench_error("stream-row: --disk-mbps must be a positive number");
        } else if (argv[i][0] != '-' && !path) path = argv[i];
        else return bench_error("stream-row: unexpected argument '%s' (see --help)", argv[i]);
    }
    if (!path || !(disk > 0)) return bench_error("stream-row: a row file and --disk-mbps are required");
    e0_err e;
    size_t len;
    char *text = e0_read_file(path, 64 << 20, &len, &e);
    if (!text) return bench_error("%s", e.msg);
    json_t *row = proc_last_json_row(text);
    free(text);
    if (!row) return bench_error("stream-row: no JSON row in %s", path);
    double tps, rss, first;
    if (json_path_number(row, "decode_tokens_per_second", &tps) || json_path_number(row, "memory.peak_rss_bytes", &rss) ||
        json_path_number(row, "prefill_seconds", &first)) {
        json_decref(row);
        return bench_error("stream-row: %s lacks decode_tokens_per_second, memory.peak_rss_bytes or prefill_seconds", path);
    }
    double cg, bpt = 0, reads, wait;
    char cgs[32], hit[32], pred[32], mb[32] = "n/a", rd[32] = "n/a", st[32] = "n/a", bd[32] = "n/a", share[32] = "n/a";
    if (json_path_number(row, "memory.cgroup.peak_bytes", &cg) == 0) snprintf(cgs, sizeof cgs, "%.0f", cg / 1048576.0);
    else snprintf(cgs, sizeof cgs, "n/a");
    const json_t *io = json_object_get(row, "io");
    fmt_rate(json_object_get(io, "cache_hit_rate"), hit, sizeof hit);
    fmt_rate(json_object_get(io, "prediction_hit_rate"), pred, sizeof pred);
    if (json_path_number(row, "io.bytes_read_per_token", &bpt) == 0) {
        snprintf(mb, sizeof mb, "%.1f", bpt / 1e6);
        if (bpt > 0) {
            snprintf(bd, sizeof bd, "%.2f", disk * 1e6 / bpt);
            snprintf(share, sizeof share, "%.0f%%", 100 * tps / (disk * 1e6 / bpt));
        }
    }
    if (json_path_number(row, "io.reads_per_token", &reads) == 0) snprintf(rd, sizeof rd, "%.1f", reads);
    if (json_path_number(row, "io.wait_seconds_per_token", &wait) == 0) snprintf(st, sizeof st, "%.1f", wait * 1e3);
    const json_t *cfg = json_object_get(row, "config");
    const char *routing = json_string_value(json_object_get(cfg, "routing")), *trace = json_string_value(json_object_get(cfg, "routing_trace"));
    char rt[400];
    const json_t *rp = json_object_get(cfg, "replay_predict");
    const char *label_s = json_string_value(json_object_get(cfg, "routing_label"));
    if (label_s) snprintf(rt, sizeof rt, "%.390s", label_s);
    else if (routing && trace && json_is_number(rp)) snprintf(rt, sizeof rt, "%s of %.200s, predicted %g", routing, trace, json_number_value(rp));
    else if (routing && trace) snprintf(rt, sizeof rt, "%s of %.200s", routing, trace);
    else snprintf(rt, sizeof rt, "%s", routing ? routing : "n/a");
    printf("| %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %.2f |\n", label, rt, tps, mb,
           rd, st, bd, share, hit, pred, rss / 1048576.0, cgs, first);
    json_decref(row);
    return 0;
}
