/* compare_modes.c — what `edge0-bench compare` reports for its workloads beyond single and
 * batch (docs/bench.md, "compare: server, sustained, depth"):
 *   --mode server     per engine and load point (a rate, or a closed-loop concurrency): request
 *                     counts, TTFT / TPOT / ITL / end-to-end latency pooled over the rounds'
 *                     requests (p50/p90/p95/p99), request, output-token and goodput throughput;
 *                     over several rates, the throughput/latency curve
 *   --mode sustained  per engine: mean decode tok/s, the slope of tok/s over time (tok/s per
 *                     minute, least squares over the per-interval series) and the series
 *   --depth           per depth: prompt processing and generation tok/s of each engine
 * The summaries go into the report's configurations (compare.c); the Markdown here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* {n, mean, min, p50, p90, p95, p99, max, unit} of x[0..n), or unavailable. */
static json_t *pooled(const double *x, size_t n) {
    if (!n) return e0_unavailable("no samples");
    double sum = 0, mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) sum += x[i], mn = fmin(mn, x[i]), mx = fmax(mx, x[i]);
    json_t *o = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "n", (json_int_t)n, "mean", sum / (double)n, "min", mn,
                          "p50", e0_percentile(x, n, 0.50), "p90", e0_percentile(x, n, 0.90), "p95", e0_percentile(x, n, 0.95),
                          "p99", e0_percentile(x, n, 0.99), "max", mx, "unit", "s");
    char w[256];
    if (o && e0_small_n_warning(n, w, sizeof w)[0]) json_object_set_new(o, "warning", json_string(w));
    return o;
}

/* The numbers of a JSON array appended to a growing buffer. */
static int append_numbers(double **buf, size_t *n, size_t *cap, const json_t *arr) {
    size_t k;
    const json_t *v;
    json_array_foreach(arr, k, v) {
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 256;
            double *nb = realloc(*buf, c * sizeof *nb);
            if (!nb) return -1;
            *buf = nb;
            *cap = c;
        }
        (*buf)[(*n)++] = json_number_value(v);
    }
    return 0;
}

static json_t *median_of(const json_t *processes, const char *key) {
    double v[4096];
    size_t n = 0, k;
    const json_t *p;
    json_array_foreach(processes, k, p) {
        const json_t *x = get(get(p, "row"), key);
        if (!strcmp(json_string_value(get(p, "status")), "ok") && json_is_number(x) && n < 4096) v[n++] = json_number_value(x);
    }
    return n ? json_real(e0_median(v, n)) : e0_unavailable("no successful round");
}

/* The rounds' /metrics checks (server_metrics.c) pooled: {"checked": rounds, "dialect", "strict",
 * "agree", "disagreements": ["round R: ..."], the client's and the server's request and token
 * counts summed, the server's seconds summed}, or "unavailable: why" when no round had one. */
static json_t *pool_server_metrics(const json_t *processes) {
    static const char *const client_keys[] = {"completed", "prompt_tokens", "completion_tokens", "busy_seconds"};
    static const char *const server_keys[] = {"sequences_finished", "prompt_tokens", "completion_tokens", "prefill_seconds",
                                              "decode_seconds"};
    double cs[4] = {0}, ss[5] = {0};
    int have_s[5] = {0}, checked = 0, agree = 1, strict = 0;
    const char *dialect = NULL, *why = NULL;
    json_t *dis = json_array();
    size_t k;
    const json_t *p;
    json_array_foreach(processes, k, p) {
        const json_t *sm = get(get(p, "row"), "server_metrics");
        if (json_is_string(sm)) why = json_string_value(sm);
        if (!json_is_object(sm)) continue;
        checked++;
        dialect = json_string_value(get(sm, "dialect"));
        strict |= json_is_true(get(sm, "strict"));
        agree &= json_is_true(get(sm, "agree"));
        size_t j;
        const json_t *d;
        json_array_foreach(get(sm, "disagreements"), j, d) {
            char buf[400];
            snprintf(buf, sizeof buf, "round %lld: %s", (long long)json_integer_value(get(p, "index")), json_string_value(d));
            json_array_append_new(dis, json_string(buf));
        }
        for (int c = 0; c < 4; c++) cs[c] += json_number_value(get(get(sm, "client"), client_keys[c]));
        for (int c = 0; c < 5; c++)
            if (json_is_number(get(get(sm, "server"), server_keys[c]))) ss[c] += json_number_value(get(get(sm, "server"), server_keys[c])), have_s[c] = 1;
    }
    if (!checked) {
        json_decref(dis);
        return e0_unavailable("%s", why ? why + (strncmp(why, "unavailable: ", 13) ? 0 : 13) : "no round ran");
    }
    json_t *o = json_pack("{s:i, s:s, s:b, s:b, s:o}", "checked", checked, "dialect", dialect ? dialect : "?", "strict", strict, "agree",
                          agree, "disagreements", dis);
    json_t *cl = json_object(), *sv = json_object();
    for (int c = 0; c < 4; c++) json_object_set_new(cl, client_keys[c], json_real(cs[c]));
    for (int c = 0; c < 5; c++) json_object_set_new(sv, server_keys[c], have_s[c] ? json_real(ss[c]) : e0_unavailable("not exposed"));
    json_object_set_new(o, "client", cl);
    json_object_set_new(o, "server", sv);
    return o;
}

json_t *compare_server_summary(json_t *processes) {
    static const char *const keys[] = {"ttft_s", "tpot_s", "itl_s", "e2e_s"};
    double *buf[4] = {0};
    size_t n[4] = {0}, cap[4] = {0};
    long long counts[6] = {0}; /* scheduled ok failed cancelled not_sent met_slo */
    int accounted = 1;
    static const char *const count_keys[] = {"scheduled", "ok", "failed", "cancelled", "not_sent", "met_slo"};
    json_t *reasons = json_object();
    int oom = 0;
    size_t k;
    json_t *p;
    json_array_foreach(processes, k, p) {
        json_t *row = json_object_get(p, "row");
        if (!json_is_object(row)) continue;
        const json_t *rq = get(row, "requests");
        for (int c = 0; c < 6; c++) counts[c] += json_integer_value(get(rq, count_keys[c]));
        accounted &= json_is_true(get(rq, "accounted"));
        const char *why;
        json_t *cnt;
        json_object_foreach(json_object_get(row, "failure_reasons"), why, cnt) {
            json_t *have = json_object_get(reasons, why);
            json_object_set_new(reasons, why, json_integer(json_integer_value(have) + json_integer_value(cnt)));
        }
        if (!strcmp(json_string_value(get(p, "status")), "ok"))
            for (int m = 0; m < 4; m++) oom |= append_numbers(&buf[m], &n[m], &cap[m], get(get(row, "samples"), keys[m]));
        json_object_del(row, "samples"); /* pooled here; the report keeps the per-request detail */
    }
    json_t *req = json_object();
    for (int c = 0; c < 6; c++) json_object_set_new(req, count_keys[c], json_integer(counts[c]));
    json_object_set_new(req, "errors", json_integer(counts[2]));
    /* never lost: every scheduled request is completed, failed (cancelled included, with its
     * reason) or not sent, in every round */
    json_object_set_new(req, "completed", json_integer(counts[1]));
    json_object_set_new(req, "failed_or_cancelled", json_integer(counts[2] + counts[3]));
    json_object_set_new(req, "accounted", json_boolean(accounted && counts[1] + counts[2] + counts[3] + counts[4] == counts[0]));
    json_object_set_new(req, "failure_reasons", reasons);
    json_t *s = json_pack("{s:o, s:o, s:o, s:o, s:o}", "requests", req, "server_metrics", pool_server_metrics(processes),
                          "request_throughput", median_of(processes, "request_throughput"),
                          "output_token_throughput", median_of(processes, "output_token_throughput"), "goodput",
                          median_of(processes, "goodput"));
    for (int m = 0; m < 4; m++) {
        json_object_set_new(s, keys[m], oom ? e0_unavailable("out of memory") : pooled(buf[m], n[m]));
        free(buf[m]);
    }
    return s;
}

json_t *compare_sustained_summary(const json_t *processes) {
    double means[1024], slopes[1024];
    size_t n = 0, k;
    const json_t *p, *series = NULL;
    json_t *per = json_array();
    json_array_foreach(processes, k, p) {
        const json_t *su = get(get(p, "row"), "sustained");
        if (strcmp(json_string_value(get(p, "status")), "ok") || !json_is_object(su) || n == 1024) continue;
        const json_t *ser = get(su, "series"), *ts = get(ser, "t_s"), *ys = get(ser, "tokens_per_second");
        size_t m = json_array_size(ts) < json_array_size(ys) ? json_array_size(ts) : json_array_size(ys);
        double *t = malloc((m ? m : 1) * sizeof *t), *y = malloc((m ? m : 1) * sizeof *y);
        for (size_t i = 0; t && y && i < m; i++) t[i] = json_number_value(json_array_get(ts, i)), y[i] = json_number_value(json_array_get(ys, i));
        double slope = t && y && m >= 2 ? e0_slope(t, y, m) * 60.0 : NAN;
        free(t);
        free(y);
        means[n] = json_number_value(get(su, "mean_tokens_per_second"));
        slopes[n] = slope;
        json_array_append_new(per, json_pack("{s:O, s:f, s:o, s:I}", "index", get(p, "index"), "mean_tokens_per_second", means[n],
                                             "slope_tokens_per_second_per_minute", isnan(slope) ? e0_unavailable("fewer than 2 intervals")
                                                                                              : json_real(slope),
                                             "intervals", (json_int_t)m));
        if (!series) series = ser;
        n++;
    }
    double ok_slopes[1024];
    size_t n_slopes = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(slopes[i])) ok_slopes[n_slopes++] = slopes[i];
    return json_pack("{s:o, s:o, s:o, s:O?}", "mean_tokens_per_second", n ? json_real(e0_median(means, n)) : e0_unavailable("no successful process"),
                     "slope_tokens_per_second_per_minute", n_slopes ? json_real(e0_median(ok_slopes, n_slopes)) : e0_unavailable("fewer than 2 intervals"),
                     "processes", per, "series", series);
}

/* ---- Markdown ---- */

static void ms3(e0_strbuf *b, const json_t *d) {
    if (!json_is_object(d)) {
        e0_sb_printf(b, " — |");
        return;
    }
    e0_sb_printf(b, " %.1f / %.1f / %.1f |", 1000 * json_number_value(get(d, "p50")), 1000 * json_number_value(get(d, "p90")),
                 1000 * json_number_value(get(d, "p99")));
}

static double num(const json_t *v) { return json_is_number(v) ? json_number_value(v) : NAN; }

static void put_server(e0_strbuf *b, const json_t *r) {
    const json_t *sp = get(get(r, "protocol"), "server");
    e0_sb_printf(b, "## Server load\n\n%lld requests per load point and round (seed %lld): prompt lengths %s around %lld tokens, outputs "
                 "around %lld (exact: ignore_eos), %lld slots of %lld tokens. Latencies pooled over the rounds' requests; "
                 "throughputs the median over the rounds.\n\n",
                 (long long)json_integer_value(get(sp, "requests_per_point")), (long long)json_integer_value(get(sp, "seed")),
                 json_string_value(get(sp, "length_distribution")) ? json_string_value(get(sp, "length_distribution")) : "?",
                 (long long)json_integer_value(get(sp, "prompt_len_median")), (long long)json_integer_value(get(sp, "output_len_median")),
                 (long long)json_integer_value(get(sp, "parallel")), (long long)json_integer_value(get(sp, "slot_context")));
    e0_sb_printf(b, "Requests: completed / failed (with its reason below) / not sent, of the scheduled ones (all rounds); "
                 "`/metrics`: the server's own counters over each window against the client's (requests by HTTP status, "
                 "sequences, prompt and completion tokens, prefill and decode seconds within the client's waits).\n\n");
    e0_sb_printf(b, "| Configuration | Load | completed / failed / not sent of scheduled | req/s | out tok/s | goodput req/s | "
                 "TTFT p50 / p90 / p99 ms | ITL p50 / p90 / p99 ms | E2E p50 / p90 / p99 ms | TPOT p50 / p90 / p99 ms | "
                 "server `/metrics` |\n");
    e0_sb_printf(b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    size_t i;
    const json_t *c;
    json_array_foreach(get(r, "configurations"), i, c) {
        const json_t *s = get(c, "server"), *lp = get(c, "load_point"), *q = get(s, "requests");
        if (!s) continue;
        e0_sb_printf(b, "| `%s` | ", json_string_value(get(c, "name")) ? json_string_value(get(c, "name")) : "?");
        if (get(lp, "rate")) e0_sb_printf(b, "%g req/s", num(get(lp, "rate")));
        else e0_sb_printf(b, "%lld clients", (long long)json_integer_value(get(lp, "concurrency")));
        e0_sb_printf(b, " | %lld / %lld / %lld of %lld%s | %.2f | %.1f | %.2f |", (long long)json_integer_value(get(q, "ok")),
                     (long long)(json_integer_value(get(q, "failed")) + json_integer_value(get(q, "cancelled"))),
                     (long long)json_integer_value(get(q, "not_sent")), (long long)json_integer_value(get(q, "scheduled")),
                     json_is_false(get(q, "accounted")) ? " (LOST requests)" : "",
                     num(get(s, "request_throughput")), num(get(s, "output_token_throughput")), num(get(s, "goodput")));
        ms3(b, get(s, "ttft_s"));
        ms3(b, get(s, "itl_s"));
        ms3(b, get(s, "e2e_s"));
        ms3(b, get(s, "tpot_s"));
        const json_t *sm = get(s, "server_metrics");
        if (!json_is_object(sm)) e0_sb_printf(b, " not checked (%s) |\n", json_string_value(sm) ? json_string_value(sm) : "?");
        else
        {
            e0_sb_printf(b, " %s (%s, %lld rounds):", json_is_true(get(sm, "agree")) ? "agree" : "**DISAGREE**",
                         json_string_value(get(sm, "dialect")), (long long)json_integer_value(get(sm, "checked")));
            static const char *const what[] = {"sequences_finished", "prompt_tokens", "completion_tokens"};
            static const char *const label[] = {"sequences", "tokens in", "tokens out"};
            for (int k = 0; k < 3; k++)
                if (json_is_number(get(get(sm, "server"), what[k])))
                    e0_sb_printf(b, " %.0f %s", num(get(get(sm, "server"), what[k])), label[k]);
            e0_sb_printf(b, " |\n");
        }
    }
    e0_sb_printf(b, "\n");
    json_array_foreach(get(r, "configurations"), i, c) {
        const json_t *dis = get(get(get(c, "server"), "server_metrics"), "disagreements");
        size_t k;
        const json_t *d;
        json_array_foreach(dis, k, d) e0_sb_printf(b, "- `%s`: `/metrics` disagree: %s\n", json_string_value(get(c, "name")),
                                                   json_string_value(d));
    }
    json_array_foreach(get(r, "configurations"), i, c) {
        const json_t *why = get(get(get(c, "server"), "requests"), "failure_reasons");
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)why, k, v) e0_sb_printf(b, "- `%s`: %lld× %s\n", json_string_value(get(c, "name")),
                                                              (long long)json_integer_value(v), k);
    }
}

static void put_sustained(e0_strbuf *b, const json_t *r) {
    e0_sb_printf(b, "## Sustained decode\n\n%g s of decode per process; the slope is the least-squares fit of the per-interval "
                 "tok/s over time (about 0: no throttling or page-cache drift).\n\n",
                 num(get(get(r, "protocol"), "duration_seconds")));
    e0_sb_printf(b, "| Engine | Mean tok/s | Slope tok/s per minute | Series (tok/s per interval, first process) |\n| --- | --- | --- | --- |\n");
    size_t i, k;
    const json_t *c, *v;
    json_array_foreach(get(r, "configurations"), i, c) {
        const json_t *s = get(c, "sustained");
        if (!s) continue;
        e0_sb_printf(b, "| `%s` | ", json_string_value(get(c, "name")) ? json_string_value(get(c, "name")) : "?");
        if (json_is_number(get(s, "mean_tokens_per_second"))) e0_sb_printf(b, "%.2f", num(get(s, "mean_tokens_per_second")));
        else e0_sb_printf(b, "—");
        if (json_is_number(get(s, "slope_tokens_per_second_per_minute")))
            e0_sb_printf(b, " | %+.3f | ", num(get(s, "slope_tokens_per_second_per_minute")));
        else e0_sb_printf(b, " | — | ");
        json_array_foreach(get(get(s, "series"), "tokens_per_second"), k, v) {
            if (k == 60) {
                e0_sb_printf(b, " …");
                break;
            }
            e0_sb_printf(b, "%s%.1f", k ? " " : "", json_number_value(v));
        }
        e0_sb_printf(b, " |\n");
    }
    e0_sb_printf(b, "\n");
}

static void put_depth(e0_strbuf *b, const json_t *r) {
    e0_sb_printf(b, "## Long context (KV depth)\n\nllama-bench's -d: the depth's tokens are in the KV cache (untimed) before the "
                 "test, as with a prefix-cache hit; \"cold\" is the same request without one, its depth and prompt tokens "
                 "prefilled from an empty cache; tok/s is the median over the rounds.%s\n\n| Test | Depth |",
                 json_is_false(get(get(r, "protocol"), "depth_cold_rows")) ? " The cold rows were left out (--no-cold)." : "");
    /* engines as columns, in their order */
    const char *eng[16];
    int n_eng = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(get(r, "configurations"), i, c) {
        const char *e = json_string_value(get(c, "engine_name"));
        int seen = 0;
        for (int k = 0; k < n_eng; k++) seen |= e && !strcmp(eng[k], e);
        if (e && !seen && n_eng < 16) eng[n_eng++] = e;
    }
    for (int k = 0; k < n_eng; k++) e0_sb_printf(b, " %s tok/s |", eng[k]);
    if (n_eng > 1) e0_sb_printf(b, " %s / %s |", eng[0], eng[1]);
    e0_sb_printf(b, "\n| --- | --- |");
    for (int k = 0; k < n_eng + (n_eng > 1); k++) e0_sb_printf(b, " --- |");
    e0_sb_printf(b, "\n");
    json_array_foreach(get(r, "configurations"), i, c) {
        const json_t *d = get(c, "depth");
        if (!d || !json_string_value(get(c, "engine_name")) || strcmp(json_string_value(get(c, "engine_name")), eng[0])) continue;
        const char *test = json_string_value(get(d, "test"));
        const int cold = test && !strcmp(test, "pp_cold");
        e0_sb_printf(b, "| %s%lld%s | %lld |", cold ? "pp" : test ? test : "?", (long long)json_integer_value(get(d, "tokens")),
                     cold ? " cold" : "", (long long)json_integer_value(get(d, "depth")));
        double vals[16];
        for (int k = 0; k < n_eng; k++) {
            size_t j;
            const json_t *o;
            double v = NAN;
            json_array_foreach(get(r, "configurations"), j, o) {
                const json_t *od = get(o, "depth");
                if (od && json_equal(od, d) && !strcmp(json_string_value(get(o, "engine_name")), eng[k]))
                    v = num(get(get(get(o, "metrics"), test && (!strcmp(test, "pp") || cold) ? "prefill_tokens_per_second" : "decode_tokens_per_second"),
                                "median"));
            }
            vals[k] = v;
            if (isnan(v)) e0_sb_printf(b, " — |");
            else e0_sb_printf(b, " %.2f |", v);
        }
        if (n_eng > 1) {
            if (isnan(vals[0]) || isnan(vals[1]) || vals[1] <= 0) e0_sb_printf(b, " — |");
            else e0_sb_printf(b, " %.3gx |", vals[0] / vals[1]);
        }
        e0_sb_printf(b, "\n");
    }
    e0_sb_printf(b, "\n");
}

void report_md_modes(e0_strbuf *b, const json_t *r) {
    const char *mode = json_string_value(get(get(r, "protocol"), "mode"));
    if (!mode) return;
    if (!strcmp(mode, "server")) put_server(b, r);
    else if (!strcmp(mode, "sustained")) put_sustained(b, r);
    else if (!strcmp(mode, "depth")) put_depth(b, r);
}

/* ---- SVG: the throughput/latency curve of --mode server over its rates ---- */

#define CW 900
#define CL 80
#define CR 700
#define CH 220
static const char *const CURVE_COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

static double nice_top(double max) {
    if (!(max > 0)) return 1;
    double p = pow(10, floor(log10(max)));
    static const double steps[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if (steps[i] * p >= max * 1.05) return steps[i] * p;
    return 10 * p;
}

/* The value a curve plots for configuration c: output tok/s, or TTFT p99 in ms. */
static double curve_value(const json_t *c, int latency) {
    const json_t *s = get(c, "server");
    return latency ? 1000 * num(get(get(s, "ttft_s"), "p99")) : num(get(s, "output_token_throughput"));
}

static void curve_panel(e0_strbuf *b, const json_t *configs, const char *const *eng, int n_eng, double x_top, int latency, double y0) {
    double max = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(configs, i, c) if (get(get(c, "load_point"), "rate") && curve_value(c, latency) > max) max = curve_value(c, latency);
    double top = nice_top(max), base = y0 + CH;
    e0_sb_printf(b, "<text x=\"%d\" y=\"%.0f\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", CL, y0 - 12,
                 latency ? "TTFT p99 (ms) against request rate" : "Output tokens/s against request rate");
    for (int t = 0; t <= 4; t++) {
        double y = base - CH * t / 4.0, x = CL + (CR - CL) * t / 4.0;
        e0_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", CL, y, CR, y);
        e0_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", CL - 6, y + 4, top * t / 4.0);
        e0_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n", x, base + 16, x_top * t / 4.0);
    }
    e0_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">req/s</text>\n", CR, base + 30);
    for (int k = 0; k < n_eng; k++) {
        const char *color = CURVE_COLORS[k % 6];
        e0_sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        json_array_foreach(configs, i, c) {
            double v = curve_value(c, latency);
            if (!get(get(c, "load_point"), "rate") || strcmp(json_string_value(get(c, "engine_name")), eng[k]) || isnan(v)) continue;
            e0_sb_printf(b, "%.1f,%.1f ", CL + (CR - CL) * num(get(get(c, "load_point"), "rate")) / x_top, base - CH * v / top);
        }
        e0_sb_printf(b, "\"/>\n");
        e0_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">", CR + 12, y0 + 16 * (k + 1), color);
        for (const char *p = eng[k]; *p; p++) e0_sb_printf(b, *p == '<' ? "&lt;" : *p == '&' ? "&amp;" : "%c", *p);
        e0_sb_printf(b, "</text>\n");
    }
}

char *compare_server_svg(const json_t *r) {
    const json_t *configs = get(r, "configurations");
    const char *eng[16];
    int n_eng = 0;
    double x_top = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(configs, i, c) {
        const char *e = json_string_value(get(c, "engine_name"));
        int seen = 0;
        for (int k = 0; k < n_eng; k++) seen |= e && !strcmp(eng[k], e);
        if (e && !seen && n_eng < 16) eng[n_eng++] = e;
        if (get(get(c, "load_point"), "rate")) x_top = fmax(x_top, num(get(get(c, "load_point"), "rate")));
    }
    x_top = nice_top(x_top);
    e0_strbuf b = {0};
    int h = 2 * CH + 200;
    e0_sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
                 CW, h, CW, h, CW, h);
    e0_sb_printf(&b, "<text x=\"%d\" y=\"22\" font-size=\"13\" fill=\"#555\">edge0-bench compare --mode server: one line per engine "
                 "over its Poisson rates</text>\n", CL);
    curve_panel(&b, configs, eng, n_eng, x_top, 0, 60);
    curve_panel(&b, configs, eng, n_eng, x_top, 1, 60 + CH + 90);
    e0_sb_printf(&b, "</svg>\n");
    return e0_sb_take(&b);
}
