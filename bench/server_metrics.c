/* server_metrics.c — a server's own counters (GET /metrics, Prometheus text) checked against
 * what the client saw in one load window (bench/load.c scrapes /metrics before and after each
 * rate; `compare --mode server` pools the checks over its rounds).
 *
 * Dialects (which counters the server exposes; found by their names):
 *   edge0      edge0-infer serve: responses by HTTP status, sequences finished / cancelled /
 *              failed, prompt and completion tokens, prefill and decode seconds. Checked
 *              strictly: a disagreement is a bug of the server or of the harness.
 *   llama.cpp  llama-server --metrics: prompt tokens and seconds, predicted tokens and seconds
 *   vllm       vLLM: prompt and generation tokens, successful requests
 * For the other two the same checks are made and reported, not enforced (not verified here).
 *
 * The checks, over the window between the two scrapes (counters' deltas):
 *   - HTTP responses by status = the client's statuses (+ the scrapes the server answered in
 *     between, all 200): no request the client does not know about, none the server never saw;
 *   - sequences finished = the streams the client opened (HTTP 200); none cancelled and no engine
 *     error when every request completed, else at most the client's cancelled + failed cancelled
 *     (a client may go away after the server finished);
 *   - prompt and completion tokens = the sums of the completed requests' `usage` (when some
 *     request failed or was cancelled the server may count more, never fewer);
 *   - latencies: every prefill step of the server runs while some request waits for its first
 *     token, every step while some request is in flight, so the server's prefill seconds are at
 *     most the union of the client's [sent, first token] intervals and its prefill + decode
 *     seconds at most the union of [sent, end] (plus 5 ms and 1% for clock granularity);
 *     llama-server counts its seconds per slot (a batched step once in every slot it served), so
 *     for it the bounds are the sums of those intervals instead of their unions.
 * Result: {"dialect", "strict", "client": {...}, "server": {...}, "checks": [{"what", "client",
 * "server", "ok"}], "agree", "disagreements": [text]}, or "unavailable: why". */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/sysinfo.h"

/* One sample line "name{labels} value [timestamp]": the name's and the labels' spans, the value.
 * 0, or -1 for a comment, a blank or a malformed line. */
static int parse_line(const char *p, const char *end, const char **name, size_t *name_len, const char **labels,
                      size_t *labels_len, double *value) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p >= end || *p == '#') return -1;
    const char *n = p;
    while (p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == ':')) p++;
    if (p == n) return -1;
    *name = n, *name_len = (size_t)(p - n);
    *labels = p, *labels_len = 0;
    if (p < end && *p == '{') {
        const char *l = ++p;
        int quoted = 0;
        while (p < end && (quoted || *p != '}')) {
            if (quoted && *p == '\\' && p + 1 < end) p++;
            else if (*p == '"') quoted = !quoted;
            p++;
        }
        if (p >= end) return -1;
        *labels = l, *labels_len = (size_t)(p - l);
        p++;
    }
    if (p >= end || (*p != ' ' && *p != '\t')) return -1;
    char num[64];
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    size_t k = 0;
    while (p < end && *p != ' ' && *p != '\t' && k + 1 < sizeof num) num[k++] = *p++;
    num[k] = 0;
    char *e;
    double v = strtod(num, &e);
    if (!k || *e || !isfinite(v)) return -1;
    *value = v;
    return 0;
}

/* The sum over the samples named `name` whose labels are exactly `labels` (NULL: any labels).
 * 0 and *out when at least one sample matched, -1 otherwise. */
static int prom_value(const char *text, const char *name, const char *labels, double *out) {
    int found = 0;
    double sum = 0;
    size_t nl = strlen(name);
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *n, *l;
        size_t n_len, l_len;
        double v;
        if (!parse_line(p, end, &n, &n_len, &l, &l_len, &v) && n_len == nl && !memcmp(n, name, nl) &&
            (!labels || (strlen(labels) == l_len && !memcmp(l, labels, l_len))))
            sum += v, found = 1;
        p = eol ? eol + 1 : NULL;
    }
    if (found) *out = sum;
    return found ? 0 : -1;
}

/* after - before of a counter (absent before: 0); -1 when the after text lacks it. */
static int delta(const char *before, const char *after, const char *name, const char *labels, double *out) {
    double a, b = 0;
    if (prom_value(after, name, labels, &a)) return -1;
    if (before && prom_value(before, name, labels, &b)) b = 0;
    *out = a - b;
    return 0;
}

const char *server_metrics_dialect(const char *text) {
    double v;
    if (!text) return NULL;
    if (!prom_value(text, "edge0_completion_tokens_total", NULL, &v)) return "edge0";
    if (!prom_value(text, "llamacpp:tokens_predicted_total", NULL, &v)) return "llama.cpp";
    if (!prom_value(text, "vllm:generation_tokens_total", NULL, &v)) return "vllm";
    return NULL;
}

int server_metrics_idle(const char *text) {
    static const char *const gauges[] = {"edge0_streams_open", "edge0_requests_live", "edge0_active_sequences", "edge0_queue_depth"};
    for (size_t k = 0; k < sizeof gauges / sizeof *gauges; k++) {
        double v;
        if (prom_value(text, gauges[k], NULL, &v) || v != 0) return 0;
    }
    return 1;
}

static int cmp_lo(const void *a, const void *b) {
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

double interval_union(double *iv, size_t n) {
    qsort(iv, n, 2 * sizeof *iv, cmp_lo);
    double total = 0, lo = 0, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double a = iv[2 * i], b = iv[2 * i + 1];
        if (!(b > a)) continue;
        if (a > hi) {
            if (hi > lo) total += hi - lo;
            lo = a, hi = b;
        } else if (b > hi) {
            hi = b;
        }
    }
    if (hi > lo) total += hi - lo;
    return total;
}

typedef struct checker {
    json_t *checks, *disagree;
    int ok;
} checker;

/* One check: "what" with the two numbers; ok says whether they agree. */
static void check(checker *c, const char *what, double client, double server, int ok) {
    json_array_append_new(c->checks, json_pack("{s:s, s:f, s:f, s:b}", "what", what, "client", client, "server", server, "ok", ok));
    if (!ok) {
        char buf[320];
        snprintf(buf, sizeof buf, "%s: client %g, server %g", what, client, server);
        json_array_append_new(c->disagree, json_string(buf));
        c->ok = 0;
    }
}

/* Equal when every request completed, else the server at least the client's (at most `most`). */
static void check_count(checker *c, const char *what, double client, double server, int exact, double most) {
    char w[200];
    snprintf(w, sizeof w, exact ? "%s (equal: every request completed)" : "%s (at least the client's: some did not complete)", what);
    check(c, w, client, server, exact ? server == client : server >= client && server <= most);
}

/* The edge0 dialect's HTTP responses by status: the server's code="NNN" deltas against the
 * client's statuses (+ the scrapes, 200). */
static void check_statuses(checker *c, const char *before, const char *after, const window_view *w, json_t *server) {
    json_t *by = json_object();
    int codes[128], n_codes = 0;
    for (int k = 0; k < w->n_status && n_codes < 128; k++) codes[n_codes++] = w->status[k];
    /* every code the server lists */
    for (const char *p = after; p && *p;) {
        const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p), *n, *l;
        size_t n_len, l_len;
        double v;
        if (!parse_line(p, end, &n, &n_len, &l, &l_len, &v) && n_len == strlen("edge0_requests_total") &&
            !memcmp(n, "edge0_requests_total", n_len) && l_len > 7 && !memcmp(l, "code=\"", 6)) {
            int code = atoi(l + 6), seen = 0;
            for (int k = 0; k < n_codes; k++) seen |= codes[k] == code;
            if (!seen && n_codes < 128 && code > 0) codes[n_codes++] = code;
        }
        p = eol ? eol + 1 : NULL;
    }
    for (int k = 0; k < n_codes; k++) {
        char labels[32], what[96];
        double sv = 0, cv = 0;
        snprintf(labels, sizeof labels, "code=\"%d\"", codes[k]);
        if (codes[k] > 0 && delta(before, after, "edge0_requests_total", labels, &sv)) sv = 0;
        for (int j = 0; j < w->n_status; j++)
            if (w->status[j] == codes[k]) cv += w->status_n[j];
        if (codes[k] == 200) cv += w->scrapes;
        if (codes[k] == 0) {
            snprintf(what, sizeof what, "requests with no HTTP response (connection failures)");
            json_object_set_new(by, "none", json_real(cv));
            check(c, what, cv, 0, 1); /* the server cannot count these; reported, not a disagreement */
            continue;
        }
        snprintf(what, sizeof what, "HTTP %d responses%s", codes[k], codes[k] == 200 ? " (the /metrics scrapes included)" : "");
        char key[16];
        snprintf(key, sizeof key, "%d", codes[k]);
        json_object_set_new(by, key, json_real(sv));
        check(c, what, cv, sv, sv == cv);
    }
    json_object_set_new(server, "http_responses_by_status", by);
}

json_t *server_metrics_check(const char *before, const char *after, const window_view *w) {
    if (!before || !after) return e0_unavailable("GET /metrics failed %s the window", !before ? "before" : "after");
    const char *d = server_metrics_dialect(after);
    if (!d) return e0_unavailable("/metrics has no counters the harness knows (edge0_, llamacpp:, vllm:)");
    checker c = {json_array(), json_array(), 1};
    const int strict = !strcmp(d, "edge0");
    const int all_done = w->ok == w->sent; /* every sent request completed */
    int n200 = 0;
    for (int k = 0; k < w->n_status; k++)
        if (w->status[k] == 200) n200 += w->status_n[k];
    json_t *client = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:f, s:f, s:i}", "scheduled", w->scheduled, "sent", w->sent,
                               "completed", w->ok, "failed", w->failed, "cancelled", w->cancelled, "not_sent", w->not_sent,
                               "prompt_tokens", (json_int_t)w->ok_prompt_tokens, "completion_tokens", (json_int_t)w->ok_completion_tokens,
                               "busy_seconds", w->busy_seconds, "prefill_window_seconds", w->prefill_window_seconds,
                               "http_200", n200);
    json_t *server = json_object();
    double v, pre = NAN, dec = NAN;
    const char *prompt_name = NULL, *gen_name = NULL, *pre_name = NULL, *dec_name = NULL;
    if (strict) {
        prompt_name = "edge0_prompt_tokens_total", gen_name = "edge0_completion_tokens_total";
        pre_name = "edge0_prefill_seconds_total", dec_name = "edge0_decode_seconds_total";
        check_statuses(&c, before, after, w, server);
        double fin = 0, can = 0, err = 0, tmo = 0;
        delta(before, after, "edge0_sequences_finished_total", NULL, &fin);
        delta(before, after, "edge0_sequences_cancelled_total", NULL, &can);
        delta(before, after, "edge0_sequences_error_total", NULL, &err);
        delta(before, after, "edge0_sequences_timeout_total", NULL, &tmo);
        json_object_set_new(server, "sequences_finished", json_real(fin));
        json_object_set_new(server, "sequences_cancelled", json_real(can));
        json_object_set_new(server, "sequences_failed", json_real(err + tmo));
        json_object_set_new(server, "scrapes_answered", json_integer(w->scrapes));
        check_count(&c, "sequences finished = streams opened (HTTP 200)", n200, fin, all_done, w->sent);
        /* a client that goes away may do so after the server finished: at most the client's */
        if (all_done) check(&c, "sequences cancelled (none: every request completed)", 0, can, can == 0);
        else check(&c, "sequences cancelled (at most the client's cancelled + failed)", w->cancelled + w->failed, can,
                   can >= 0 && can <= w->cancelled + w->failed);
        if (all_done) check(&c, "sequences failed or timed out (none: every request completed)", 0, err + tmo, err + tmo == 0);
    } else if (!strcmp(d, "llama.cpp")) {
        prompt_name = "llamacpp:prompt_tokens_total", gen_name = "llamacpp:tokens_predicted_total";
        pre_name = "llamacpp:prompt_seconds_total", dec_name = "llamacpp:tokens_predicted_seconds_total";
    } else {
        prompt_name = "vllm:prompt_tokens_total", gen_name = "vllm:generation_tokens_total";
        if (!delta(before, after, "vllm:request_success_total", NULL, &v)) {
            json_object_set_new(server, "requests_succeeded", json_real(v));
            check_count(&c, "requests succeeded", w->ok, v, all_done, w->sent);
        }
    }
    /* tokens: with cache_prompt false every prompt token is the server's too */
    double most = 1e18;
    if (prompt_name && !delta(before, after, prompt_name, NULL, &v)) {
        json_object_set_new(server, "prompt_tokens", json_real(v));
        check_count(&c, "prompt tokens", (double)w->ok_prompt_tokens, v, all_done, most);
    }
    if (gen_name && !delta(before, after, gen_name, NULL, &v)) {
        json_object_set_new(server, "completion_tokens", json_real(v));
        check_count(&c, "completion tokens", (double)w->ok_completion_tokens, v, all_done, most);
    }
    if (pre_name && !delta(before, after, pre_name, NULL, &pre)) json_object_set_new(server, "prefill_seconds", json_real(pre));
    if (dec_name && !delta(before, after, dec_name, NULL, &dec)) json_object_set_new(server, "decode_seconds", json_real(dec));
    /* llama-server's seconds are per slot, summed over the slots (a batched step counts once in
     * every slot it served): bounded by the sums of the requests' intervals, not their union */
    const int per_slot = !strcmp(d, "llama.cpp");
    if (!isnan(pre) && !per_slot)
        check(&c, "server prefill seconds <= the client's waits for a first token (union of [sent, first])",
              w->prefill_window_seconds, pre, pre <= w->prefill_window_seconds * 1.01 + 0.005);
    if (!isnan(pre) && per_slot)
        check(&c, "server per-slot prefill seconds <= the client's waits for a first token (sum of [sent, first])",
              w->prefill_wait_sum_seconds, pre, pre <= w->prefill_wait_sum_seconds * 1.01 + 0.005);
    if (!isnan(pre) && !isnan(dec) && !per_slot)
        check(&c, "server prefill + decode seconds <= the client's busy time (union of [sent, end])", w->busy_seconds, pre + dec,
              pre + dec <= w->busy_seconds * 1.01 + 0.005);
    if (!isnan(pre) && !isnan(dec) && per_slot)
        check(&c, "server per-slot prefill + decode seconds <= the client's busy time (sum of [sent, end])", w->busy_sum_seconds,
              pre + dec, pre + dec <= w->busy_sum_seconds * 1.01 + 0.005);
    if (!isnan(pre) && !isnan(dec) && w->busy_seconds > 0)
        json_object_set_new(server, "compute_fraction_of_client_busy_time", json_real((pre + dec) / w->busy_seconds));
    return json_pack("{s:s, s:b, s:o, s:o, s:o, s:b, s:o}", "dialect", d, "strict", strict, "client", client, "server", server, "checks",
                     c.checks, "agree", c.ok, "disagreements", c.disagree);
}
