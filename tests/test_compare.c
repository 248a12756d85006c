/* test_compare.c — `edge0-bench compare` (bench/compare.c) end to end on a small golden model:
 * edge0 against the pinned llama.cpp (skipped, with the reason, when it cannot be installed
 * because the npm registry is unreachable): the report files and fields (both engines, their
 * processes alternated, the same prompt token ids seen by each, the model's real sha256, the
 * ratios, the Markdown comparison and the SVG), `report render` on it, and the refusal of unlike
 * comparisons: a model file with another sha256 for one engine is refused before anything runs
 * (exit 1, the reason in the message and the report). The openai adapter against our own
 * `serve` on a free loopback port: edge0 (CLI) vs openai= in single mode (the same terms, the
 * model checked by the file size the server reports), openai batch sizes, a different context
 * refused. --mode server: every request accounted for (completed, failed, not sent), the server's
 * /metrics agreeing with the client on every window (and disagreeing, exit 1, when another client
 * uses the server meanwhile), the same seed giving the same arrivals (another seed others).
 * --mode batch with both process engines (bench --batch-size, llamacpp-bench --batch-size);
 * tools/compare_report.sh with tiny settings. Bad arguments: one clear error, exit 1. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

static char bench_bin[1024], model[1024], other[1024], dir[1024], ll_skip[1200];
static char lb[1024], ll_bin[1100]; /* the build dir holding llama.cpp (as test_llamacpp.c finds it), its llamacpp-bench */
static char out[1 << 16];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192], full[8300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    return t_sh(full, out, sizeof out);
}

static json_t *load_report(const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/report.json", dir, name);
    json_t *r = json_load_file(path, 0, NULL);
    CHECKF(r != NULL, "no report %s", path);
    return r;
}

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* `compare` of edge0 against llama.cpp into DIR/NAME with FLAGS (then the small protocol every
 * such test uses): its report, checked comparable; NULL when the test is skipped (no llama.cpp)
 * or has failed. The caller json_decref's it. */
static json_t *compare_llamacpp(const char *name, const char *flags) {
    if (ll_skip[0]) {
        t_skip("%s", ll_skip);
        return NULL;
    }
    int rc = sh("'%s' compare --model '%s' --out '%s/%s' --engines edge0,llama.cpp %s --cooldown 0 --prompt short --threads 2 "
                "--llamacpp '%s'",
                bench_bin, model, dir, name, flags, ll_bin);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *r = load_report(name);
    if (r) CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
    return r;
}

static void test_edge0_vs_llamacpp(void) {
    json_t *r = compare_llamacpp("ok", "--simd avx2 --rounds 2 --warmup 1 --ntok 6");
    if (!r) return;
    /* alternated: edge0 1/2, llama.cpp 1/2, edge0 2/2, llama.cpp 2/2 */
    const char *a = strstr(out, "edge0 1/2: running"), *b = a ? strstr(a, "llama.cpp 1/2: running") : NULL,
               *c = b ? strstr(b, "edge0 2/2: running") : NULL, *d = c ? strstr(c, "llama.cpp 2/2: running") : NULL;
    CHECKF(d != NULL, "processes not alternated: %s", out);
    CHECK(!strcmp(json_string_value(get(r, "kind")), "compare"));
    char sha[128] = "";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sha256sum '%s' | cut -c1-64", model);
    t_sh(cmd, sha, sizeof sha);
    sha[64] = 0;
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 2);
    long long n_ids = (long long)json_integer_value(get(get(r, "protocol"), "prompt_tokens"));
    CHECK(n_ids > 10);
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *e = json_array_get(cfgs, i), *id = get(e, "identity");
        CHECK(!strcmp(json_string_value(get(e, "name")), i ? "llama.cpp" : "edge0"));
        CHECK(json_integer_value(get(e, "ok")) == 2 && json_array_size(get(e, "processes")) == 2);
        CHECKF(json_string_value(get(id, "model_sha256")) && !strcmp(json_string_value(get(id, "model_sha256")), sha),
               "sha %s vs %s", json_string_value(get(id, "model_sha256")), sha);
        CHECK(json_integer_value(get(get(id, "terms"), "n_prompt")) == n_ids);
        CHECK(!strcmp(json_string_value(get(get(id, "terms"), "kv_type_k")), "f16"));
        CHECK(json_is_object(get(id, "engine")));
        /* --simd avx2: edge0 at the AVX2 level, llama.cpp with only its AVX2 CPU backend */
        if (i == 0) CHECK(json_string_value(get(get(id, "engine"), "simd")) && !strcmp(json_string_value(get(get(id, "engine"), "simd")), "avx2"));
        else CHECK(json_string_value(get(get(id, "engine"), "system_info")) &&
                   strstr(json_string_value(get(get(id, "engine"), "system_info")), "AVX512") == NULL);
        CHECK(json_is_object(get(get(e, "metrics"), "decode_tokens_per_second")));
    }
    const json_t *ratio = get(get(get(r, "comparison"), "first_over_engine"), "llama.cpp");
    CHECK(json_is_number(get(ratio, "decode_tokens_per_second")) && json_number_value(get(ratio, "decode_tokens_per_second")) > 0);
    /* two rounds: the small-n warning */
    int small = 0;
    for (size_t i = 0; i < json_array_size(get(r, "warnings")); i++)
        small |= strstr(json_string_value(json_array_get(get(r, "warnings"), i)), "p95") != NULL;
    CHECK(small);
    json_decref(r);
    CHECK(sh("grep -c '## Comparison' '%s/ok/report.md'", dir) == 0 && atoi(out) == 1);
    CHECK(sh("head -c 200 '%s/ok/report.svg'", dir) == 0 && strstr(out, "<svg ") != NULL);
    CHECK(sh("'%s' report render '%s/ok/report.json'", bench_bin, dir) == 0 && strstr(out, "## Comparison") != NULL);
}

static void test_refuses_other_model(void) {
    /* refused before any process runs: without llama.cpp installed a stand-in binary that is never
     * started does (were it started, it would print no row and the checks below would fail) */
    const char *ll = ll_skip[0] ? "/bin/false" : ll_bin;
    int rc = sh("'%s' compare --model '%s' --out '%s/refused' --engines edge0,llama.cpp --engine-model 'llama.cpp=%s' "
                "--rounds 1 --cooldown 0 --prompt short --llamacpp '%s'",
                bench_bin, model, dir, other, ll);
    CHECKF(rc == 1, "exit %d: %s", rc, out);
    CHECKF(strstr(out, "comparison refused: model sha256 differs") != NULL, "%s", out);
    CHECK(strstr(out, "running") == NULL); /* refused before any process */
    json_t *r = load_report("refused");
    if (!r) return;
    CHECK(json_is_false(get(get(r, "comparison"), "comparable")));
    CHECK(json_array_size(get(get(r, "comparison"), "refused")) == 1);
    json_decref(r);
    CHECK(sh("grep -c 'Refused' '%s/refused/report.md'", dir) == 0 && atoi(out) == 1);
}

/* `edge0-infer serve --port 0 ARGS` in the background: its pid, url filled (0 when it listens). */
static pid_t start_serve(const char *args, char *url, size_t cap) {
    char log[1200], cmd[4096];
    snprintf(log, sizeof log, "%s/serve.log", dir);
    snprintf(cmd, sizeof cmd, "exec %s/bin/edge0-infer serve --port 0 %s 2>%s", t_build(), args, log);
    unlink(log);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600 && pid > 0; i++) {
        FILE *f = fopen(log, "r");
        char line[1024];
        int port = 0;
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "listening on http://127.0.0.1:");
            if (p) port = atoi(p + strlen("listening on http://127.0.0.1:"));
        }
        if (f) fclose(f);
        if (port > 0) {
            snprintf(url, cap, "http://127.0.0.1:%d", port);
            return pid;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) return -1;
        usleep(100000);
    }
    return -1;
}

static void stop_serve(pid_t pid) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void test_openai_adapter(void) {
    char url[128], args[2048];
    snprintf(args, sizeof args, "-m '%s' -np 4 -c 1024 -t 2", model);
    pid_t pid = start_serve(args, url, sizeof url);
    CHECKF(pid > 0, "serve did not start (see %s/serve.log)", dir);
    if (pid <= 0) return;
    /* the CLI with the serve's per-slot context (1024 / 4) against the server */
    int rc = sh("'%s' compare --model '%s' --out '%s/openai' --engines edge0,openai=%s --rounds 2 --warmup 1 --ntok 6 "
                "--cooldown 0 --prompt short --threads 2 --context 256",
                bench_bin, model, dir, url);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *r = load_report("openai");
    if (r) {
        CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
        const json_t *cfgs = get(r, "configurations");
        CHECK(json_array_size(cfgs) == 2);
        const json_t *oe = json_array_get(cfgs, 1);
        CHECK(!strncmp(json_string_value(get(oe, "name")), "openai@127.0.0.1:", 17));
        CHECK(json_integer_value(get(oe, "ok")) == 2);
        const json_t *t0 = get(get(json_array_get(cfgs, 0), "identity"), "terms"), *t1 = get(get(oe, "identity"), "terms");
        CHECKF(json_equal(t0, t1), "terms differ");
        CHECK(json_integer_value(get(t1, "n_prompt")) == json_integer_value(get(get(r, "protocol"), "prompt_tokens")));
        int unverified = 0;
        for (size_t i = 0; i < json_array_size(get(r, "warnings")); i++)
            unverified |= strstr(json_string_value(json_array_get(get(r, "warnings"), i)), "model sha256 not verified") != NULL;
        CHECK(unverified);
        json_decref(r);
    }
    /* batch sizes of one engine */
    rc = sh("'%s' compare --model '%s' --out '%s/batch' --engines openai=%s --mode batch --batch-size 1,3 --rounds 1 "
            "--warmup 1 --ntok 6 --cooldown 0 --prompt short",
            bench_bin, model, dir, url);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    r = load_report("batch");
    if (r) {
        const json_t *cfgs = get(r, "configurations");
        CHECK(json_array_size(cfgs) == 2);
        CHECK(json_integer_value(get(json_array_get(cfgs, 1), "batch_size")) == 3);
        const json_t *row = get(json_array_get(get(json_array_get(cfgs, 1), "processes"), 0), "row");
        CHECK(json_integer_value(get(row, "batch_size")) == 3 && json_number_value(get(row, "decode_tokens_per_second")) > 0);
        json_decref(r);
    }
    /* a different context is refused (the CLI's 512 against the slot's 256) */
    rc = sh("'%s' compare --model '%s' --out '%s/ctx' --engines edge0,openai=%s --rounds 1 --warmup 1 --ntok 4 --cooldown 0 "
            "--prompt short --threads 2 --context 512",
            bench_bin, model, dir, url);
    CHECKF(rc == 1 && strstr(out, "comparison refused: context"), "exit %d: %s", rc, out);
    stop_serve(pid);
}

/* p50 <= p90 <= p99 within [min, max] of a pooled distribution; n as expected (< 0: any > 0). */
static int dist_ok(const json_t *d, long long n) {
    double mn = json_number_value(get(d, "min")), p50 = json_number_value(get(d, "p50")), p90 = json_number_value(get(d, "p90")),
           p99 = json_number_value(get(d, "p99")), mx = json_number_value(get(d, "max"));
    long long dn = (long long)json_integer_value(get(d, "n"));
    return json_is_object(d) && (n < 0 ? dn > 0 : dn == n) && mn >= 0 && mn <= p50 && p50 <= p90 && p90 <= p99 && p99 <= mx;
}

/* The arrival times (t_scheduled) of a load point's process record, as "t0 t1 ..." (%.9f). */
static void schedule_of(const json_t *proc, char *buf, size_t cap, size_t first_n) {
    size_t n = 0;
    buf[0] = 0;
    const json_t *reqs = get(get(proc, "row"), "requests_detail");
    for (size_t k = 0; k < json_array_size(reqs) && k < first_n; k++)
        n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%.9f ", json_number_value(get(json_array_get(reqs, k), "t_scheduled")));
}

/* The /metrics check of a configuration's server summary: agreed, strictly (our serve), on every
 * round, with the server's token counts equal to the client's. */
static int metrics_agree(const json_t *cfg, long long rounds, long long out_tokens) {
    const json_t *sm = get(get(cfg, "server"), "server_metrics");
    return json_is_object(sm) && json_is_true(get(sm, "agree")) && json_is_true(get(sm, "strict")) &&
           !strcmp(json_string_value(get(sm, "dialect")), "edge0") && json_integer_value(get(sm, "checked")) == rounds &&
           json_array_size(get(sm, "disagreements")) == 0 &&
           json_number_value(get(get(sm, "server"), "completion_tokens")) == (double)out_tokens * (double)rounds &&
           json_number_value(get(get(sm, "server"), "completion_tokens")) == json_number_value(get(get(sm, "client"), "completion_tokens")) &&
           json_number_value(get(get(sm, "server"), "prompt_tokens")) == json_number_value(get(get(sm, "client"), "prompt_tokens")) &&
           json_number_value(get(get(sm, "server"), "prompt_tokens")) > 0;
}

/* --mode server: our serve started by compare (edge0) against another serve on loopback given as
 * openai=URL; two Poisson rates and a closed-loop concurrency, two rounds alternated. */
static void test_server_mode(void) {
    char url[128], args[2048], rate8[1024] = "";
    /* the serve compare starts: -np 4, 4 slots of the largest prompt + output rounded to 256 */
    snprintf(args, sizeof args, "-m '%s' -np 4 -c 1024 -t 2", model);
    pid_t pid = start_serve(args, url, sizeof url);
    CHECKF(pid > 0, "serve did not start (see %s/serve.log)", dir);
    if (pid <= 0) return;
    int rc = sh("'%s' compare --model '%s' --out '%s/server' --engines edge0,openai=%s --mode server --rates 4,8 --concurrency 2 "
                "--requests 6 --rounds 2 --cooldown 0 --prompt short --threads 2 --parallel 4 --prompt-len 16 --output-len 6",
                bench_bin, model, dir, url);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    /* alternated: edge0's server for its three points, then the other, then round 2 */
    const char *a = strstr(out, "edge0 rate=4 1/2: running"), *b = a ? strstr(a, "rate=4 1/2: running") : NULL;
    const char *c = b ? strstr(b + 1, "edge0 rate=4 2/2: running") : NULL;
    CHECKF(a && b && c, "server rounds not alternated: %s", out);
    json_t *r = load_report("server");
    if (r) {
        CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
        CHECK(!strcmp(json_string_value(get(get(r, "protocol"), "mode")), "server"));
        const json_t *sp = get(get(r, "protocol"), "server");
        CHECK(json_array_size(get(sp, "prompt_lengths")) == 6 && json_integer_value(get(sp, "slot_context")) == 256);
        long long out_tokens = 0; /* every request's output length (ignore_eos: exact) */
        for (size_t k = 0; k < json_array_size(get(sp, "output_lengths")); k++)
            out_tokens += json_integer_value(json_array_get(get(sp, "output_lengths"), k));
        const json_t *cfgs = get(r, "configurations");
        CHECK(json_array_size(cfgs) == 6);
        for (size_t i = 0; i < json_array_size(cfgs); i++) {
            const json_t *e = json_array_get(cfgs, i), *s = get(e, "server"), *q = get(s, "requests");
            const char *name = json_string_value(get(e, "name"));
            CHECKF(json_integer_value(get(e, "ok")) == 2, "%s: %lld ok rounds", name, (long long)json_integer_value(get(e, "ok")));
            long long sched = (long long)json_integer_value(get(q, "scheduled")), ok = (long long)json_integer_value(get(q, "ok"));
            CHECKF(sched == 12 && ok + json_integer_value(get(q, "failed")) + json_integer_value(get(q, "cancelled")) +
                                          json_integer_value(get(q, "not_sent")) == sched,
                   "%s: counts", name);
            CHECKF(ok == 12 && json_integer_value(get(q, "errors")) == 0, "%s: %lld ok", name, ok);
            /* never lost: completed + failed + not sent = scheduled, said so */
            CHECKF(json_is_true(get(q, "accounted")) && json_integer_value(get(q, "completed")) +
                                                           json_integer_value(get(q, "failed_or_cancelled")) +
                                                           json_integer_value(get(q, "not_sent")) == sched,
                   "%s: not accounted", name);
            /* the server's own counters agree with the client's, both rounds */
            CHECKF(metrics_agree(e, 2, out_tokens), "%s: /metrics: %s", name,
                   json_dumps(get(get(e, "server"), "server_metrics"), JSON_COMPACT));
            const json_t *checks = get(get(get(json_array_get(get(e, "processes"), 0), "row"), "server_metrics"), "checks");
            CHECKF(json_array_size(checks) >= 8, "%s: %zu checks", name, json_array_size(checks));
            /* ITL: gaps between chunks. A server that is ahead of its reader sends several tokens in one
             * chunk, and this tiny model can finish a reply before the reader wakes: then no request
             * had two chunks and the distribution says so (not a failure). */
            const json_t *itl = get(s, "itl_s");
            int itl_ok = dist_ok(itl, -1) || (json_is_string(itl) && !strcmp(json_string_value(itl), "unavailable: no samples"));
            CHECKF(dist_ok(get(s, "ttft_s"), ok) && dist_ok(get(s, "e2e_s"), ok) && itl_ok &&
                   dist_ok(get(s, "tpot_s"), -1), "%s: distributions: ttft %s e2e %s itl %s tpot %s", name,
                   json_dumps(get(s, "ttft_s"), JSON_COMPACT), json_dumps(get(s, "e2e_s"), JSON_COMPACT),
                   json_dumps(get(s, "itl_s"), JSON_COMPACT), json_dumps(get(s, "tpot_s"), JSON_COMPACT));
            /* ITL gaps between text chunks: at most output - 1 per request over both rounds (a chunk may
             * carry several tokens when the server holds bytes back) */
            CHECKF(json_integer_value(get(get(s, "itl_s"), "n")) <= 2 * (out_tokens - 6), "%s: %lld ITL samples, at most %lld", name,
                   (long long)json_integer_value(get(get(s, "itl_s"), "n")), 2 * (out_tokens - 6));
            CHECK(json_number_value(get(s, "output_token_throughput")) > 0 && json_number_value(get(s, "request_throughput")) > 0);
            const json_t *row = get(json_array_get(get(e, "processes"), 0), "row");
            CHECK(json_integer_value(get(row, "completion_tokens")) == out_tokens);
            CHECK(get(row, "samples") == NULL); /* pooled into "server", not kept twice */
            CHECK(json_is_object(get(e, "load_point")));
        }
        CHECK(json_integer_value(get(get(json_array_get(cfgs, 2), "load_point"), "concurrency")) == 2);
        /* the same seed gives the same arrivals: both rounds, both engines, per rate; the rates differ */
        char s0[1024], s1[1024];
        for (size_t p = 0; p < 2; p++) {
            schedule_of(json_array_get(get(json_array_get(cfgs, p), "processes"), 0), s0, sizeof s0, 64);
            CHECKF(strlen(s0) > 6 * 3, "rate %zu: no schedule", p);
            for (size_t i = p; i < json_array_size(cfgs); i += 3)
                for (size_t k = 0; k < 2; k++) {
                    schedule_of(json_array_get(get(json_array_get(cfgs, i), "processes"), k), s1, sizeof s1, 64);
                    CHECKF(!strcmp(s0, s1), "config %zu round %zu: another schedule: %s vs %s", i, k + 1, s1, s0);
                }
        }
        schedule_of(json_array_get(get(json_array_get(cfgs, 0), "processes"), 0), s0, sizeof s0, 64);
        schedule_of(json_array_get(get(json_array_get(cfgs, 1), "processes"), 0), s1, sizeof s1, 64);
        CHECK(strcmp(s0, s1) != 0); /* rate 4 and rate 8 */
        schedule_of(json_array_get(get(json_array_get(cfgs, 1), "processes"), 0), rate8, sizeof rate8, 4);
        json_decref(r);
    }
    CHECK(sh("grep -c '## Server load' '%s/server/report.md'", dir) == 0 && atoi(out) == 1);
    CHECK(sh("grep -c '2 clients' '%s/server/report.md'", dir) == 0 && atoi(out) == 2);
    /* the curve: a polyline per engine and panel, one point per rate */
    CHECK(sh("grep -c '<polyline' '%s/server/server.svg'", dir) == 0 && atoi(out) == 4);
    CHECK(sh("grep -o 'points=\"[^\"]*\"' '%s/server/server.svg' | head -1 | tr ' ' '\\n' | grep -c ,", dir) == 0 && atoi(out) == 2);
    /* --server-url: edge0 measured at a server already running (not started by compare) */
    rc = sh("'%s' compare --model '%s' --out '%s/server-url' --engines edge0,openai=%s --server-url edge0=%s --mode server "
            "--rates 8 --requests 4 --rounds 1 --cooldown 0 --prompt short --threads 2 --prompt-len 8 --output-len 4",
            bench_bin, model, dir, url, url);
    CHECKF(rc == 0 && !strstr(out, "starting edge0-infer serve"), "exit %d: %s", rc, out);
    r = load_report("server-url");
    if (r) {
        const json_t *p0 = json_array_get(get(json_array_get(get(r, "configurations"), 0), "processes"), 0);
        CHECK(json_string_value(get(p0, "url")) && !strcmp(json_string_value(get(p0, "url")), url));
        CHECK(json_integer_value(get(get(get(json_array_get(get(r, "configurations"), 0), "server"), "requests"), "ok")) == 4);
        /* another invocation, the same seed and rate: the first 4 arrivals of the run above */
        char s[1024];
        schedule_of(p0, s, sizeof s, 4);
        CHECKF(rate8[0] && !strcmp(s, rate8), "seed 42 rate 8: %s vs %s", s, rate8);
        json_decref(r);
    }
    /* another seed, another schedule; and another client on the same server meanwhile (edge0-bench
     * load in the background): the server's counters see its requests too, the check says so and
     * compare exits 1 */
    char bg[1200];
    snprintf(bg, sizeof bg, "%s/interfere", dir);
    pid_t lp = fork();
    if (lp == 0) {
        char log[1300];
        snprintf(log, sizeof log, "%s.log", bg);
        FILE *f = freopen(log, "w", stderr);
        (void)f;
        execl(bench_bin, bench_bin, "load", "--url", url, "--out", bg, "--rate", "20", "--requests", "400", "--max-tokens", "3",
              (char *)NULL);
        _exit(127);
    }
    rc = sh("'%s' compare --model '%s' --out '%s/server-noisy' --engines openai=%s --mode server --rates 4,8 --requests 4 "
            "--rounds 1 --cooldown 0 --prompt short --prompt-len 8 --output-len 4 --seed 7",
            bench_bin, model, dir, url);
    kill(lp, SIGTERM);
    waitpid(lp, NULL, 0);
    CHECKF(rc == 1 && strstr(out, "/metrics disagree") != NULL, "exit %d: %s", rc, out);
    r = load_report("server-noisy");
    if (r) {
        const json_t *c1 = json_array_get(get(r, "configurations"), 1), *sm = get(get(c1, "server"), "server_metrics");
        CHECK(json_is_false(get(sm, "agree")) && json_array_size(get(sm, "disagreements")) > 0);
        CHECK(json_is_false(get(get(r, "comparison"), "server_metrics_consistent")));
        char s[1024];
        schedule_of(json_array_get(get(c1, "processes"), 0), s, sizeof s, 4);
        CHECKF(s[0] && strcmp(s, rate8) != 0, "seed 7 gave seed 42's arrivals: %s", s);
        json_decref(r);
    }
    CHECK(sh("grep -c 'DISAGREE' '%s/server-noisy/report.md'", dir) == 0 && atoi(out) >= 1);
    stop_serve(pid);
}

/* llama.cpp in --mode server: its own llama-server, built from the pinned source by `make
 * llamaserver` (not by make test: it takes minutes), started by compare like our serve. Without it
 * compare says what to do (exit 1) and the llama.cpp half is skipped, with the reason. */
static void test_server_mode_llamacpp(void) {
    char ls_bin[1200];
    snprintf(ls_bin, sizeof ls_bin, "%s/llamacpp/server/bin/llama-server", t_build());
    if (access(ls_bin, X_OK) != 0) {
        int rc = sh("'%s' compare --model '%s' --out '%s/server-ll' --engines edge0,llama.cpp --mode server", bench_bin, model, dir);
        CHECKF(rc == 1 && strstr(out, "make llamaserver"), "exit %d: %s", rc, out);
        t_skip("llama.cpp in --mode server: no llama-server built (make llamaserver; node-llama-cpp@3.21.1 ships none)");
        return;
    }
    int rc = sh("'%s' compare --model '%s' --out '%s/server-ll' --engines edge0,llama.cpp --mode server --rates 4 --requests 4 "
                "--rounds 1 --cooldown 0 --prompt short --prompt-len 8 --output-len 4 --parallel 2 --threads 2",
                bench_bin, model, dir);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *r = load_report("server-ll");
    if (!r) return;
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 2);
    int seen_llama = 0;
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *c = json_array_get(cfgs, i), *q = get(get(c, "server"), "requests");
        const char *engine = json_string_value(get(c, "engine"));
        const int llama = engine && !strcmp(engine, "llama.cpp");
        seen_llama += llama;
        /* none lost: every scheduled request completed or failed with its reason. edge0: all
         * complete. llama-server (this commit) answers HTTP 500 / an error event "The model produced
         * output that does not match the expected Content-only format" when greedy output holds
         * invalid UTF-8, which this random-weight model's byte tokens make; any other failure fails */
        long long ok = (long long)json_integer_value(get(q, "ok")), failed = (long long)json_integer_value(get(q, "failed"));
        CHECKF(json_integer_value(get(q, "scheduled")) == 4 && json_is_true(get(q, "accounted")) && ok >= 1 &&
                   ok + failed == 4 && (llama || ok == 4),
               "%s: %lld of 4 requests ok, %lld failed", engine ? engine : "?", ok, failed);
        const json_t *p0 = json_array_get(get(c, "processes"), 0), *det = get(get(p0, "row"), "requests_detail");
        for (size_t k = 0; k < json_array_size(det); k++) {
            const json_t *rq = json_array_get(det, k);
            const char *why = json_string_value(get(rq, "reason"));
            if (strcmp(json_string_value(get(rq, "status")), "ok") != 0)
                CHECKF(llama && why && strstr(why, "Content-only format"), "%s request %zu: %s", engine ? engine : "?", k,
                       why ? why : "no reason");
        }
    }
    CHECK(seen_llama == 1);
    json_decref(r);
}

static void test_sustained_mode(void) {
    json_t *r = compare_llamacpp("sustained", "--mode sustained --duration 3 --warmup 1 --ntok 8 --rounds 1");
    if (!r) return;
    CHECK(json_number_value(get(get(r, "protocol"), "duration_seconds")) == 3);
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 2);
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *su = get(json_array_get(cfgs, i), "sustained");
        const json_t *row = get(json_array_get(get(json_array_get(cfgs, i), "processes"), 0), "row");
        CHECK(json_number_value(get(su, "mean_tokens_per_second")) > 0);
        /* decoded for the duration (not --ntok steps) */
        CHECKF(json_number_value(get(get(row, "sustained"), "seconds")) >= 3, "config %zu: %g s", i,
               json_number_value(get(get(row, "sustained"), "seconds")));
        size_t n = json_array_size(get(get(su, "series"), "tokens_per_second"));
        CHECK(n >= 1 && n == json_array_size(get(get(su, "series"), "t_s")));
        const json_t *p0 = json_array_get(get(su, "processes"), 0);
        CHECK((size_t)json_integer_value(get(p0, "intervals")) == n);
        CHECK(json_is_number(get(su, "slope_tokens_per_second_per_minute")) == (n >= 2));
    }
    json_decref(r);
    CHECK(sh("grep -c '## Sustained decode' '%s/sustained/report.md'", dir) == 0 && atoi(out) == 1);
}

static void test_depth_mode(void) {
    /* depth 240: the pp rows' context (240 + 32 -> 512) differs from the tg row's (248 -> 256), as
     * it may: terms are compared between engines at the same row only */
    json_t *r = compare_llamacpp("depth", "--depth 0,240 --depth-prompt 32 --ntok 8 --rounds 2");
    if (!r) return;
    CHECK(!strcmp(json_string_value(get(get(r, "protocol"), "mode")), "depth"));
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 12); /* 2 engines x 2 depths x (pp and tg with the prefix cached, pp cold) */
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *e = json_array_get(cfgs, i), *d = get(e, "depth");
        const char *test = json_string_value(get(d, "test"));
        const int cold = !strcmp(test, "pp_cold"), pp = cold || !strcmp(test, "pp");
        const long long depth = (i % 6) < 3 ? 0 : 240;
        CHECK(json_integer_value(get(d, "depth")) == depth);
        CHECK(!strcmp(test, (const char *const[]){"pp", "tg", "pp_cold"}[i % 3]));
        CHECK(json_integer_value(get(e, "ok")) == 2);
        const json_t *m = get(get(e, "metrics"), pp ? "prefill_tokens_per_second" : "decode_tokens_per_second");
        CHECKF(json_number_value(get(m, "median")) > 0, "%s", json_string_value(get(e, "name")));
        const json_t *row = get(json_array_get(get(e, "processes"), 0), "row");
        /* cold: nothing cached, the depth's tokens and the prompt prefilled together */
        CHECK(json_integer_value(get(row, "n_depth")) == (cold ? 0 : depth));
        CHECK(json_integer_value(get(row, pp ? "n_prompt" : "n_gen")) == (cold ? depth + 32 : pp ? 32 : 8));
        CHECK(json_integer_value(get(d, "kv_tokens")) == (cold ? 0 : depth));
    }
    json_decref(r);
    CHECK(sh("grep -c '| tg8 | 240 |' '%s/depth/report.md'", dir) == 0 && atoi(out) == 1);
    CHECK(sh("grep -c '| pp272 cold | 240 |' '%s/depth/report.md'", dir) == 0 && atoi(out) == 1);

    /* --no-cold: the two rows with the prefix cached per depth, no cold one */
    r = compare_llamacpp("depth-nocold", "--depth 240 --depth-prompt 32 --ntok 8 --rounds 1 --no-cold");
    if (!r) return;
    cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 4); /* 2 engines x (pp, tg) */
    CHECK(json_is_false(get(get(r, "protocol"), "depth_cold_rows")));
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *d = get(json_array_get(cfgs, i), "depth");
        CHECK(!strcmp(json_string_value(get(d, "test")), i % 2 ? "tg" : "pp"));
        CHECK(json_integer_value(get(d, "depth")) == 240 && json_integer_value(get(d, "kv_tokens")) == 240);
    }
    json_decref(r);
    CHECK(sh("grep -c ' cold |' '%s/depth-nocold/report.md'", dir) == 1 && atoi(out) == 0);
    CHECK(sh("grep -c '| tg8 | 240 |' '%s/depth-nocold/report.md'", dir) == 0 && atoi(out) == 1);
}

/* --mode batch with the process engines: edge0-infer bench --batch-size B and llamacpp-bench
 * --batch-size B (llama.cpp: skipped when it is not installed) per configuration, side by side */
static void test_batch_cli(void) {
    int ll = !ll_skip[0];
    int rc = sh("'%s' compare --model '%s' --out '%s/batch-cli' --engines %s --mode batch --batch-size 1,3 --rounds 1 "
                "--warmup 1 --ntok 6 --cooldown 0 --prompt short --threads 2 --llamacpp '%s'",
                bench_bin, model, dir, ll ? "edge0,llama.cpp" : "edge0", ll_bin);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *r = load_report("batch-cli");
    if (!r) return;
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == (ll ? 4u : 2u));
    CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *row = get(json_array_get(get(json_array_get(cfgs, i), "processes"), 0), "row");
        CHECK(json_integer_value(get(row, "batch_size")) == (i % 2 ? 3 : 1));
        CHECK(json_number_value(get(row, "decode_tokens_per_second")) > 0);
        CHECKF(json_number_value(get(row, "per_sequence_decode_tokens_per_second")) * (i % 2 ? 3 : 1) ==
                   json_number_value(get(row, "decode_tokens_per_second")) ||
               fabs(json_number_value(get(row, "per_sequence_decode_tokens_per_second")) * (i % 2 ? 3 : 1) /
                        json_number_value(get(row, "decode_tokens_per_second")) - 1) < 1e-9,
               "config %zu: aggregate is not B x per sequence", i);
        if (i % 2) CHECK(json_is_true(get(row, "batch_sequences_agree")));
    }
    if (ll) { /* the same first ids: both engines decode the same greedy continuation of the same prompt */
        const json_t *r0 = get(json_array_get(get(json_array_get(cfgs, 1), "processes"), 0), "row"),
                     *r1 = get(json_array_get(get(json_array_get(cfgs, 3), "processes"), 0), "row");
        CHECK(!strcmp(json_string_value(get(get(r1, "engine"), "name")), "llama.cpp"));
        CHECK(json_integer_value(get(get(r1, "config"), "context")) == json_integer_value(get(get(r0, "config"), "context")));
    } else {
        t_skip("%s", ll_skip);
    }
    json_decref(r);
}

/* tools/compare_report.sh (the perf.md report) on the small model with tiny settings: its three
 * parts, their reports, the summary saying where llama.cpp cannot run a workload. */
static void test_compare_report_script(void) {
    int rc = sh("ROUNDS=1 WARMUP=1 NTOK=4 PROMPT=short COOLDOWN=0 BATCH_SIZES=1,2 BATCH_NTOK=4 RATES=4,8 REQUESTS=4 "
                "PROMPT_LEN=8 OUTPUT_LEN=4 PARALLEL=2 SERVER_ROUNDS=1 BIN='%s/bin' LLAMACPP_BENCH='%s' sh tools/compare_report.sh '%s' "
                "'%s/report-sh'",
                t_build(), ll_bin, model, dir);
    if (ll_skip[0]) {
        CHECKF(rc == 1 && strstr(out, "Not run: llama.cpp is not installed"), "exit %d: %s", rc, out);
    } else {
        CHECKF(rc == 0, "exit %d: %s", rc, out);
        CHECK(strstr(out, "| `llama.cpp` |") != NULL);
    }
    CHECK(strstr(out, "### Single sequence") && strstr(out, "### Batch 1,2") && strstr(out, "### Server: Poisson rates 4,8"));
    if (!ll_skip[0]) CHECK(strstr(out, "| `llama.cpp b=2` |") != NULL);
    char ls_bin[1200];
    snprintf(ls_bin, sizeof ls_bin, "%s/llamacpp/server/bin/llama-server", t_build());
    if (access(ls_bin, X_OK) != 0)
        CHECK(strstr(out, "llama.cpp: not measured: node-llama-cpp@3.21.1 ships no llama-server and none is built") != NULL);
    else
        CHECK(strstr(out, "llama.cpp: its llama-server") != NULL && strstr(out, "| `llama.cpp rate=8` |") != NULL);
    CHECK(strstr(out, "| `edge0 b=2` |") && strstr(out, "b=2` |"));
    CHECK(strstr(out, "| `edge0 rate=8` | 8 req/s | 4 / 0 / 0 of 4 |") != NULL);
    CHECK(strstr(out, "agree (edge0, 1 rounds)") != NULL && strstr(out, "DISAGREE") == NULL);
    static const char *const parts[] = {"batch", "server"};
    for (size_t k = 0; k < 2; k++) {
        char name[64];
        snprintf(name, sizeof name, "report-sh/%s", parts[k]);
        json_t *r = load_report(name);
        if (r) CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
        json_decref(r);
    }
    CHECK(sh("test -s '%s/report-sh/summary.md'", dir) == 0);
}

static void test_bad_arguments(void) {
    static const char *const bad[] = {"--engines edge0", "--engines edge0,edge0", "--engines edge0,vllm",
                                      "--engines edge0,openai=https://127.0.0.1:8080", "--mode server --llama-server /nonexistent", "--rounds 0",
                                      "--engines edge0,openai", "--batch-size 4",
                                      "--engine-model nosuch=x.gguf", "--bogus 1", "--rounds",
                                      "--mode server --engines edge0,llama.cpp --llama-server /nonexistent", "--mode server --engines edge0,llama.cpp-norepack", "--rates 1", "--duration 5", "--mode depth",
                                      "--depth 64 --mode batch", "--mode sustained --engines edge0,openai=http://127.0.0.1:1",
                                      "--mode server --length-dist zipf", "--mode server --concurrency 0",
                                      "--mode server --server-url x", "--mode server --server-url nosuch=http://127.0.0.1:1",
                                      "--mode server --rates 1,-2", "--window 5", "--mode batch --batch-size 0", "--mode batch --batch-size 65", "--depth 64 --depth-prompt 0 --ntok 0", "--mode streaming",
                                      "--no-cold", "--mode batch --no-cold"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh("'%s' compare --model '%s' --out '%s/bad' %s", bench_bin, model, dir, bad[i]);
        int lines = 0;
        for (const char *p = out; *p; p++) lines += *p == '\n';
        CHECKF(rc == 1 && lines == 1 && strstr(out, "edge0-bench: "), "compare %s: exit %d: %s", bad[i], rc, out);
    }
    CHECK(sh("'%s' compare --out '%s/bad'", bench_bin, dir) == 1 && strstr(out, "--model"));
    CHECK(sh("'%s' compare --help", bench_bin) == 0 && strstr(out, "alternating"));
}

int main(void) {
    snprintf(bench_bin, sizeof bench_bin, "%s/bin/edge0-bench", t_build());
    snprintf(dir, sizeof dir, "%s/test-compare", t_build());
    mkdir(dir, 0755);
    if (!t_need_shared("golden/qwen3moe.gguf", "golden/qwen2moe.gguf", NULL)) return T_DONE();
    snprintf(model, sizeof model, "%s/golden/qwen3moe.gguf", t_shared());
    snprintf(other, sizeof other, "%s/golden/qwen2moe.gguf", t_shared());
    /* llama.cpp: what `make llamacpp` installs (tools/llamacpp.sh; exit 3 = registry unreachable) */
    char cmd[4096];
    /* $E0_LLAMACPP, else the build dir when it has the install, else build/ (the asan build reuses it) */
    const char *env = getenv("E0_LLAMACPP");
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/llamacpp", t_build());
    struct stat st;
    snprintf(lb, sizeof lb, "%s", env && *env ? env : stat(probe, &st) == 0 ? t_build() : "build");
    snprintf(ll_bin, sizeof ll_bin, "%s/bin/llamacpp-bench", lb);
    snprintf(cmd, sizeof cmd, "sh tools/llamacpp.sh '%s' >'%s/llamacpp-setup.log' 2>&1", lb, dir);
    int rc = t_sh(cmd, NULL, 0);
    if (rc == 3) snprintf(ll_skip, sizeof ll_skip, "llama.cpp could not be installed: npm registry unreachable (%s/llamacpp-setup.log)", dir);
    t_begin("llamacpp/install");
    CHECKF(rc == 0 || rc == 3, "tools/llamacpp.sh failed (%d): see %s/llamacpp-setup.log", rc, dir);
    if (rc == 3) t_skip("%s", ll_skip);
    t_end();
    if (rc != 0 && !ll_skip[0]) snprintf(ll_skip, sizeof ll_skip, "llama.cpp install failed (counted above)");
    RUN(test_edge0_vs_llamacpp);
    RUN(test_refuses_other_model);
    RUN(test_openai_adapter);
    RUN(test_server_mode);
    RUN(test_server_mode_llamacpp);
    RUN(test_sustained_mode);
    RUN(test_depth_mode);
    RUN(test_batch_cli);
    RUN(test_compare_report_script);
    RUN(test_bad_arguments);
    return T_DONE();
}
