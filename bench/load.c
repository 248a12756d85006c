/* load.c — `edge0-bench load`: the server workload of the harness design (§3.2 server mode)
 * against any OpenAI-compatible endpoint (our `serve`, llama-server, Ollama, vLLM, LM Studio).
 *
 * Requests arrive as a Poisson process at R requests/s: the schedule (arrival times, prompt and
 * output length of each request) comes from --seed alone, so the same seed gives the same
 * schedule. Each request is POST /v1/completions with stream=true, greedy sampling and
 * stream_options.include_usage, timed by the client: TTFT (send -> first text chunk), ITL (gaps
 * between text chunks), TPOT ((end - first) / (completion tokens - 1), tokens from `usage`) and
 * end-to-end latency, as distributions (p50/p90/p95/p99, with the small-n warning), request and
 * token throughput, and goodput under SLOs (--slo ttft=2000ms,tpot=200ms: the requests per second
 * that met both, as MLPerf's server scenario counts them). Nothing is lost: every scheduled
 * request ends as ok, failed (with the reason), cancelled (--disconnect P: the client goes away
 * after two chunks, on purpose) or not sent (its arrival fell after --duration or the run was
 * interrupted). GET /v1/models names the engine; GET /metrics is kept before and after each rate
 * so the server's own counters can be checked against the client's.
 * --rate R1,R2,... runs each rate in turn; --rate sweep doubles from 0.25 req/s until goodput
 * stops growing or p99 TTFT breaks its SLO (at most 8 rates). Output: DIR/load.json, DIR/load.md. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"

#define MAX_RATES 16
#define MAX_PROMPTS 4096

static const char LOAD_USAGE[] =
    "usage: edge0-bench load --url http://HOST:PORT --out DIR [options]\n"
    "\n"
    "Poisson arrivals of streamed /v1/completions requests against an OpenAI-compatible server;\n"
    "TTFT, TPOT, ITL and end-to-end latency distributions, throughput and goodput per rate.\n"
    "\n"
    "  --rate R[,R2,...]|sweep  requests per second [1]\n"
    "  --requests N        requests scheduled per rate [32]\n"
    "  --duration S        arrivals after S seconds are not sent (counted) [no limit]\n"
    "  --seed S            the schedule (arrivals, prompts, disconnects) [42]\n"
    "  --prompts F.jsonl   one {\"prompt\": TEXT, \"max_tokens\": N} per line, taken in turn\n"
    "  --prompt TEXT       one prompt for every request [a short story opening]\n"
    "  --max-tokens N      output tokens per request when the prompt does not say [64]\n"
    "  --model NAME        the request's \"model\" [the first of GET /v1/models]\n"
    "  --api-key K         Authorization: Bearer K\n"
    "  --slo ttft=2000ms,tpot=200ms   goodput's service-level objectives [those]\n"
    "  --max-inflight N    client connections at once [256]\n"
    "  --disconnect P      a fraction P of requests (seeded) close after two chunks [0]\n"
    "  --timeout S         per request [600]\n"
    "\n"
    "Exit status 0 when every rate completed at least one request, 1 otherwise.\n";

typedef struct load_opts {
    const char *url, *out, *prompts, *prompt, *model, *api_key;
    double rates[MAX_RATES];
    int n_rates, sweep;
    int64_t requests, max_tokens, max_inflight, seed;
    double duration, timeout, disconnect, slo_ttft, slo_tpot;
} load_opts;

/* One scheduled request and what happened to it. */
typedef struct req {
    int id, prompt, max_tokens, disconnect;
    double t_sched;            /* seconds after the start */
    double t_send, t_first, t_end; /* seconds after the start; t_first < 0 without a text chunk */
    enum { REQ_PENDING, REQ_OK, REQ_FAILED, REQ_CANCELLED, REQ_NOT_SENT } status;
    char reason[200];
    int64_t prompt_tokens, completion_tokens;
    char finish[24];
    int http_status; /* the response's status (0: none received) */
    double *chunks; /* text chunk arrival times (seconds after the start) */
    int n_chunks, cap_chunks, done_seen;
} req;

typedef struct run_ctx {
    const load_opts *o;
    http_url url;
    const char *model;
    char **ptext;
    int *pmax, n_prompts;
    req *reqs;
    int n;
    double t0; /* CLOCK_MONOTONIC start */
    /* load_point_run (compare --mode server): prompts are JSON values (token id arrays) sent as
     * they are, request i takes prompt i, requests carry ignore_eos and cache_prompt false, the
     * result keeps every sample; rate 0 = closed loop (every request due at once, max_inflight
     * clients back to back) */
    int raw_prompts, in_order, exact_lengths, keep_samples;
    pthread_mutex_t mu;
    int next; /* the next request a worker takes */
} run_ctx;

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: the schedule's random numbers */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double rng_unit(uint64_t *s) { return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0; } /* (0, 1) */

/* "ttft=2000ms,tpot=200ms" (ms or s) */
static int parse_slo(const char *s, load_opts *o) {
    char buf[256];
    if (strlen(s) >= sizeof buf) return bench_error("--slo: too long");
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return bench_error("--slo: expected NAME=VALUE[ms|s], got '%s'", tok);
        *eq = 0;
        char *end;
        double v = strtod(eq + 1, &end);
        if (!strcmp(end, "ms")) v /= 1000;
        else if (strcmp(end, "s") && *end) return bench_error("--slo %s: unit ms or s, got '%s'", tok, end);
        if (!(v > 0) || v > 86400) return bench_error("--slo %s: '%s' is not a positive time", tok, eq + 1);
        if (!strcmp(tok, "ttft")) o->slo_ttft = v;
        else if (!strcmp(tok, "tpot")) o->slo_tpot = v;
        else return bench_error("--slo: unknown objective '%s' (ttft, tpot)", tok);
    }
    return 0;
}

static int parse_rates(const char *s, load_opts *o) {
    if (!strcmp(s, "sweep")) {
        o->sweep = 1;
        o->n_rates = 0;
        for (double r = 0.25; o->n_rates < 8; r *= 2) o->rates[o->n_rates++] = r;
        return 0;
    }
    char buf[512];
    if (strlen(s) >= sizeof buf) return bench_error("--rate: too long");
    snprintf(buf, sizeof buf, "%s", s);
    o->n_rates = 0;
    e0_err e;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_rates == MAX_RATES) return bench_error("--rate: at most %d rates", MAX_RATES);
        if (e0_parse_f64(tok, 1e-3, 1e5, &o->rates[o->n_rates++], "--rate", &e)) return bench_error("%s", e.msg);
    }
    return o->n_rates ? 0 : bench_error("--rate: empty list");
}

static int parse_args(int argc, char **argv, load_opts *o) {
    e0_err e;
    o->rates[0] = 1;
    o->n_rates = 1;
    o->requests = 32;
    o->max_tokens = 64;
    o->max_inflight = 256;
    o->seed = 42;
    o->timeout = 600;
    o->slo_ttft = 2.0;
    o->slo_tpot = 0.2;
    o->prompt = "Once upon a time, in a small town by the sea, there lived a girl who";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return fputs(LOAD_USAGE, stdout), 2;
        if (i + 1 >= argc) return bench_error("%s needs a value (see edge0-bench load --help)", a);
        v = argv[++i];
        const char **dst = !strcmp(a, "--url") ? &o->url : !strcmp(a, "--out") ? &o->out : !strcmp(a, "--prompts") ? &o->prompts
                         : !strcmp(a, "--prompt") ? &o->prompt : !strcmp(a, "--model") ? &o->model
                         : !strcmp(a, "--api-key") ? &o->api_key : NULL;
        int64_t *num = !strcmp(a, "--requests") ? &o->requests : !strcmp(a, "--max-tokens") ? &o->max_tokens
                     : !strcmp(a, "--max-inflight") ? &o->max_inflight : !strcmp(a, "--seed") ? &o->seed : NULL;
        double *real = !strcmp(a, "--duration") ? &o->duration : !strcmp(a, "--timeout") ? &o->timeout
                     : !strcmp(a, "--disconnect") ? &o->disconnect : NULL;
        if (dst) *dst = v;
        else if (num && e0_parse_i64(v, !strcmp(a, "--seed") ? 0 : 1, !strcmp(a, "--seed") ? INT64_MAX : 1 << 20, num, a, &e))
            return bench_error("%s", e.msg);
        else if (real && e0_parse_f64(v, !strcmp(a, "--disconnect") ? 0 : 1e-3, !strcmp(a, "--disconnect") ? 1 : 7 * 86400, real, a, &e))
            return bench_error("%s", e.msg);
        else if (!strcmp(a, "--rate")) {
            if (parse_rates(v, o)) return 1;
        } else if (!strcmp(a, "--slo")) {
            if (parse_slo(v, o)) return 1;
        } else if (!dst && !num && !real)
            return bench_error("load: unknown option '%s' (see edge0-bench load --help)", a);
    }
    if (!o->url || !o->out) return bench_error("load needs --url and --out (see --help)");
    return 0;
}

/* --prompts F.jsonl (or the one --prompt) into ctx's prompt table. */
static int load_prompts(run_ctx *c) {
    const load_opts *o = c->o;
    c->ptext = calloc(MAX_PROMPTS, sizeof *c->ptext);
    c->pmax = calloc(MAX_PROMPTS, sizeof *c->pmax);
    if (!c->ptext || !c->pmax) return bench_error("out of memory");
    if (!o->prompts) {
        c->ptext[0] = strdup(o->prompt);
        c->pmax[0] = (int)o->max_tokens;
        c->n_prompts = 1;
        return c->ptext[0] ? 0 : bench_error("out of memory");
    }
    FILE *f = fopen(o->prompts, "r");
    if (!f) return bench_error("--prompts %s: cannot open", o->prompts);
    char *line = NULL;
    size_t cap = 0;
    int ln = 0, rc = 0;
    for (ssize_t len; (len = getline(&line, &cap, f)) > 0 && !rc;) {
        ln++;
        if (strspn(line, " \t\r\n") == (size_t)len) continue;
        json_error_t je;
        json_t *j = json_loads(line, JSON_REJECT_DUPLICATES, &je);
        const char *p = json_string_value(json_object_get(j, "prompt"));
        json_t *mt = json_object_get(j, "max_tokens");
        if (!p) rc = bench_error("--prompts %s:%d: expected {\"prompt\": TEXT[, \"max_tokens\": N]}", o->prompts, ln);
        else if (mt && (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > 1 << 20))
            rc = bench_error("--prompts %s:%d: max_tokens must be a whole number in [1, %d]", o->prompts, ln, 1 << 20);
        else if (c->n_prompts == MAX_PROMPTS) rc = bench_error("--prompts %s: more than %d prompts", o->prompts, MAX_PROMPTS);
        else {
            c->ptext[c->n_prompts] = strdup(p);
            c->pmax[c->n_prompts++] = mt ? (int)json_integer_value(mt) : (int)o->max_tokens;
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    if (!rc && !c->n_prompts) rc = bench_error("--prompts %s: no prompts", o->prompts);
    return rc;
}

/* The schedule of one rate: arrival times, prompts and disconnects, from the seed and the rate. */
static void make_schedule(run_ctx *c, double rate) {
    uint64_t s = (uint64_t)c->o->seed ^ (uint64_t)(rate * 1e6) * 0x2545F4914F6CDD1Dull;
    double t = 0;
    if (rate <= 0) rate = INFINITY; /* closed loop: every request is due at the start */
    for (int i = 0; i < c->n; i++) {
        req *r = &c->reqs[i];
        memset(r, 0, sizeof *r);
        t += -log(rng_unit(&s)) / rate;
        r->id = i;
        r->t_sched = t;
        r->prompt = (int)(rng_next(&s) % (uint64_t)c->n_prompts);
        if (c->in_order) r->prompt = i % c->n_prompts;
        r->max_tokens = c->pmax[r->prompt];
        r->disconnect = rng_unit(&s) < c->o->disconnect;
        r->t_first = -1;
    }
}

static int on_event(void *user, const char *data, double t) {
    req *r = user;
    if (!strcmp(data, "[DONE]")) {
        r->done_seen = 1;
        return 0;
    }
    json_t *j = json_loads(data, 0, NULL);
    if (!j) return 0; /* not JSON: ignored, the stream goes on */
    const json_t *err = json_object_get(j, "error"); /* an error event (llama-server sends them mid-stream) */
    if (json_is_object(err) && !r->reason[0]) {
        const char *m = json_string_value(json_object_get(err, "message"));
        snprintf(r->reason, sizeof r->reason, "the stream carried an error: %.170s", m ? m : "(no message)");
    }
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    const char *text = json_string_value(json_object_get(ch, "text"));
    if (!text) text = json_string_value(json_object_get(json_object_get(ch, "delta"), "content"));
    /* a token arrived: text, or empty text before the end (bytes held back by the server) */
    const json_t *fin_v = json_object_get(ch, "finish_reason");
    if (text && (*text || !fin_v || json_is_null(fin_v))) {
        if (r->n_chunks == r->cap_chunks) {
            int cap = r->cap_chunks ? r->cap_chunks * 2 : 64;
            double *nc = realloc(r->chunks, (size_t)cap * sizeof *nc);
            if (!nc) {
                json_decref(j);
                return -1;
            }
            r->chunks = nc;
            r->cap_chunks = cap;
        }
        r->chunks[r->n_chunks++] = t; /* absolute here; made relative by the worker */
    }
    const char *fin = json_string_value(json_object_get(ch, "finish_reason"));
    if (fin) snprintf(r->finish, sizeof r->finish, "%s", fin);
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        r->prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
        r->completion_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
    }
    json_decref(j);
    return 0;
}

static void do_request(run_ctx *c, req *r) {
    json_t *pv = c->raw_prompts ? json_loads(c->ptext[r->prompt], JSON_DECODE_ANY, NULL) : json_string(c->ptext[r->prompt]);
    json_t *body = json_pack("{s:s, s:o, s:i, s:b, s:{s:b}, s:f, s:i}", "model", c->model, "prompt", pv ? pv : json_null(),
                             "max_tokens", r->max_tokens, "stream", 1, "stream_options", "include_usage", 1, "temperature", 0.0,
                             "seed", (int)(c->o->seed & 0x7fffffff));
    if (body && c->exact_lengths) {
        json_object_set_new(body, "ignore_eos", json_true());
        json_object_set_new(body, "cache_prompt", json_false());
    }
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        r->status = REQ_FAILED;
        snprintf(r->reason, sizeof r->reason, "out of memory");
        return;
    }
    http_request rq = {.url = &c->url, .method = "POST", .path = "/v1/completions", .body = text, .api_key = c->o->api_key,
                       .timeout = c->o->timeout, .max_body = (size_t)64 << 20, .sse = 1, .on_event = on_event, .user = r,
                       .cancel_after_events = r->disconnect ? 2 : 0};
    http_response rs;
    e0_err e = {{0}};
    r->t_send = mono() - c->t0;
    int rc = http_request_run(&rq, &rs, &e);
    r->t_end = (rs.t_end > 0 ? rs.t_end : mono()) - c->t0; /* no t_end when the connection failed */
    r->http_status = rs.status;
    for (int k = 0; k < r->n_chunks; k++) r->chunks[k] -= c->t0;
    r->t_first = r->n_chunks ? r->chunks[0] : -1;
    if (rc < 0) {
        r->status = REQ_FAILED;
        snprintf(r->reason, sizeof r->reason, "%.199s", e.msg);
    } else if (rs.cancelled) {
        r->status = REQ_CANCELLED;
        snprintf(r->reason, sizeof r->reason, "client disconnected on purpose after %d events (--disconnect)", rs.n_events);
    } else if (rs.status != 200) {
        r->status = REQ_FAILED;
        json_t *j = rs.body ? json_loads(rs.body, 0, NULL) : NULL;
        const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
        snprintf(r->reason, sizeof r->reason, "HTTP %d: %.150s", rs.status, m ? m : rs.body ? rs.body : "");
        json_decref(j);
    } else if (r->reason[0]) { /* an error event, its message kept by on_event */
        r->status = REQ_FAILED;
    } else if (!r->done_seen) {
        r->status = REQ_FAILED;
        snprintf(r->reason, sizeof r->reason, "the stream ended without data: [DONE]");
    } else if (r->completion_tokens <= 0) {
        r->status = REQ_FAILED;
        snprintf(r->reason, sizeof r->reason, "no usage.completion_tokens in the stream (stream_options.include_usage)");
    } else {
        r->status = REQ_OK;
    }
    http_response_free(&rs);
    free(text);
}

static void *worker(void *arg) {
    run_ctx *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int i = c->next < c->n ? c->next++ : -1;
        pthread_mutex_unlock(&c->mu);
        if (i < 0) return NULL;
        req *r = &c->reqs[i];
        double wait = r->t_sched - (mono() - c->t0);
        if ((c->o->duration > 0 && r->t_sched > c->o->duration) || proc_interrupted()) {
            r->status = REQ_NOT_SENT;
            snprintf(r->reason, sizeof r->reason, proc_interrupted() ? "the run was interrupted" : "arrival after --duration");
            continue;
        }
        if (wait > 0) proc_sleep(wait);
        if (proc_interrupted()) {
            r->status = REQ_NOT_SENT;
            snprintf(r->reason, sizeof r->reason, "the run was interrupted");
            continue;
        }
        do_request(c, r);
    }
}

/* p50/p90/p95/p99 (+ n, mean, min, max, warning) of x[0..n). */
static json_t *dist_json(const double *x, size_t n, const char *unit) {
    if (!n) return e0_unavailable("no samples");
    e0_summary s;
    if (e0_summarize(x, n, &s)) return e0_unavailable("out of memory");
    json_t *o = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "n", (json_int_t)n, "mean", s.mean, "min", s.min,
                          "max", s.max, "p50", s.p50, "p90", e0_percentile(x, n, 0.90), "p95", s.p95, "p99", s.p99, "unit", unit);
    char w[256];
    if (e0_small_n_warning(n, w, sizeof w)[0]) json_object_set_new(o, "warning", json_string(w));
    return o;
}

static char *get_text(run_ctx *c, const char *path) {
    http_request rq = {.url = &c->url, .method = "GET", .path = path, .api_key = c->o->api_key, .timeout = 30, .max_body = 16 << 20};
    http_response rs;
    e0_err e;
    if (http_request_run(&rq, &rs, &e) < 0 || rs.status != 200) {
        http_response_free(&rs);
        return NULL;
    }
    return rs.body ? rs.body : strdup("");
}

/* One rate: schedule, run, metrics. */
static json_t *run_rate(run_ctx *c, double rate) {
    const load_opts *o = c->o;
    make_schedule(c, rate);
    char *metrics_before = get_text(c, "/metrics");
    c->next = 0;
    c->t0 = mono();
    int nw = (int)(o->max_inflight < c->n ? o->max_inflight : c->n);
    pthread_t *th = calloc((size_t)nw, sizeof *th);
    int started = 0;
    for (int i = 0; th && i < nw; i++) started += pthread_create(&th[i], NULL, worker, c) == 0;
    if (!started) worker(c); /* no threads: run them one by one */
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    double wall = mono() - c->t0;
    char *metrics_after = get_text(c, "/metrics");
    /* our serve: wait (up to 5 s) until its streams are closed and its sequences done, so the
     * counters are final; each discarded scrape is one more 200 the server counted */
    int scrapes = 1; /* the "before" scrape: counted by the server after its text was made */
    const char *dialect = server_metrics_dialect(metrics_before);
    for (int k = 0; dialect && !strcmp(dialect, "edge0") && metrics_after && !server_metrics_idle(metrics_after) && k < 50; k++) {
        proc_sleep(0.1);
        free(metrics_after);
        metrics_after = get_text(c, "/metrics");
        scrapes++;
    }

    double *ttft = calloc((size_t)c->n + 1, sizeof *ttft), *tpot = calloc((size_t)c->n + 1, sizeof *tpot),
           *e2e = calloc((size_t)c->n + 1, sizeof *e2e), *itl = NULL;
    size_t n_itl = 0, cap_itl = 0, nt = 0, np = 0, ne = 0;
    int n_ok = 0, n_failed = 0, n_cancel = 0, n_not = 0, n_good = 0;
    int64_t out_tok = 0, in_tok = 0;
    json_t *reqs = json_array(), *reasons = json_object();
    window_view wv = {.scheduled = c->n, .scrapes = scrapes};
    double *busy = calloc((size_t)c->n * 2 + 2, sizeof *busy), *waits = calloc((size_t)c->n * 2 + 2, sizeof *waits);
    size_t n_iv = 0;
    for (int i = 0; i < c->n; i++) {
        req *r = &c->reqs[i];
        if (r->status == REQ_PENDING) { /* cannot happen: every request a worker takes ends in a status */
            r->status = REQ_FAILED;
            snprintf(r->reason, sizeof r->reason, "never run (a harness bug)");
        }
        if (r->status != REQ_NOT_SENT) {
            int k = 0;
            while (k < wv.n_status && wv.status[k] != r->http_status) k++;
            if (k == wv.n_status && k < 32) wv.status[wv.n_status++] = r->http_status;
            if (k < 32) wv.status_n[k]++;
            wv.sent++;
            if (busy && waits) {
                busy[2 * n_iv] = waits[2 * n_iv] = r->t_send;
                busy[2 * n_iv + 1] = r->t_end;
                waits[2 * n_iv + 1] = r->t_first >= 0 ? r->t_first : r->t_end;
                wv.busy_sum_seconds += busy[2 * n_iv + 1] - busy[2 * n_iv];
                wv.prefill_wait_sum_seconds += waits[2 * n_iv + 1] - waits[2 * n_iv];
                n_iv++;
            }
        }
        const char *st = r->status == REQ_OK ? "ok" : r->status == REQ_FAILED ? "failed" : r->status == REQ_CANCELLED ? "cancelled" : "not_sent";
        n_ok += r->status == REQ_OK;
        n_failed += r->status == REQ_FAILED;
        n_cancel += r->status == REQ_CANCELLED;
        n_not += r->status == REQ_NOT_SENT;
        if (r->status == REQ_FAILED || r->status == REQ_NOT_SENT) {
            json_t *k = json_object_get(reasons, r->reason);
            json_object_set_new(reasons, r->reason, json_integer(k ? json_integer_value(k) + 1 : 1));
        }
        double t_ttft = r->t_first >= 0 ? r->t_first - r->t_send : -1, t_tpot = -1;
        if (r->status == REQ_OK) {
            out_tok += r->completion_tokens;
            in_tok += r->prompt_tokens;
            if (ttft && t_ttft >= 0) ttft[nt++] = t_ttft;
            if (r->completion_tokens > 1 && r->t_first >= 0) t_tpot = (r->t_end - r->t_first) / (double)(r->completion_tokens - 1);
            if (tpot && t_tpot >= 0) tpot[np++] = t_tpot;
            if (e2e) e2e[ne++] = r->t_end - r->t_send;
            for (int k = 1; k < r->n_chunks; k++) {
                if (n_itl == cap_itl) {
                    cap_itl = cap_itl ? cap_itl * 2 : 1024;
                    double *ni = realloc(itl, cap_itl * sizeof *itl);
                    if (!ni) break;
                    itl = ni;
                }
                itl[n_itl++] = r->chunks[k] - r->chunks[k - 1];
            }
            n_good += t_ttft >= 0 && t_ttft <= o->slo_ttft && (t_tpot < 0 || t_tpot <= o->slo_tpot);
        }
        json_array_append_new(reqs, json_pack("{s:i, s:f, s:s, s:s?, s:i, s:i, s:I, s:I, s:s, s:o, s:o, s:o, s:b}", "id", r->id,
                                              "t_scheduled", r->t_sched, "status", st, "reason", r->reason[0] ? r->reason : NULL,
                                              "prompt", r->prompt, "max_tokens", r->max_tokens, "prompt_tokens",
                                              (json_int_t)r->prompt_tokens, "completion_tokens", (json_int_t)r->completion_tokens,
                                              "finish_reason", r->finish, "t_sent", r->status == REQ_NOT_SENT ? json_null() : json_real(r->t_send),
                                              "ttft", t_ttft >= 0 ? json_real(t_ttft) : json_null(), "e2e",
                                              r->status == REQ_OK ? json_real(r->t_end - r->t_send) : json_null(), "disconnect",
                                              r->disconnect));
        free(r->chunks);
        r->chunks = NULL;
    }
    wv.ok = n_ok, wv.failed = n_failed, wv.cancelled = n_cancel, wv.not_sent = n_not;
    wv.ok_prompt_tokens = in_tok, wv.ok_completion_tokens = out_tok;
    wv.busy_seconds = busy ? interval_union(busy, n_iv) : NAN;
    wv.prefill_window_seconds = waits ? interval_union(waits, n_iv) : NAN;
    free(busy);
    free(waits);
    json_t *res = json_pack("{s:f, s:f, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:b}, s:o, s:o, s:o, s:o, s:o, s:f, s:f, s:f, s:I, s:I, s:{s:f, s:f}, s:o, s:o, s:o}",
                            "rate", rate, "wall_seconds", wall, "requests", "scheduled", c->n, "ok", n_ok, "failed", n_failed,
                            "cancelled", n_cancel, "not_sent", n_not, "met_slo", n_good, "accounted",
                            n_ok + n_failed + n_cancel + n_not == c->n, "failure_reasons", reasons, "ttft_s",
                            dist_json(ttft, nt, "s"), "tpot_s", dist_json(tpot, np, "s"), "itl_s", dist_json(itl, n_itl, "s"),
                            "e2e_s", dist_json(e2e, ne, "s"), "request_throughput", n_ok / wall, "output_token_throughput",
                            (double)out_tok / wall, "goodput", n_good / wall, "prompt_tokens", (json_int_t)in_tok,
                            "completion_tokens", (json_int_t)out_tok, "slo", "ttft_s", o->slo_ttft, "tpot_s", o->slo_tpot,
                            "server_metrics_before", metrics_before ? json_string(metrics_before) : e0_unavailable("GET /metrics failed"),
                            "server_metrics_after", metrics_after ? json_string(metrics_after) : e0_unavailable("GET /metrics failed"),
                            "requests_detail", reqs);
    json_t *sm = server_metrics_check(metrics_before, metrics_after, &wv);
    json_object_set_new(res, "server_metrics", sm ? sm : e0_unavailable("out of memory"));
    if (json_is_object(sm) && !json_is_true(json_object_get(sm, "agree"))) {
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(sm, "disagreements"), k, d)
            bench_progress("rate %g req/s: the server's /metrics disagree: %s", rate, json_string_value(d));
    }
    if (c->keep_samples) {
        json_t *smp = json_object();
        const double *xs[] = {ttft, tpot, itl, e2e};
        const size_t ns[] = {nt, np, n_itl, ne};
        static const char *const names[] = {"ttft_s", "tpot_s", "itl_s", "e2e_s"};
        for (int k = 0; k < 4; k++) {
            json_t *a = json_array();
            for (size_t j = 0; xs[k] && j < ns[k]; j++) json_array_append_new(a, json_real(xs[k][j]));
            json_object_set_new(smp, names[k], a);
        }
        json_object_set_new(res, "samples", smp);
    }
    bench_progress("rate %g req/s: %d ok, %d failed, %d cancelled, %d not sent in %.1f s; %.2f req/s, %.1f tok/s out, goodput %.2f req/s",
                   rate, n_ok, n_failed, n_cancel, n_not, wall, n_ok / wall, (double)out_tok / wall, n_good / wall);
    free(metrics_before);
    free(metrics_after);
    free(ttft);
    free(tpot);
    free(e2e);
    free(itl);
    return res;
}

json_t *load_point_run(const load_point_spec *s, e0_err *e) {
    if (s->n_prompts < 1 || s->n_requests < 1 || s->max_inflight < 1) return e0_fail(e, "load: no prompts or requests"), NULL;
    load_opts o = {.url = s->url, .model = s->model, .api_key = s->api_key, .requests = s->n_requests,
                   .max_inflight = s->max_inflight, .seed = s->seed, .duration = s->duration,
                   .timeout = s->timeout > 0 ? s->timeout : 600, .slo_ttft = s->slo_ttft > 0 ? s->slo_ttft : 2.0,
                   .slo_tpot = s->slo_tpot > 0 ? s->slo_tpot : 0.2};
    run_ctx c = {.o = &o, .model = s->model, .ptext = (char **)s->prompt_json, .pmax = (int *)s->max_tokens,
                 .n_prompts = s->n_prompts, .n = s->n_requests, .raw_prompts = 1, .in_order = 1, .exact_lengths = 1,
                 .keep_samples = 1};
    if (http_parse_url(s->url, &c.url, e)) return NULL;
    c.reqs = calloc((size_t)c.n, sizeof *c.reqs);
    if (!c.reqs) return e0_fail(e, "out of memory"), NULL;
    pthread_mutex_init(&c.mu, NULL);
    json_t *r = run_rate(&c, s->rate);
    pthread_mutex_destroy(&c.mu);
    free(c.reqs);
    if (!r) e0_fail(e, "out of memory");
    else if (s->rate <= 0) json_object_set_new(r, "concurrency", json_integer(s->max_inflight));
    return r;
}

static char *markdown(const json_t *rep) {
    e0_strbuf b = {0};
    e0_sb_printf(&b, "# edge0-bench load\n\n- URL: %s, model `%s`, engine %s\n- Seed %lld, %lld requests per rate, SLO TTFT %.0f ms, TPOT %.0f ms\n\n",
                 json_string_value(json_object_get(rep, "url")), json_string_value(json_object_get(rep, "model")),
                 json_string_value(json_object_get(rep, "engine")) ? json_string_value(json_object_get(rep, "engine")) : "?",
                 (long long)json_integer_value(json_object_get(rep, "seed")),
                 (long long)json_integer_value(json_object_get(rep, "requests_per_rate")),
                 1000 * json_real_value(json_object_get(json_object_get(rep, "slo"), "ttft_s")),
                 1000 * json_real_value(json_object_get(json_object_get(rep, "slo"), "tpot_s")));
    e0_sb_printf(&b, "| rate req/s | ok | failed | cancelled | not sent | req/s | out tok/s | goodput req/s | TTFT p50 / p99 ms | TPOT p50 / p99 ms | ITL p99 ms | server `/metrics` |\n");
    e0_sb_printf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(rep, "rates"), i, r) {
        const json_t *q = json_object_get(r, "requests");
        const json_t *tt = json_object_get(r, "ttft_s"), *tp = json_object_get(r, "tpot_s"), *it = json_object_get(r, "itl_s");
#define MS(d, k) (json_is_object(d) ? 1000 * json_real_value(json_object_get(d, k)) : NAN)
        const json_t *sm = json_object_get(r, "server_metrics");
        char smt[160];
        if (json_is_object(sm))
            snprintf(smt, sizeof smt, "%s (%s)", json_is_true(json_object_get(sm, "agree")) ? "agree" : "**DISAGREE**",
                     json_string_value(json_object_get(sm, "dialect")));
        else snprintf(smt, sizeof smt, "not checked: %.120s", json_string_value(sm) ? json_string_value(sm) : "?");
        e0_sb_printf(&b, "| %g | %lld | %lld | %lld | %lld | %.2f | %.1f | %.2f | %.1f / %.1f | %.1f / %.1f | %.1f | %s |\n",
                     json_real_value(json_object_get(r, "rate")), (long long)json_integer_value(json_object_get(q, "ok")),
                     (long long)json_integer_value(json_object_get(q, "failed")),
                     (long long)json_integer_value(json_object_get(q, "cancelled")),
                     (long long)json_integer_value(json_object_get(q, "not_sent")),
                     json_real_value(json_object_get(r, "request_throughput")),
                     json_real_value(json_object_get(r, "output_token_throughput")), json_real_value(json_object_get(r, "goodput")),
                     MS(tt, "p50"), MS(tt, "p99"), MS(tp, "p50"), MS(tp, "p99"), MS(it, "p99"), smt);
#undef MS
    }
    json_array_foreach(json_object_get(rep, "rates"), i, r) {
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(json_object_get(r, "server_metrics"), "disagreements"), k, d)
            e0_sb_printf(&b, "- rate %g: `/metrics` disagree: %s\n", json_real_value(json_object_get(r, "rate")), json_string_value(d));
    }
    return e0_sb_take(&b);
}

int bench_load(int argc, char **argv) {
    load_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse_args(argc, argv, &o);
    if (prc) return prc == 2 ? 0 : 1;
    run_ctx c = {.o = &o, .n = (int)o.requests};
    e0_err e;
    if (http_parse_url(o.url, &c.url, &e)) return bench_error("--url %s", e.msg);
    if (bench_make_dir(o.out)) return 1;
    int rc = 1;
    json_t *rep = NULL;
    char *models = NULL, *model_buf = NULL;
    pthread_mutex_init(&c.mu, NULL);
    if (load_prompts(&c)) goto out;
    c.reqs = calloc((size_t)c.n, sizeof *c.reqs);
    if (!c.reqs) {
        bench_error("out of memory");
        goto out;
    }
    /* the engine's identity: GET /v1/models */
    models = get_text(&c, "/v1/models");
    json_t *mj = models ? json_loads(models, 0, NULL) : NULL;
    const char *first = json_string_value(json_object_get(json_array_get(json_object_get(mj, "data"), 0), "id"));
    const char *owner = json_string_value(json_object_get(json_array_get(json_object_get(mj, "data"), 0), "owned_by"));
    if (!o.model && !first) {
        json_decref(mj);
        bench_error("%s: GET /v1/models gave no model (give --model NAME)", o.url);
        goto out;
    }
    model_buf = strdup(o.model ? o.model : first);
    c.model = model_buf;
    proc_install_signal_handlers();
    json_t *rates = json_array();
    rep = json_pack("{s:s, s:s, s:s, s:s?, s:O?, s:o, s:o, s:I, s:I, s:{s:f, s:f}, s:o, s:f, s:o}", "format", "edge0-bench-load/1",
                    "url", o.url, "model", c.model, "engine", owner, "models", mj, "created_utc", bench_utc_now(), "harness",
                    e0_build_json(), "seed", (json_int_t)o.seed, "requests_per_rate", (json_int_t)o.requests, "slo", "ttft_s",
                    o.slo_ttft, "tpot_s", o.slo_tpot, "duration_s", o.duration > 0 ? json_real(o.duration) : json_null(), "disconnect_fraction",
                    o.disconnect, "rates", rates);
    json_decref(mj);
    if (!rep) {
        bench_error("out of memory");
        goto out;
    }
    int all_ok = 1;
    double best_goodput = -1;
    for (int k = 0; k < o.n_rates && !proc_interrupted(); k++) {
        json_t *r = run_rate(&c, o.rates[k]);
        json_array_append_new(rates, r);
        all_ok &= json_integer_value(json_object_get(json_object_get(r, "requests"), "ok")) > 0;
        if (o.sweep) { /* stop when goodput stops growing or p99 TTFT breaks the SLO */
            double g = json_real_value(json_object_get(r, "goodput"));
            const json_t *tt = json_object_get(r, "ttft_s");
            if (g <= best_goodput * 1.02 || (json_is_object(tt) && json_real_value(json_object_get(tt, "p99")) > o.slo_ttft)) break;
            best_goodput = g;
        }
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/load.json", o.out);
    if (json_dump_file(rep, path, JSON_INDENT(1) | JSON_SORT_KEYS)) {
        bench_error("cannot write %s", path);
        goto out;
    }
    char *md = markdown(rep);
    snprintf(path, sizeof path, "%s/load.md", o.out);
    if (!md || write_text_file(path, md, &e)) {
        free(md);
        bench_error("cannot write %s", path);
        goto out;
    }
    free(md);
    bench_progress("wrote %s/load.json, load.md", o.out);
    rc = all_ok ? 0 : bench_error("a rate completed no request (see %s/load.md)", o.out);
out:
    json_decref(rep);
    free(models);
    free(model_buf);
    for (int i = 0; c.ptext && i < c.n_prompts; i++) free(c.ptext[i]);
    free(c.ptext);
    free(c.pmax);
    free(c.reqs);
    pthread_mutex_destroy(&c.mu);
    return rc;
}
