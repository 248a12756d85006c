/* test_serve.c — `edge0-infer serve` as users' clients see it: started on a free loopback port
 * (--port 0, the port read from its stderr) with synth models made into build/test-serve, driven
 * with curl and with node (tests/serve_client.mjs: a load test with fetch, and the official
 * `openai` npm package installed at test time into build/test-serve/npm — skipped, never passed,
 * when the registry cannot be reached). Checks: every endpoint, chat and completions streamed and
 * not, stop strings, usage and cached tokens, /metrics against the requests made, every error
 * status (400 401 404 405 413 429 500 503; 500 from a model file cut short under a server streaming
 * its experts), tools through the chat template and tool calls in streams (the formatting itself
 * in test_serve_api), grammars (GBNF `grammar`, response_format json_object, --grammar), greedy ids
 * equal to `run`'s alone and among 15 concurrent requests, and on
 * every golden model (f32 KV) alone vs among 15 others, a long prompt cut by --prefill-budget while
 * others decode (and reused from the cache) replying as alone, stop strings across token boundaries,
 * seeds, /metrics counters against the usage reported, client disconnects freeing slots,
 * SIGTERM exiting 0. */
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "t.h"

/* Paths are at most PATH_MAX but in practice short; commands are built with snprintf into buffers
 * far larger than any real path, so a truncation (which would only make a check fail) is not a
 * concern here. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static char bin[PATH_MAX], dir[PATH_MAX], model[PATH_MAX], slow[PATH_MAX], root[PATH_MAX];
static char url[128];
static pid_t server;

typedef struct srv {
    pid_t pid;
    char url[128];
} srv;

/* Start serve with args; its stderr goes to dir/NAME.log. 0 when it listens. */
static int start(srv *s, const char *name, const char *args) {
    char log[PATH_MAX + 64], cmd[8192];
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    snprintf(cmd, sizeof cmd, "exec %s serve --port 0 %s 2>%s", bin, args, log);
    unlink(log);
    s->pid = fork();
    if (s->pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) { /* up to 60 s */
        FILE *f = fopen(log, "r");
        char line[1024];
        int port = 0;
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "listening on http://127.0.0.1:");
            if (p) port = atoi(p + strlen("listening on http://127.0.0.1:"));
        }
        if (f) fclose(f);
        if (port > 0) {
            snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", port);
            return 0;
        }
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) return -1;
        usleep(100000);
    }
    return -1;
}

/* SIGTERM and wait: the exit status (-1 when it did not exit by itself within 20 s). */
static int stop(srv *s) {
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        usleep(100000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    return -1;
}

/* One request with curl: the HTTP status, the body into out (cap bytes). extra: more curl flags. */
static int http_x(const char *base, const char *method, const char *path, const char *body, const char *extra, char *out,
                  size_t cap) {
    static int seq;
    char bf[PATH_MAX + 32], of[PATH_MAX + 32], cmd[PATH_MAX * 3];
    snprintf(bf, sizeof bf, "%s/body%d", dir, seq);
    snprintf(of, sizeof of, "%s/out%d", dir, seq++);
    if (body) {
        FILE *f = fopen(bf, "w");
        if (!f) return -1;
        fputs(body, f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "curl -s -N -o %s -w '%%{http_code}' -X %s %s %s%s%s '%s%s'", of, method, extra ? extra : "",
             body ? "--data-binary @" : "", body ? bf : "", body ? " -H 'Content-Type: application/json'" : "", base, path);
    char code[16] = "";
    t_sh(cmd, code, sizeof code);
    if (out) {
        FILE *f = fopen(of, "r");
        size_t n = f ? fread(out, 1, cap - 1, f) : 0;
        out[n] = 0;
        if (f) fclose(f);
    }
    unlink(bf);
    unlink(of);
    return atoi(code);
}
static int http(const char *method, const char *path, const char *body, char *out, size_t cap) {
    return http_x(url, method, path, body, NULL, out, cap);
}

static char buf[1 << 20];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A metric's value from /metrics (-1 when absent). */
static double metric(const char *base, const char *name) {
    static char m[1 << 16];
    if (http_x(base, "GET", "/metrics", NULL, NULL, m, sizeof m) != 200) return -1;
    char key[256];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(m, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* A metric's value in the text m of a /metrics response (-1 when absent). */
static double metric_of(const char *m, const char *name) {
    char key[256];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(m, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* "1 2 3" from `run --print-ids` vs a JSON array of ids. */
static int ids_equal(const char *run_out, const json_t *arr) {
    const char *p = run_out;
    size_t i = 0;
    for (;; i++) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        if (i >= json_array_size(arr) || json_integer_value(json_array_get(arr, i)) != strtol(p, (char **)&p, 10)) return 0;
    }
    return i == json_array_size(arr) && i > 0;
}

static json_t *choice0(const char *body) {
    json_t *j = json_loads(body, JSON_ALLOW_NUL, NULL); /* generated text may hold a NUL byte (\\u0000) */
    json_t *c = json_incref(json_array_get(json_object_get(j, "choices"), 0));
    json_decref(j);
    return c;
}

static void test_endpoints(void) {
    CHECK(http("GET", "/health", NULL, buf, sizeof buf) == 200 && strstr(buf, "\"ok\""));
    CHECK(http("GET", "/v1/models", NULL, buf, sizeof buf) == 200 && strstr(buf, "\"chat.gguf\""));
    CHECK(http("POST", "/tokenize", "{\"content\":\"Hello world\"}", buf, sizeof buf) == 200);
    json_t *t = json_loads(buf, 0, NULL);
    json_t *toks = json_object_get(t, "tokens");
    CHECKF(json_array_size(toks) > 0, "%s", buf);
    json_t *req = json_pack("{s:O}", "tokens", toks);
    char *d = json_dumps(req, 0);
    json_decref(req);
    CHECK(d && http("POST", "/detokenize", d, buf, sizeof buf) == 200 && strstr(buf, "\"Hello world\""));
    free(d);
    json_decref(t);
}

/* Greedy ids equal `run`'s for the same prompt: chat (template) and completions (token ids). */
static void test_greedy_equals_cli(void) {
    char cmd[PATH_MAX * 2], ref[4096];
    snprintf(cmd, sizeof cmd, "%s run -m %s -p Hello --temp 0 -n 16 --print-ids -t 1 -c 1024 2>/dev/null", bin, model);
    CHECK(t_sh(cmd, ref, sizeof ref) == 0);
    CHECK(http("POST", "/v1/chat/completions",
               "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,"
               "\"return_tokens\":true}",
               buf, sizeof buf) == 200);
    json_t *c = choice0(buf);
    CHECKF(ids_equal(ref, json_object_get(c, "tokens")), "run: %s server: %s", ref, buf);
    json_decref(c);
    snprintf(cmd, sizeof cmd, "%s run -m %s --tokens 5,17,42,99,7 --temp 0 -n 16 --print-ids -t 1 -c 1024 2>/dev/null", bin, model);
    CHECK(t_sh(cmd, ref, sizeof ref) == 0);
    const char *req = "{\"prompt\":[5,17,42,99,7],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,\"return_tokens\":true}";
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    c = choice0(buf);
    CHECKF(ids_equal(ref, json_object_get(c, "tokens")), "run: %s server: %s", ref, buf);
    json_decref(c);

    /* the same request among 15 concurrent others (different prompts, some sampled, some streamed) */
    char script[16384];
    int o = snprintf(script, sizeof script, "cd %s || exit 1; ", dir); /* every curl below runs in dir */
    for (int i = 0; i < 15; i++)
        o += snprintf(script + o, sizeof script - o,
                      "curl -s -o other%d -d '{\"prompt\":[%d,%d,3],\"max_tokens\":%d,\"temperature\":%s,\"stream\":%s,\"ignore_eos\":true}' "
                      "%s/v1/completions & ",
                      i, 10 + i, 20 + 3 * i, 8 + 4 * i, i % 3 ? "0" : "0.9", i % 2 ? "true" : "false", url);
    o += snprintf(script + o, sizeof script - o,
                  "curl -s -o target -d '%s' %s/v1/completions & wait; cat target", req, url);
    CHECK(t_sh(script, buf, sizeof buf) == 0);
    c = choice0(buf);
    CHECKF(ids_equal(ref, json_object_get(c, "tokens")), "run: %s server among 15: %s", ref, buf);
    json_decref(c);
}

/* Stop strings: cut before the first occurrence, never sent, also across stream chunks. */
/* A completions stream (in body, cut up by strtok): its texts joined and its last finish_reason. */
static void join_stream(char *body, char *joined, size_t cap, char *fin, size_t fcap) {
    joined[0] = fin[0] = 0;
    for (char *line = strtok(body, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "data: {", 7)) {
            json_t *ch = choice0(line + 6);
            const char *t = json_string_value(json_object_get(ch, "text")), *f = json_string_value(json_object_get(ch, "finish_reason"));
            if (t && strlen(joined) + strlen(t) < cap) strcat(joined, t);
            if (f) snprintf(fin, fcap, "%s", f);
            json_decref(ch);
        }
}

static void test_stop(void) {
    const char *base = "{\"prompt\":\"Once upon a time\",\"max_tokens\":24,\"temperature\":0,\"ignore_eos\":true";
    char req[1024];
    snprintf(req, sizeof req, "%s}", base);
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    json_t *c = choice0(buf);
    const char *full = json_string_value(json_object_get(c, "text"));
    size_t n = full ? strlen(full) : 0;
    CHECKF(n > 8, "%s", buf);
    if (n <= 8) return json_decref(c);
    /* a 3-byte stop string from the middle (ASCII only, so the JSON below stays simple) */
    size_t at = n / 2;
    while (at + 3 < n && ((unsigned char)full[at] >= 0x80 || (unsigned char)full[at + 1] >= 0x80 ||
                          (unsigned char)full[at + 2] >= 0x80 || strchr("\"\\", full[at]) || strchr("\"\\", full[at + 1]) ||
                          strchr("\"\\", full[at + 2]) || full[at] < 32 || full[at + 1] < 32 || full[at + 2] < 32))
        at++;
    char stop[4] = {full[at], full[at + 1], full[at + 2], 0};
    size_t cut = (size_t)(strstr(full, stop) - full);
    snprintf(req, sizeof req, "%s,\"stop\":[\"zzzz\",\"%s\"]}", base, stop);
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    json_t *s = choice0(buf);
    const char *st = json_string_value(json_object_get(s, "text"));
    CHECKF(st && strlen(st) == cut && !strncmp(st, full, cut), "stop '%s': %s (full %s)", stop, buf, full);
    CHECK(!strcmp(json_string_value(json_object_get(s, "finish_reason")) ? json_string_value(json_object_get(s, "finish_reason")) : "", "stop"));
    json_decref(s);
    /* streamed: the deltas put together */
    snprintf(req, sizeof req, "%s,\"stop\":\"%s\",\"stream\":true}", base, stop);
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    char joined[4096] = "";
    int done = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strcmp(line, "data: [DONE]")) done++;
        else if (!strncmp(line, "data: ", 6)) {
            json_t *ch = choice0(line + 6);
            const char *t = json_string_value(json_object_get(ch, "text"));
            if (t && strlen(joined) + strlen(t) < sizeof joined) strcat(joined, t);
            json_decref(ch);
        }
    }
    CHECKF(done == 1 && strlen(joined) == cut && !strncmp(joined, full, cut), "streamed '%s' vs %.*s", joined, (int)cut, full);
    json_decref(c);

    /* a stop string across a token boundary (the last byte of one token, the first two of the
     * next: its first occurrence), streamed and not; the token pieces from completions' logprobs */
    snprintf(req, sizeof req, "%s,\"logprobs\":0}", base);
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    json_t *r = json_loads(buf, 0, NULL);
    c = json_array_get(json_object_get(r, "choices"), 0);
    full = json_string_value(json_object_get(c, "text"));
    json_t *pieces = json_object_get(json_object_get(c, "logprobs"), "tokens");
    json_int_t n_gen = json_integer_value(json_object_get(json_object_get(r, "usage"), "completion_tokens"));
    CHECKF(full && json_array_size(pieces) == (size_t)n_gen &&
               json_array_size(json_object_get(json_object_get(c, "logprobs"), "token_logprobs")) == (size_t)n_gen,
           "%s", buf);
    char bstop[4] = "";
    size_t off = 0, bcut = 0;
    for (size_t i = 0; full && i + 1 < json_array_size(pieces) && !bstop[0]; i++) {
        const char *a = json_string_value(json_array_get(pieces, i)), *b = json_string_value(json_array_get(pieces, i + 1));
        off += a ? strlen(a) : 0;
        if (!a || !b || !*a || strlen(b) < 2 || off > strlen(full)) break;
        char cand[4] = {a[strlen(a) - 1], b[0], b[1], 0};
        bool plain = true;
        for (int k = 0; k < 3; k++) plain = plain && (unsigned char)cand[k] >= 32 && (unsigned char)cand[k] < 127 && !strchr("\"\\", cand[k]);
        if (plain && strstr(full, cand) == full + off - 1) memcpy(bstop, cand, 4), bcut = off - 1;
    }
    CHECKF(bstop[0], "no token boundary to put a stop string across in %s", buf);
    if (bstop[0]) {
        snprintf(req, sizeof req, "%s,\"stop\":\"%s\"}", base, bstop);
        CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
        json_t *s2 = choice0(buf);
        const char *t2 = json_string_value(json_object_get(s2, "text"));
        CHECKF(t2 && strlen(t2) == bcut && !strncmp(t2, full, bcut), "stop '%s' across tokens: %s", bstop, buf);
        json_decref(s2);
        snprintf(req, sizeof req, "%s,\"stop\":\"%s\",\"stream\":true}", base, bstop);
        CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
        char fin[32];
        join_stream(buf, joined, sizeof joined, fin, sizeof fin);
        CHECKF(strlen(joined) == bcut && !strncmp(joined, full, bcut) && !strcmp(fin, "stop"), "streamed, stop '%s' across tokens: '%s' vs %.*s",
               bstop, joined, (int)bcut, full);
    }
    json_decref(r);
}

/* usage: prompt, completion and cached tokens; the second identical prompt reuses the cache. */
static void test_usage_and_cache(void) {
    const char *req = "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"What is a cache?\"}],"
                      "\"max_tokens\":5,\"temperature\":0}";
    CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
    json_t *a = json_loads(buf, 0, NULL);
    CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
    json_t *b = json_loads(buf, 0, NULL);
    json_t *ua = json_object_get(a, "usage"), *ub = json_object_get(b, "usage");
    json_int_t pa = json_integer_value(json_object_get(ua, "prompt_tokens"));
    json_int_t cb = json_integer_value(json_object_get(json_object_get(ub, "prompt_tokens_details"), "cached_tokens"));
    CHECKF(pa > 10 && json_integer_value(json_object_get(ua, "completion_tokens")) == 5 &&
               json_integer_value(json_object_get(ua, "total_tokens")) == pa + 5,
           "%s", buf);
    CHECKF(cb == pa - 1, "second request: cached %lld of %lld", (long long)cb, (long long)pa);
    char *ta = json_dumps(json_object_get(json_array_get(json_object_get(a, "choices"), 0), "message"), JSON_SORT_KEYS);
    char *tb = json_dumps(json_object_get(json_array_get(json_object_get(b, "choices"), 0), "message"), JSON_SORT_KEYS);
    CHECKF(ta && tb && !strcmp(ta, tb), "cached prefix changed the reply: %s vs %s", ta, tb);
    free(ta), free(tb);
    json_decref(a), json_decref(b);
    /* "cache_prompt": false (llama-server's field): the same prompt again reuses nothing */
    char nc[1024];
    snprintf(nc, sizeof nc, "%.*s,\"cache_prompt\":false}", (int)strlen(req) - 1, req);
    CHECK(http("POST", "/v1/chat/completions", nc, buf, sizeof buf) == 200);
    json_t *d = json_loads(buf, 0, NULL);
    CHECKF(json_integer_value(json_object_get(json_object_get(json_object_get(d, "usage"), "prompt_tokens_details"), "cached_tokens")) == 0,
           "cache_prompt false: %s", buf);
    json_decref(d);
    /* streamed (include_usage): the same usage, the prompt cached again */
    char sq[1024];
    snprintf(sq, sizeof sq, "%.*s,\"stream\":true,\"stream_options\":{\"include_usage\":true}}", (int)strlen(req) - 1, req);
    CHECK(http("POST", "/v1/chat/completions", sq, buf, sizeof buf) == 200);
    const char *ul = strstr(buf, "\"usage\":{");
    json_t *us = ul ? json_loads(ul + 8, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    CHECKF(us && json_integer_value(json_object_get(us, "prompt_tokens")) == pa && json_integer_value(json_object_get(us, "completion_tokens")) == 5 &&
               json_integer_value(json_object_get(json_object_get(us, "prompt_tokens_details"), "cached_tokens")) == pa - 1,
           "streamed usage: %s", buf);
    json_decref(us);
    /* seed: a sampled request gives the same reply for the same seed */
    const char *seeded = "{\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":1.5,\"top_k\":0,\"top_p\":1,\"min_p\":0,"
                         "\"seed\":1234,\"ignore_eos\":true,\"return_tokens\":true}";
    char first[4096] = "";
    CHECK(http("POST", "/v1/completions", seeded, buf, sizeof buf) == 200);
    json_t *s1 = choice0(buf);
    char *i1 = json_dumps(json_object_get(s1, "tokens"), 0);
    snprintf(first, sizeof first, "%s", i1 ? i1 : "");
    CHECK(http("POST", "/v1/completions", seeded, buf, sizeof buf) == 200);
    json_t *s2 = choice0(buf);
    char *i2 = json_dumps(json_object_get(s2, "tokens"), 0);
    CHECKF(i1 && i2 && json_array_size(json_object_get(s1, "tokens")) == 12 && !strcmp(i1, i2), "seed 1234: %s vs %s", i1, i2);
    free(i1), free(i2);
    json_decref(s1), json_decref(s2);
    /* streamed logprobs: one entry per generated token */
    CHECK(http("POST", "/v1/chat/completions",
               "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4,\"temperature\":0,\"ignore_eos\":true,"
               "\"logprobs\":true,\"top_logprobs\":2,\"stream\":true}",
               buf, sizeof buf) == 200);
    int n_lp = 0, n_top_ok = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "data: {", 7)) {
            json_t *ch = choice0(line + 6);
            size_t k;
            json_t *e;
            json_array_foreach(json_object_get(json_object_get(ch, "logprobs"), "content"), k, e) {
                n_lp++;
                n_top_ok += json_array_size(json_object_get(e, "top_logprobs")) == 2;
            }
            json_decref(ch);
        }
    CHECKF(n_lp == 4 && n_top_ok == 4, "streamed logprobs: %d entries, %d with 2 alternatives", n_lp, n_top_ok);
    /* logprobs: the chosen token first among its alternatives under greedy */
    CHECK(http("POST", "/v1/chat/completions",
               "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":3,\"temperature\":0,\"logprobs\":true,\"top_logprobs\":3}",
               buf, sizeof buf) == 200);
    json_t *c = choice0(buf);
    json_t *lc = json_object_get(json_object_get(c, "logprobs"), "content");
    CHECKF(json_array_size(lc) == 3, "%s", buf);
    json_t *e0 = json_array_get(lc, 0), *top = json_object_get(e0, "top_logprobs");
    CHECK(json_array_size(top) == 3 && json_real_value(json_object_get(e0, "logprob")) <= 0 &&
          json_real_value(json_object_get(json_array_get(top, 0), "logprob")) == json_real_value(json_object_get(e0, "logprob")));
    json_decref(c);
}

static void test_errors(void) {
    static const struct {
        const char *path, *body;
        int status;
    } cases[] = {
        {"/v1/chat/completions", "{bad json", 400},
        {"/v1/chat/completions", "[1,2]", 400},
        {"/v1/chat/completions", "{\"messages\":\"hi\"}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1e400}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":99999999999999999999999}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400},
        {"/v1/completions", "{\"prompt\":[1,2,999999]}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"stop\":[1]}", 400},
        {"/v1/completions", "{}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":{\"x\":1}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":{\"99999999\":1}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":{\"5\":101}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":{\"5\":true}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":[[5]]}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":[[-1,2]]}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":7}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"echo\":true}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"best_of\":2}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"suffix\":\"end\"}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"a\"}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"grammar\":\"root ::= root \\\"a\\\"\"}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"grammar\":5}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"grammar\":\"root ::= \\\"a\\\"\",\"response_format\":{\"type\":\"json_object\"}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"json_schema\":{\"type\":\"string\",\"pattern\":\"(?=a)\"}}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"json_schema\":{\"type\":\"object\"},\"grammar\":\"root ::= \\\"a\\\"\"}", 400},
        {"/v1/completions", "{\"prompt\":\"x\",\"json_schema\":7}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_object\",\"schema\":{\"minimum\":1}}}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{}}}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\",\"schema\":{\"$ref\":\"#/x\"}}}}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"xml\"}}", 400},
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":\"json\"}", 400},
        {"/detokenize", "{\"tokens\":[-1]}", 400},
        {"/nothing", "{}", 404},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int st = http("POST", cases[i].path, cases[i].body, buf, sizeof buf);
        json_t *j = json_loads(buf, 0, NULL), *e = json_object_get(j, "error");
        CHECKF(st == cases[i].status && json_is_string(json_object_get(e, "message")) &&
                   json_is_string(json_object_get(e, "type")) && json_integer_value(json_object_get(e, "code")) == st,
               "%s %s: %d %s", cases[i].path, cases[i].body, st, buf);
        json_decref(j);
    }
    CHECK(http("GET", "/v1/chat/completions", NULL, buf, sizeof buf) == 405);
    CHECK(http("DELETE", "/health", NULL, buf, sizeof buf) == 405);
    /* a prompt longer than a slot's context (1024 tokens) */
    static char big[200000];
    int o = snprintf(big, sizeof big, "{\"prompt\":[");
    for (int i = 0; i < 1100; i++) o += snprintf(big + o, sizeof big - o, "%s%d", i ? "," : "", 5 + i % 100);
    snprintf(big + o, sizeof big - o, "]}");
    CHECK(http("POST", "/v1/completions", big, buf, sizeof buf) == 400 && strstr(buf, "context"));
    /* a body over --max-body (64 KiB), with and without Content-Length */
    memset(big, ' ', 100000);
    big[0] = '{', big[99998] = '}', big[99999] = 0;
    CHECK(http("POST", "/v1/completions", big, buf, sizeof buf) == 413);
    CHECK(http_x(url, "POST", "/v1/completions", big, "-H 'Transfer-Encoding: chunked'", buf, sizeof buf) == 413);
    /* an oversize header (curl reads it from a file) */
    char hf[PATH_MAX + 16], hdr[PATH_MAX + 32];
    snprintf(hf, sizeof hf, "%s/bighdr", dir);
    FILE *f = fopen(hf, "w");
    if (f) {
        fputs("X-Big: ", f);
        for (int i = 0; i < 80000; i++) fputc('a', f);
        fputc('\n', f);
        fclose(f);
    }
    snprintf(hdr, sizeof hdr, "-H @%s", hf);
    int st = http_x(url, "GET", "/health", NULL, hdr, buf, sizeof buf);
    CHECKF(st >= 400 && st < 500, "oversize header: %d", st);
    /* the server is still fine */
    CHECK(http("GET", "/health", NULL, buf, sizeof buf) == 200);
}

/* The text of choice 0 of a response (malloc'd) and its finish_reason (into fin). */
static char *text_of(const char *body, bool chat, char *fin, size_t fcap) {
    json_t *c = choice0(body);
    const char *t = json_string_value(chat ? json_object_get(json_object_get(c, "message"), "content") : json_object_get(c, "text"));
    const char *f = json_string_value(json_object_get(c, "finish_reason"));
    snprintf(fin, fcap, "%s", f ? f : "?");
    char *r = t ? strdup(t) : NULL;
    json_decref(c);
    return r;
}

/* Grammars: llama-server's `grammar` (GBNF) and response_format json_object constrain the reply
 * (random weights: without the grammar the reply is anything); it ends with "stop" once the
 * grammar is complete, streamed as whole; serve --grammar is the default of requests that name
 * no format. */
static void test_grammar(void) {
    char fin[32];
    static const char *const grammar_req =
        "{\"prompt\":\"x\",\"max_tokens\":60,\"temperature\":%s,\"seed\":%d,\"grammar\":\"root ::= \\\"{\\\\\\\"n\\\\\\\": \\\" [1-9] [0-9]{0,2} \\\"}\\\"\"%s}";
    char req[1024], first[256] = "";
    for (int seed = 1; seed <= 4; seed++) {
        snprintf(req, sizeof req, grammar_req, seed == 1 ? "0" : "1.2", seed, "");
        CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
        char *t = text_of(buf, false, fin, sizeof fin);
        json_t *v = t ? json_loads(t, 0, NULL) : NULL;
        json_int_t n = json_integer_value(json_object_get(v, "n"));
        CHECKF(v && n >= 1 && n <= 999 && json_object_size(v) == 1 && !strcmp(fin, "stop") && t[1] == '"' && strstr(t, "\": "),
               "%s", buf);
        if (seed == 1 && t) snprintf(first, sizeof first, "%s", t);
        json_decref(v), free(t);
    }
    /* streamed: the chunks put together are the whole reply */
    snprintf(req, sizeof req, grammar_req, "0", 1, ",\"stream\":true");
    CHECK(http("POST", "/v1/completions", req, buf, sizeof buf) == 200);
    char joined[512], last_fin[32];
    join_stream(buf, joined, sizeof joined, last_fin, sizeof last_fin);
    CHECKF(first[0] && !strcmp(joined, first) && !strcmp(last_fin, "stop"), "streamed '%s' vs '%s'", joined, first);
    /* JSON mode, chat: a reply that ends is one JSON object; one cut by max_tokens is a prefix */
    int ended = 0;
    for (int seed = 1; seed <= 6; seed++) {
        snprintf(req, sizeof req,
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"json please\"}],\"max_tokens\":400,\"temperature\":%s,"
                 "\"seed\":%d,\"response_format\":{\"type\":\"json_object\"}}",
                 seed & 1 ? "0.7" : "1.5", seed);
        CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
        char *t = text_of(buf, true, fin, sizeof fin);
        CHECKF(t && t[0] == '{', "%s", buf);
        if (t && !strcmp(fin, "stop")) {
            ended++;
            json_error_t je;
            json_t *v = json_loads(t, 0, &je);
            CHECKF(json_is_object(v), "not a JSON object (%s): %s", je.text, t);
            json_decref(v);
        } else CHECKF(!strcmp(fin, "length"), "%s", buf);
        free(t);
    }
    CHECKF(ended >= 1, "no JSON reply ended within 400 tokens");
    /* JSON schemas: OpenAI's response_format json_schema, llama-server's json_object + schema and
     * its json_schema field; every reply that ends is valid for the schema */
    static const char schema[] = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":6},"
                                 "\"age\":{\"type\":\"integer\"},\"pet\":{\"enum\":[\"cat\",\"dog\"]},"
                                 "\"code\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d{2}$\"}},"
                                 "\"required\":[\"name\",\"age\",\"pet\",\"code\"],\"additionalProperties\":false}";
    int valid_replies = 0;
    for (int form = 0; form < 3; form++)
        for (int seed = 1; seed <= 3; seed++) {
            char fmt[1024];
            if (form == 0) snprintf(fmt, sizeof fmt, "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"p\",\"strict\":true,\"schema\":%s}}", schema);
            else if (form == 1) snprintf(fmt, sizeof fmt, "\"response_format\":{\"type\":\"json_object\",\"schema\":%s}", schema);
            else snprintf(fmt, sizeof fmt, "\"json_schema\":%s", schema);
            snprintf(req, sizeof req, "{\"messages\":[{\"role\":\"user\",\"content\":\"a person\"}],\"max_tokens\":200,\"temperature\":1,"
                     "\"seed\":%d,%s}", seed, fmt);
            CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
            char *t = text_of(buf, true, fin, sizeof fin);
            json_t *v = t && !strcmp(fin, "stop") ? json_loads(t, 0, NULL) : NULL;
            const char *name = json_string_value(json_object_get(v, "name")), *pet = json_string_value(json_object_get(v, "pet"));
            const char *code = json_string_value(json_object_get(v, "code"));
            if (v) valid_replies++;
            CHECKF(!strcmp(fin, "length") || (v && json_object_size(v) == 4 && name && strlen(name) <= 6 * 4 &&
                                                json_is_integer(json_object_get(v, "age")) && pet &&
                                                (!strcmp(pet, "cat") || !strcmp(pet, "dog")) && code && strlen(code) == 5 &&
                                                isupper((unsigned char)code[0]) && isupper((unsigned char)code[1]) &&
                                                code[2] == '-' && isdigit((unsigned char)code[3]) && isdigit((unsigned char)code[4])),
                   "form %d: %s", form, buf);
            json_decref(v), free(t);
        }
    CHECKF(valid_replies >= 3, "only %d schema replies ended within 200 tokens", valid_replies);
    /* the server's --grammar: requests without a format of their own get it */
    char args[PATH_MAX + 256];
    snprintf(args, sizeof args, "-m %s -np 1 -c 1024 -t 1 --grammar 'root ::= (\"yes\" | \"no\") \".\"'", model);
    srv s;
    CHECK(start(&s, "grammar", args) == 0);
    for (int seed = 1; seed <= 3; seed++) {
        snprintf(req, sizeof req, "{\"prompt\":\"x\",\"max_tokens\":20,\"temperature\":1,\"seed\":%d}", seed);
        CHECK(http_x(s.url, "POST", "/v1/completions", req, NULL, buf, sizeof buf) == 200);
        char *t = text_of(buf, false, fin, sizeof fin);
        CHECKF(t && (!strcmp(t, "yes.") || !strcmp(t, "no.")) && !strcmp(fin, "stop"), "%s", buf);
        free(t);
    }
    CHECK(http_x(s.url, "POST", "/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":8,\"temperature\":0,\"ignore_eos\":true,\"grammar\":\"\"}",
                 NULL, buf, sizeof buf) == 200);
    char *t = text_of(buf, false, fin, sizeof fin);
    CHECKF(t && strcmp(t, "yes.") && strcmp(t, "no.") && !strcmp(fin, "length"), "an empty grammar is free text: %s", buf);
    free(t);
    CHECK(stop(&s) == 0);
    snprintf(args, sizeof args, "-m %s -np 1 -c 1024 -t 1 --grammar 'root ::= \"yes'", model);
    char cmd[PATH_MAX * 2], out[1024];
    snprintf(cmd, sizeof cmd, "%s serve %s --port 0 2>&1", bin, args);
    CHECKF(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "--grammar: line 1, column 14: unterminated literal"), "%s", out);
}

/* /metrics follows the requests made. */
static void test_metrics(void) {
    double ok0 = -1, comp0 = metric(url, "edge0_completion_tokens_total");
    static char m[1 << 16];
    http("GET", "/metrics", NULL, m, sizeof m);
    const char *p = strstr(m, "edge0_requests_total{code=\"200\"} ");
    ok0 = p ? atof(p + strlen("edge0_requests_total{code=\"200\"} ")) : -1;
    const char *p4 = strstr(m, "edge0_requests_total{code=\"400\"} ");
    double bad0 = p4 ? atof(p4 + strlen("edge0_requests_total{code=\"400\"} ")) : 0;
    static char m0[1 << 16];
    memcpy(m0, m, sizeof m0);
    int total = 0, prompt = 0, cached = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(http("POST", "/v1/completions", "{\"prompt\":\"Hi there\",\"max_tokens\":7,\"temperature\":0,\"ignore_eos\":true}", buf,
                   sizeof buf) == 200);
        json_t *j = json_loads(buf, 0, NULL), *u = json_object_get(j, "usage");
        total += (int)json_integer_value(json_object_get(u, "completion_tokens"));
        prompt += (int)json_integer_value(json_object_get(u, "prompt_tokens"));
        cached += (int)json_integer_value(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
        json_decref(j);
    }
    CHECK(http("POST", "/v1/completions", "{", buf, sizeof buf) == 400);
    http("GET", "/metrics", NULL, m, sizeof m);
    p = strstr(m, "edge0_requests_total{code=\"200\"} ");
    double ok1 = p ? atof(p + strlen("edge0_requests_total{code=\"200\"} ")) : -1;
    p4 = strstr(m, "edge0_requests_total{code=\"400\"} ");
    double bad1 = p4 ? atof(p4 + strlen("edge0_requests_total{code=\"400\"} ")) : 0;
    /* 3 completions + the first /metrics itself (counted after it was built) + the one metric() call */
    CHECKF(ok1 - ok0 == 4, "200s: %g -> %g", ok0, ok1);
    CHECKF(bad1 - bad0 == 1, "400s: %g -> %g", bad0, bad1);
    /* the token counters follow the usage the responses reported; cached + prefilled = prompt */
#define DELTA(name) (metric_of(m, name) - metric_of(m0, name))
    CHECKF(DELTA("edge0_prompt_tokens_total") == prompt && prompt > 0, "prompt tokens +%g, usage %d", DELTA("edge0_prompt_tokens_total"), prompt);
    CHECKF(DELTA("edge0_prompt_tokens_cached_total") == cached && cached > 0, "cached +%g, usage %d", DELTA("edge0_prompt_tokens_cached_total"), cached);
    CHECKF(DELTA("edge0_prompt_tokens_prefilled_total") == prompt - cached, "prefilled +%g, usage %d - %d",
           DELTA("edge0_prompt_tokens_prefilled_total"), prompt, cached);
    CHECKF(DELTA("edge0_sequences_finished_total") == 3, "finished +%g", DELTA("edge0_sequences_finished_total"));
    CHECK(DELTA("edge0_prefill_seconds_total") > 0 && DELTA("edge0_decode_seconds_total") > 0 && DELTA("edge0_steps_total") >= total);
#undef DELTA
    CHECK(metric_of(m, "edge0_kv_cells_cached") > 0 && metric_of(m, "edge0_kv_cells_total") == 4096);
    CHECKF(metric(url, "edge0_completion_tokens_total") - comp0 == total && total == 21, "completion tokens %d", total);
    CHECK(metric(url, "edge0_active_sequences") == 0 && metric(url, "edge0_queue_depth") == 0 &&
          metric(url, "edge0_kv_cells_used") == 0 && metric(url, "edge0_slots") == 4);
}

/* The official openai package against the server (installed into build/test-serve/npm). */
static void test_openai_npm(void) {
    char cmd[PATH_MAX * 3], out[16384];
    snprintf(cmd, sizeof cmd,
             "flock %s/npm.lock sh -c 'test -f %s/npm/node_modules/openai/index.mjs || timeout 120 npm install --prefix %s/npm "
             "--no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 openai@4.104.0 >%s/npm.log 2>&1'",
             dir, dir, dir, dir);
    /* (test_serve_api installs into the same folder: flock makes it one install at a time) */
    if (t_sh("command -v node >/dev/null && command -v npm >/dev/null && command -v flock >/dev/null", NULL, 0) != 0)
        SKIP("node/npm/flock not installed");
    if (t_sh(cmd, NULL, 0) != 0) SKIP("npm install openai failed (registry unreachable? see %s/npm.log)", dir);
    snprintf(cmd, sizeof cmd, "node %s/tests/serve_client.mjs openai %s %s/npm 2>&1", root, url, dir);
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 0 && !strstr(out, "FAIL"), "%s", out);
    CHECKF(strstr(out, "ok openai_stop_stream") && strstr(out, "ok openai_tools_stream") && strstr(out, "ok openai_json_schema"), "%s", out);
}

/* 16 concurrent streaming clients, 64 requests, 8 disconnecting mid-stream: all slots free after. */
static void test_load(void) {
    if (t_sh("command -v node >/dev/null", NULL, 0) != 0) SKIP("node not installed");
    char cmd[PATH_MAX * 2], out[16384];
    snprintf(cmd, sizeof cmd, "node %s/tests/serve_client.mjs load %s 2>&1", root, url);
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 0 && !strstr(out, "FAIL") && strstr(out, "ok load_streams_equal_alone"), "%s", out);
    for (int i = 0; i < 50 && metric(url, "edge0_active_sequences") != 0; i++) usleep(100000);
    CHECK(metric(url, "edge0_active_sequences") == 0 && metric(url, "edge0_queue_depth") == 0 &&
          metric(url, "edge0_kv_cells_used") == 0);
    CHECK(http("GET", "/health", NULL, buf, sizeof buf) == 200);
}

/* A slower model, one slot: 429 beyond --max-queue, 503 after --timeout, a disconnect frees the
 * slot, 401 without the key; SIGTERM while a request runs: exits 0. */
static void test_limits(void) {
    srv s;
    char args[PATH_MAX + 256];
    snprintf(args, sizeof args, "-m %s -np 1 -c 4096 -t 1 --max-queue 1 --timeout 2 --api-key sekret", slow);
    CHECK(start(&s, "slow", args) == 0);
    const char *auth = "-H 'Authorization: Bearer sekret'";
    CHECK(http_x(s.url, "GET", "/v1/models", NULL, NULL, buf, sizeof buf) == 401);
    CHECK(http_x(s.url, "GET", "/v1/models", NULL, "-H 'Authorization: Bearer wrong'", buf, sizeof buf) == 401);
    CHECK(http_x(s.url, "GET", "/health", NULL, NULL, buf, sizeof buf) == 200);
    CHECK(http_x(s.url, "GET", "/v1/models", NULL, auth, buf, sizeof buf) == 200);
    /* a long request (runs into the 2 s limit), a queued one, and one too many */
    char script[4096];
    const char *longreq = "{\"prompt\":[5,6,7],\"max_tokens\":4000,\"ignore_eos\":true,\"temperature\":0}";
    snprintf(script, sizeof script,
             "cd %s && (curl -s -o l1 -w '%%{http_code}' %s -d '%s' %s/v1/completions > c1 &) ; sleep 0.5; "
             "(curl -s -o l2 -w '%%{http_code}' %s -d '%s' %s/v1/completions > c2 &); sleep 0.3; "
             "curl -s -o l3 -w '%%{http_code}' %s -d '%s' %s/v1/completions; sleep 5; echo; cat c1; echo; cat c2",
             dir, auth, longreq, s.url, auth, longreq, s.url, auth, longreq, s.url);
    char out[256] = "";
    t_sh(script, out, sizeof out);
    CHECKF(!strncmp(out, "429\n503\n", 8), "third / first / second: %s", out); /* the second is queued then times out: 503 too */
    /* a client that goes away mid-request frees the slot */
    snprintf(script, sizeof script, "curl -s -m 0.7 %s -d '%s' %s/v1/completions >/dev/null", auth, longreq, s.url);
    t_sh(script, NULL, 0);
    usleep(500000);
    static char m[1 << 16];
    http_x(s.url, "GET", "/metrics", NULL, auth, m, sizeof m);
    CHECKF(strstr(m, "\nedge0_active_sequences 0\n") && strstr(m, "\nedge0_sequences_cancelled_total 1\n"), "%s", m);
    /* a stream past the time limit: an error event naming it, then [DONE] */
    const char *longstream = "{\"prompt\":[5,6,7],\"max_tokens\":4000,\"ignore_eos\":true,\"stream\":true}";
    snprintf(script, sizeof script, "curl -s -N -m 20 %s -d '%s' %s/v1/completions | tail -c 300", auth, longstream, s.url);
    char tail[512] = "";
    http_x(s.url, "GET", "/metrics", NULL, auth, m, sizeof m);
    const char *tp = strstr(m, "\nedge0_sequences_timeout_total ");
    int timeouts0 = tp ? atoi(tp + strlen("\nedge0_sequences_timeout_total ")) : -1;
    double t0 = now_s();
    t_sh(script, tail, sizeof tail);
    double dt = now_s() - t0;
    CHECKF(strstr(tail, "time limit") && strstr(tail, "\"code\":503") && strstr(tail, "data: [DONE]") && dt > 1.5 && dt < 10,
           "after %.1f s: %s", dt, tail);
    http_x(s.url, "GET", "/metrics", NULL, auth, m, sizeof m);
    tp = strstr(m, "\nedge0_sequences_timeout_total ");
    CHECKF(tp && atoi(tp + strlen("\nedge0_sequences_timeout_total ")) == timeouts0 + 1 && strstr(m, "\nedge0_active_sequences 0\n"),
           "timeouts before %d: %s", timeouts0, m);
    /* SIGTERM during a request: exit 0 */
    snprintf(script, sizeof script, "(curl -s -m 10 %s -d '%s' %s/v1/completions >/dev/null &); sleep 0.5", auth, longreq, s.url);
    t_sh(script, NULL, 0);
    CHECK(stop(&s) == 0);
}

/* Tools: `tools` and the tool fields of messages reach the chat template (Qwen2.5's renders them:
 * its own text around them is known); the server's rendering equals `apply-template` given the
 * same tools; tool_choice none leaves them out, a forced one is refused; a template that renders
 * no tools (rwkv-world's) gets every tool request refused with a clear 400. */
static const char tools_json[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Current weather\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]";
static const char tool_msgs[] =
    "[{\"role\":\"user\",\"content\":\"Weather in Paris?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":"
    "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny, 21C\"}]";

static void test_tools(void) {
    char req[4096], shared[PATH_MAX];
    snprintf(req, sizeof req, "{\"messages\":%s,\"tools\":%s}", tool_msgs, tools_json);
    CHECK(http("POST", "/apply-template", req, buf, sizeof buf) == 200);
    json_t *j = json_loads(buf, 0, NULL);
    const char *p = json_string_value(json_object_get(j, "prompt"));
    CHECKF(p && strstr(p, "# Tools") && strstr(p, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"") &&
               strstr(p, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>") &&
               strstr(p, "<tool_response>\nsunny, 21C\n</tool_response>"),
           "%s", buf);
    /* the same as the command line renders it (tools as a template variable, arguments as an object) */
    char mf[PATH_MAX + 16], cmd[PATH_MAX * 3], cli[16384];
    snprintf(mf, sizeof mf, "%s/toolmsgs.json", dir);
    FILE *f = fopen(mf, "w");
    if (f) {
        fputs("[{\"role\":\"user\",\"content\":\"Weather in Paris?\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
              "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}}]},"
              "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny, 21C\"}]",
              f);
        fclose(f);
    }
    snprintf(shared, sizeof shared, "%s", t_shared());
    snprintf(cmd, sizeof cmd,
             "%s apply-template --chat-template-file %s/templates/Qwen-Qwen2.5-7B-Instruct.jinja --messages-file %s "
             "--chat-template-kwargs '{\"tools\":%s}'",
             bin, shared, mf, tools_json);
    CHECK(t_sh(cmd, cli, sizeof cli) == 0);
    CHECKF(p && !strcmp(p, cli), "server:\n%s\napply-template:\n%s", p, cli);
    /* a chat completion with them: the prompt is that text */
    snprintf(req, sizeof req, "{\"messages\":%s,\"tools\":%s,\"tool_choice\":\"auto\",\"max_tokens\":3,\"temperature\":0}", tool_msgs,
             tools_json);
    CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
    json_t *r = json_loads(buf, 0, NULL);
    json_int_t n_prompt = json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens"));
    json_decref(r);
    json_t *tq = json_pack("{s:s,s:b}", "content", p ? p : "", "add_special", 1);
    char *tb = json_dumps(tq, 0);
    json_decref(tq);
    CHECK(tb && http("POST", "/tokenize", tb, buf, sizeof buf) == 200);
    free(tb);
    r = json_loads(buf, 0, NULL);
    CHECKF(n_prompt > 0 && (size_t)n_prompt == json_array_size(json_object_get(r, "tokens")), "prompt tokens %lld vs %zu",
           (long long)n_prompt, json_array_size(json_object_get(r, "tokens")));
    json_decref(r);
    json_decref(j);
    /* streamed with tools: the reply (no tool call from this model) streams as content equal to
     * the whole reply; no tool_calls, the same finish reason (how many chunks depends on timing:
     * that plain text goes out token by token is test_serve_api's) */
    const char *treq = "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],\"tools\":%s,\"max_tokens\":12,"
                       "\"temperature\":0,\"ignore_eos\":true%s}";
    snprintf(req, sizeof req, treq, tools_json, "");
    CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
    json_t *wc = choice0(buf);
    /* the texts may hold U+0000 (a random model's byte tokens): compared with their lengths */
    json_t *wcontent = json_object_get(json_object_get(wc, "message"), "content");
    const char *wtext = json_string_value(wcontent);
    const size_t wlen = json_string_length(wcontent);
    snprintf(req, sizeof req, treq, tools_json, ",\"stream\":true");
    CHECK(http("POST", "/v1/chat/completions", req, buf, sizeof buf) == 200);
    char joined[4096] = "", sfin[32] = "";
    size_t jlen = 0;
    int n_content = 0, n_calls = 0, done = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strcmp(line, "data: [DONE]")) done++;
        else if (!strncmp(line, "data: ", 6)) {
            json_t *ch = choice0(line + 6), *d = json_object_get(ch, "delta");
            json_t *dc = json_object_get(d, "content");
            const char *t = json_string_value(dc), *fr = json_string_value(json_object_get(ch, "finish_reason"));
            const size_t tl = json_string_length(dc);
            if (t && tl && jlen + tl < sizeof joined) memcpy(joined + jlen, t, tl), jlen += tl, n_content++;
            if (json_object_get(d, "tool_calls")) n_calls++;
            if (fr) snprintf(sfin, sizeof sfin, "%s", fr);
            json_decref(ch);
        }
    }
    CHECKF(wtext && jlen == wlen && !memcmp(joined, wtext, wlen) && n_content >= 1 && n_calls == 0 && done == 1 &&
               !strcmp(sfin, json_string_value(json_object_get(wc, "finish_reason"))),
           "streamed '%s' (%d chunks, %d tool-call chunks, finish %s) vs '%s'", joined, n_content, n_calls, sfin, wtext);
    json_decref(wc);
    /* tool_choice none: the template gets no tools */
    snprintf(req, sizeof req, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"tool_choice\":\"none\"}", tools_json);
    CHECK(http("POST", "/apply-template", req, buf, sizeof buf) == 200 && !strstr(buf, "# Tools") && !strstr(buf, "get_weather"));
    static const char *const bad[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"tool_choice\":\"required\"}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"tool_choice\":\"sometimes\"}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":\"get_weather\"%.0s}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{}}]%.0s}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"retrieval\"}]%.0s}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]%.0s}",
        "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":7}}]}]%.0s}",
        "{\"messages\":[{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":5}]%.0s}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(req, sizeof req, bad[i], tools_json);
        int st = http("POST", "/v1/chat/completions", req, buf, sizeof buf);
        CHECKF(st == 400 && strstr(buf, "\"invalid_request_error\""), "%s: %d %s", req, st, buf);
    }
    /* a template that renders no tools: refused, with the reason */
    srv s;
    char args[PATH_MAX * 2];
    snprintf(args, sizeof args, "-m %s -np 1 -c 1024 -t 1 --chat-template-file %s/templates/llama-cpp-rwkv-world.jinja", model, shared);
    CHECK(start(&s, "notools", args) == 0);
    snprintf(req, sizeof req, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"max_tokens\":2}", tools_json);
    CHECKF(http_x(s.url, "POST", "/v1/chat/completions", req, NULL, buf, sizeof buf) == 400 && strstr(buf, "does not render tools"), "%s", buf);
    snprintf(req, sizeof req, "{\"messages\":%s,\"max_tokens\":2}", tool_msgs);
    CHECKF(http_x(s.url, "POST", "/v1/chat/completions", req, NULL, buf, sizeof buf) == 400 && strstr(buf, "does not render"), "%s", buf);
    snprintf(req, sizeof req, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":%s,\"tool_choice\":\"none\",\"max_tokens\":2}", tools_json);
    CHECKF(http_x(s.url, "POST", "/v1/chat/completions", req, NULL, buf, sizeof buf) == 200, "%s", buf);
    CHECKF(http_x(s.url, "GET", "/v1/models", NULL, NULL, buf, sizeof buf) == 200 && strstr(buf, "\"tools\":false"), "%s", buf);
    CHECK(stop(&s) == 0);
    CHECKF(http("GET", "/v1/models", NULL, buf, sizeof buf) == 200 &&
               strstr(buf, "\"chat_template_caps\":{\"tools\":true,\"tool_calls\":true,\"tool_responses\":true}"),
           "%s", buf);
}

/* ---- raw sockets, for what curl will not do ---- */


/* A connection to base ("http://127.0.0.1:PORT") with a receive timeout; -1 when refused. */
static int raw_connect(const char *base, double timeout_s) {
    const char *c = strrchr(base, ':');
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || !c) return -1;
    struct timeval tv = {.tv_sec = (time_t)timeout_s, .tv_usec = (suseconds_t)((timeout_s - (time_t)timeout_s) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(c + 1))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read until the server closes (returns the bytes read, into out) or the timeout (-1). */
static long raw_read_all(int fd, char *out, size_t cap) {
    size_t n = 0;
    for (;;) {
        ssize_t k = recv(fd, out + n, cap - 1 - n, 0);
        if (k == 0) break;
        if (k < 0) return out[n] = 0, -1;
        n += (size_t)k;
        if (n + 1 >= cap) break;
    }
    out[n] = 0;
    return (long)n;
}

static double metric_auth(const char *base, const char *name) { return metric(base, name); }

/* Slow and half-closed sockets, --max-queue 0, SIGTERM finishing a running stream and refusing
 * new connections; then SIGTERM with a short grace cancelling a running stream (an error event,
 * [DONE]) and a queued request (503); both exit 0. */
static void test_robustness(void) {
    srv s;
    char args[PATH_MAX + 256], req[1024];
    snprintf(args, sizeof args, "-m %s -np 1 -c 8192 -t 1 --max-queue 0 --conn-timeout 1 --shutdown-grace 30", slow);
    CHECK(start(&s, "robust", args) == 0);
    /* a client that sends half its headers and stops: others are served meanwhile, and it is
     * closed once --conn-timeout passes */
    int fd = raw_connect(s.url, 6);
    CHECK(fd >= 0 && send(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n", 41, MSG_NOSIGNAL) == 41);
    double t0 = now_s();
    CHECK(http_x(s.url, "GET", "/health", NULL, NULL, buf, sizeof buf) == 200 && now_s() - t0 < 1);
    long n = raw_read_all(fd, buf, sizeof buf);
    double dt = now_s() - t0;
    CHECKF(n >= 0 && dt < 4, "slow headers: read %ld bytes, closed after %.1f s", n, dt);
    close(fd);
    /* a body that never comes in full */
    fd = raw_connect(s.url, 6);
    const char *part = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"prompt\":";
    CHECK(fd >= 0 && send(fd, part, strlen(part), MSG_NOSIGNAL) == (ssize_t)strlen(part));
    t0 = now_s();
    n = raw_read_all(fd, buf, sizeof buf);
    dt = now_s() - t0;
    CHECKF(n >= 0 && dt < 4, "slow body: read %ld bytes, closed after %.1f s", n, dt);
    close(fd);
    /* a whole request, then the client half-closes: it has gone as far as we can tell (nginx's
     * 499); its sequence is cancelled and the slot freed */
    double can0 = metric_auth(s.url, "edge0_sequences_cancelled_total");
    const char *longreq = "{\"prompt\":[5,6,7],\"max_tokens\":8000,\"ignore_eos\":true,\"temperature\":0}";
    snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s", strlen(longreq), longreq);
    fd = raw_connect(s.url, 6);
    CHECK(fd >= 0 && send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
    usleep(300000);
    shutdown(fd, SHUT_WR);
    t0 = now_s();
    n = raw_read_all(fd, buf, sizeof buf);
    dt = now_s() - t0;
    CHECKF(n >= 0 && dt < 3, "half-closed: read %ld bytes, closed after %.1f s", n, dt);
    close(fd);
    for (int i = 0; i < 30 && metric_auth(s.url, "edge0_active_sequences") != 0; i++) usleep(100000);
    CHECK(metric_auth(s.url, "edge0_active_sequences") == 0 && metric_auth(s.url, "edge0_requests_live") == 0);
    CHECKF(metric_auth(s.url, "edge0_sequences_cancelled_total") == can0 + 1, "cancelled %g -> %g", can0,
           metric_auth(s.url, "edge0_sequences_cancelled_total"));
    /* --max-queue 0: a free slot still takes a request; none waits */
    char script[4096], out[1024] = "";
    snprintf(script, sizeof script,
             "cd %s && (curl -s -m 2 -o /dev/null -d '%s' %s/v1/completions >/dev/null 2>&1 &); sleep 0.4; "
             "curl -s -o /dev/null -w '%%{http_code}' -d '%s' %s/v1/completions",
             dir, longreq, s.url, longreq, s.url);
    t_sh(script, out, sizeof out);
    CHECKF(!strcmp(out, "429"), "second request with --max-queue 0: %s", out);
    for (int i = 0; i < 40 && metric_auth(s.url, "edge0_active_sequences") != 0; i++) usleep(100000);
    CHECK(http_x(s.url, "POST", "/v1/completions", "{\"prompt\":[5,6],\"max_tokens\":2}", NULL, buf, sizeof buf) == 200);
    /* SIGTERM while a stream runs: it finishes (all its tokens, [DONE]); new connections are refused */
    snprintf(script, sizeof script,
             "cd %s && rm -f fin.out && (curl -s -N -o fin.out -d '{\"prompt\":[5,6,7],\"max_tokens\":300,\"ignore_eos\":true,"
             "\"temperature\":0,\"stream\":true,\"return_tokens\":true}' %s/v1/completions >/dev/null 2>&1 &); "
             "for i in $(seq 50); do test -s fin.out && break; sleep 0.1; done",
             dir, s.url);
    t_sh(script, NULL, 0);
    CHECKF(metric_auth(s.url, "edge0_active_sequences") == 1, "the stream is not running at SIGTERM");
    kill(s.pid, SIGTERM);
    usleep(300000);
    fd = raw_connect(s.url, 1);
    CHECKF(fd < 0, "a new connection after SIGTERM was accepted");
    if (fd >= 0) close(fd);
    int st = -1;
    for (int i = 0; i < 300; i++)
        if (waitpid(s.pid, &st, WNOHANG) == s.pid) break;
        else usleep(100000);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/fin.out", dir);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[got] = 0;
    if (f) fclose(f);
    int n_tok = 0;
    for (const char *p = buf; (p = strstr(p, "\"tokens\":[")); p += 10)
        for (const char *q = p + 10; *q && *q != ']'; q++)
            if (*q >= '0' && *q <= '9' && (q[-1] == '[' || q[-1] == ',')) n_tok++;
    CHECKF(strstr(buf, "\"finish_reason\":\"length\"") && strstr(buf, "data: [DONE]") && n_tok == 300,
           "stream across SIGTERM: %d tokens, %.300s", n_tok, buf);

    /* no grace: the running stream is cancelled (error event, [DONE]), the queued one gets 503 */
    snprintf(args, sizeof args, "-m %s -np 1 -c 8192 -t 1 --max-queue 1 --shutdown-grace 0", slow);
    CHECK(start(&s, "robust2", args) == 0);
    snprintf(script, sizeof script,
             "cd %s && rm -f can.out q.code && (curl -s -N -o can.out -d '{\"prompt\":[5,6,7],\"max_tokens\":8000,\"ignore_eos\":true,"
             "\"stream\":true}' %s/v1/completions >/dev/null 2>&1 &); sleep 0.3; "
             "(curl -s -o q.out -w '%%{http_code}' -d '%s' %s/v1/completions > q.code 2>/dev/null &); sleep 0.3",
             dir, s.url, longreq, s.url);
    t_sh(script, NULL, 0);
    t0 = now_s();
    kill(s.pid, SIGTERM);
    st = -1;
    for (int i = 0; i < 100; i++)
        if (waitpid(s.pid, &st, WNOHANG) == s.pid) break;
        else usleep(100000);
    dt = now_s() - t0;
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0 && dt < 5, "exit status %d after %.1f s", st, dt);
    usleep(200000);
    snprintf(script, sizeof script, "cd %s && cat q.code; echo; tail -c 400 can.out", dir);
    t_sh(script, buf, sizeof buf);
    CHECKF(!strncmp(buf, "503\n", 4) && strstr(buf, "\"error\"") && strstr(buf, "data: [DONE]"), "%s", buf);
}

/* A server streaming its experts: /metrics counts expert cache misses and bytes read. Then 500:
 * the engine fails (the model file loses its experts' bytes under the server): a whole request
 * gets the OpenAI error object with code 500, a stream an error event and [DONE]; both are
 * counted, and the server goes on answering. */
static void test_engine_error_500(void) {
    char copy[PATH_MAX + 32], args[PATH_MAX + 256], cmd[PATH_MAX * 3];
    snprintf(copy, sizeof copy, "%s/broken.gguf", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s", model, copy);
    CHECK(t_sh(cmd, NULL, 0) == 0);
    snprintf(args, sizeof args, "-m %s -np 1 -c 1024 -t 1 --model-option experts=stream --model-option expert_slots=2", copy);
    srv s;
    CHECK(start(&s, "broken", args) == 0);
    /* first, whole: the expert cache counters move (the main server's experts are resident: 0) */
    static char m[1 << 16];
    CHECK(http_x(s.url, "POST", "/v1/completions", "{\"prompt\":[5,6,7],\"max_tokens\":4,\"ignore_eos\":true}", NULL, buf, sizeof buf) == 200);
    CHECK(http_x(s.url, "GET", "/metrics", NULL, NULL, m, sizeof m) == 200);
    double miss = metric_of(m, "edge0_expert_cache_misses_total"), hit = metric_of(m, "edge0_expert_cache_hits_total");
    double rd = metric_of(m, "edge0_expert_bytes_read_total");
    CHECKF(miss > 0 && hit >= 0 && rd >= miss, "streamed experts: %g misses, %g hits, %g bytes", miss, hit, rd);
    CHECK(metric(url, "edge0_expert_cache_misses_total") == 0 && metric(url, "edge0_expert_bytes_read_total") == 0);
    struct stat st;
    CHECK(stat(copy, &st) == 0 && truncate(copy, st.st_size / 2) == 0); /* the second half: expert weights */
    int code = http_x(s.url, "POST", "/v1/completions", "{\"prompt\":[40,41,42,43,44,45,46,47],\"max_tokens\":8}", NULL, buf, sizeof buf);
    json_t *j = json_loads(buf, 0, NULL), *e = json_object_get(j, "error");
    CHECKF(code == 500 && json_integer_value(json_object_get(e, "code")) == 500 &&
               !strcmp(json_string_value(json_object_get(e, "type")) ? json_string_value(json_object_get(e, "type")) : "", "server_error") &&
               strstr(json_string_value(json_object_get(e, "message")) ? json_string_value(json_object_get(e, "message")) : "", "broken.gguf"),
           "%d %s", code, buf);
    json_decref(j);
    code = http_x(s.url, "POST", "/v1/completions", "{\"prompt\":[9,6,8,30,31,32,33,34],\"max_tokens\":8,\"stream\":true}", NULL, buf, sizeof buf);
    CHECKF(code == 200 && strstr(buf, "data: {\"error\":{") && strstr(buf, "\"code\":500") && strstr(buf, "data: [DONE]\n\n"), "%d %s", code, buf);
    CHECK(http_x(s.url, "GET", "/metrics", NULL, NULL, m, sizeof m) == 200);
    CHECKF(strstr(m, "edge0_requests_total{code=\"500\"} 1\n") && metric_of(m, "edge0_sequences_error_total") == 2 &&
               metric_of(m, "edge0_active_sequences") == 0,
           "%s", m);
    CHECK(http_x(s.url, "GET", "/health", NULL, NULL, buf, sizeof buf) == 200);
    CHECK(stop(&s) == 0);
    unlink(copy);
}

/* Batched equals single on the golden models (f32 KV): a greedy request's ids are the same alone
 * and among 15 concurrent others (other prompts, lengths and temperatures, some streamed); the
 * last two again with their experts streamed through 2 slots a layer (routing=predicted, the
 * streaming default: each sequence computes with its own predictions, batched as alone). */
static void test_golden_batched(void) {
    static const char *const names[] = {"stories260K", "stories260K-moe4", "llama-dense", "llama-tied", "llama-moe",
                                        "qwen2-dense", "qwen2moe", "qwen3-dense", "qwen3moe", "stories260K-moe4", "qwen3moe"};
    const size_t n_names = sizeof names / sizeof *names, streamed_from = n_names - 2;
    for (size_t mi = 0; mi < n_names; mi++) {
        char gguf[PATH_MAX], gj[PATH_MAX], args[PATH_MAX + 256], req[4096], script[16384];
        snprintf(gguf, sizeof gguf, "%s/golden/%s.gguf", t_shared(), names[mi]);
        snprintf(gj, sizeof gj, "%s/golden/%s.golden.json", t_shared(), names[mi]);
        json_t *g = json_load_file(gj, 0, NULL);
        json_t *prompt = json_object_get(json_array_get(json_object_get(g, "greedy"), 0), "prompt");
        char *ps = json_is_array(prompt) ? json_dumps(prompt, JSON_COMPACT) : NULL;
        json_decref(g);
        CHECKF(ps, "%s: no greedy prompt", gj);
        if (!ps) continue;
        snprintf(args, sizeof args, "-m %s -np 16 -c 8192 -t 1 -ctk f32 -ctv f32%s", gguf,
                 mi >= streamed_from ? " --model-option experts=stream --model-option expert_slots=2" : "");
        srv s;
        CHECKF(start(&s, names[mi], args) == 0, "%s", names[mi]);
        snprintf(req, sizeof req, "{\"prompt\":%s,\"max_tokens\":24,\"temperature\":0,\"ignore_eos\":true,\"return_tokens\":true}", ps);
        free(ps);
        CHECK(http_x(s.url, "POST", "/v1/completions", req, NULL, buf, sizeof buf) == 200);
        json_t *alone = choice0(buf);
        char *ids = json_dumps(json_object_get(alone, "tokens"), 0);
        size_t n_alone = json_array_size(json_object_get(alone, "tokens"));
        json_decref(alone);
        int o = snprintf(script, sizeof script, "cd %s || exit 1; ", dir);
        for (int i = 0; i < 15; i++)
            o += snprintf(script + o, sizeof script - o,
                          "curl -s -o gold%d -d '{\"prompt\":[%d,%d,%d,%d],\"max_tokens\":%d,\"temperature\":%s,\"stream\":%s,"
                          "\"ignore_eos\":true}' %s/v1/completions & ",
                          i, 1 + i, 20 + 7 * i, 3 + i, 90 + i, 8 + 3 * i, i % 3 ? "0" : "0.9", i % 2 ? "true" : "false", s.url);
        o += snprintf(script + o, sizeof script - o, "curl -s -o gtarget -d '%s' %s/v1/completions & wait; cat gtarget", req, s.url);
        CHECK(t_sh(script, buf, sizeof buf) == 0);
        json_t *batched = choice0(buf);
        char *bids = json_dumps(json_object_get(batched, "tokens"), 0);
        json_decref(batched);
        CHECKF(ids && bids && n_alone == 24 && !strcmp(ids, bids),
               "%s: alone %s, among 15 others %s", names[mi], ids, bids);
        free(ids), free(bids);
        CHECK(stop(&s) == 0);
    }
}

/* --prefill-budget: a long prompt arriving while others decode is taken a few tokens a step (the
 * pieces counted in /metrics), and its greedy reply — ids, text and every logprob — is the one it
 * gets alone from scratch (whole -b chunks), and again from the slot's cached prefix: resident;
 * streamed under predicted routing, where only generated tokens are predicted and prompt tokens
 * route exactly however they are cut (engine.h), with a prompt whose last chunk alone is one
 * token, and prompts that pieces of 3 and the cached prefix (all but the last token) leave with
 * one-token pieces (with a one-token prompt piece computed as a decode step, as before session
 * 21, the last two cases fail). */
static void test_prefill_budget(void) {
    static const struct {
        const char *name, *opts;
        int len;
    } cases[] = {{"qwen3moe", "", 194},
                 {"stories260K-moe4", " --model-option experts=stream --model-option expert_slots=2", 193},
                 {"qwen3moe", " --model-option experts=stream --model-option expert_slots=4", 196},
                 {"stories260K-moe4", " --model-option experts=stream --model-option expert_slots=2", 196}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char gguf[PATH_MAX], args[PATH_MAX + 256], list[4096], fresh[4400], again[4400], script[8192];
        snprintf(gguf, sizeof gguf, "%s/golden/%s.gguf", t_shared(), cases[c].name);
        snprintf(args, sizeof args, "-m %s -np 8 -c 8192 -t 1 -b 64 -ctk f32 -ctv f32 --prefill-budget 3%s", gguf, cases[c].opts);
        srv s;
        CHECKF(start(&s, cases[c].name, args) == 0, "%s", cases[c].name);
        int o = 0;
        for (int k = 0; k < cases[c].len; k++) o += snprintf(list + o, sizeof list - o, "%s%d", k ? "," : "", 3 + (5 + 17 * k) % 500);
        /* the prompt from scratch, and again reusing what the slot cached */
        snprintf(fresh, sizeof fresh, "{\"prompt\":[%s],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,\"return_tokens\":true,"
                 "\"logprobs\":3,\"cache_prompt\":false}", list);
        snprintf(again, sizeof again, "{\"prompt\":[%s],\"max_tokens\":16,\"temperature\":0,\"ignore_eos\":true,\"return_tokens\":true,"
                 "\"logprobs\":3}", list);
        CHECK(http_x(s.url, "POST", "/v1/completions", fresh, NULL, buf, sizeof buf) == 200);
        json_t *alone = choice0(buf);
        char *ids = json_dumps(alone, JSON_SORT_KEYS); /* ids, text and logprobs (every float in full) */
        json_decref(alone);
        CHECK(http_x(s.url, "POST", "/v1/completions", again, NULL, buf, sizeof buf) == 200);
        json_t *reused = choice0(buf);
        char *rids = json_dumps(reused, JSON_SORT_KEYS);
        json_decref(reused);
        CHECKF(ids && rids && !strcmp(ids, rids) && metric(s.url, "edge0_prompt_tokens_cached_total") > 0,
               "%s%s: from scratch %s, from the cached prefix %s", cases[c].name, cases[c].opts, ids, rids);
        const double p0 = metric(s.url, "edge0_prompt_pieces_total");
        /* 7 long replies first; the long prompt (from scratch) once they decode */
        o = snprintf(script, sizeof script, "cd %s || exit 1; ", dir);
        for (int i = 0; i < 7; i++)
            o += snprintf(script + o, sizeof script - o,
                          "curl -s -o bud%d -d '{\"prompt\":[%d,2,3],\"max_tokens\":700,\"temperature\":0,\"ignore_eos\":true}' "
                          "%s/v1/completions & ", i, 1 + i, s.url);
        o += snprintf(script + o, sizeof script - o, "sleep 0.3; curl -s -o btarget -d '%s' %s/v1/completions; wait; cat btarget", fresh, s.url);
        CHECK(t_sh(script, buf, sizeof buf) == 0);
        json_t *batched = choice0(buf);
        char *bids = json_dumps(batched, JSON_SORT_KEYS);
        json_decref(batched);
        const double pieces = metric(s.url, "edge0_prompt_pieces_total") - p0;
        CHECKF(ids && bids && !strcmp(ids, bids), "%s%s: alone %s, while others decode %s", cases[c].name, cases[c].opts, ids, bids);
        CHECKF(p0 >= 4 && pieces >= 7 + 40, "%s%s: %.0f pieces alone, %.0f among others (budget 3: >= 47)", cases[c].name,
               cases[c].opts, p0, pieces);
        free(ids), free(rids), free(bids);
        CHECK(stop(&s) == 0);
    }
}

/* The generated ids of a completion of prompt [1] on srv s with the extra fields (NULL on error). */
static json_t *ids_of(const srv *s, const char *extra) {
    char req[1024];
    snprintf(req, sizeof req, "{\"prompt\":[1],\"max_tokens\":24,\"ignore_eos\":true,\"return_tokens\":true%s}", extra);
    if (http_x(s->url, "POST", "/v1/completions", req, NULL, buf, sizeof buf) != 200) return NULL;
    json_t *c = choice0(buf), *ids = json_incref(json_object_get(c, "tokens"));
    json_decref(c);
    return json_array_size(ids) == 24 ? ids : (json_decref(ids), NULL);
}
static bool all_distinct(const json_t *ids) {
    for (size_t i = 0; i < json_array_size(ids); i++)
        for (size_t k = 0; k < i; k++)
            if (json_integer_value(json_array_get(ids, i)) == json_integer_value(json_array_get(ids, k))) return false;
    return json_array_size(ids) > 0;
}

/* The sampling fields reach the sampler, on a golden model whose greedy reply repeats itself:
 * presence and frequency penalties over the whole context leave no id twice, repeat_penalty
 * changes the reply; top_k 1, min_p 1 and a tiny top_p make a hot temperature greedy again, and
 * without them the same temperature does not give the greedy reply. */
static void test_sampling_params(void) {
    char gguf[PATH_MAX], args[PATH_MAX + 128];
    snprintf(gguf, sizeof gguf, "%s/golden/qwen2-dense.gguf", t_shared());
    snprintf(args, sizeof args, "-m %s -np 1 -c 512 -t 1", gguf);
    srv s;
    CHECK(start(&s, "sampling", args) == 0);
    json_t *greedy = ids_of(&s, ",\"temperature\":0");
    CHECKF(greedy && !all_distinct(greedy), "the greedy reply should repeat an id (else the penalties are not tested): %s", buf);
    static const char *const distinct[] = {",\"temperature\":0,\"presence_penalty\":100,\"repeat_last_n\":-1",
                                           ",\"temperature\":0,\"frequency_penalty\":100,\"repeat_last_n\":-1"};
    for (int i = 0; i < 2; i++) {
        json_t *ids = ids_of(&s, distinct[i]);
        CHECKF(ids && all_distinct(ids), "%s: %s", distinct[i], buf);
        json_decref(ids);
    }
    json_t *rp = ids_of(&s, ",\"temperature\":0,\"repeat_penalty\":50,\"repeat_last_n\":-1");
    CHECKF(rp && greedy && !json_equal(rp, greedy), "repeat_penalty 50 did not change the reply: %s", buf);
    json_decref(rp);
    static const char *const as_greedy[] = {",\"temperature\":1.5,\"seed\":7,\"top_k\":1", ",\"temperature\":1.5,\"seed\":7,\"top_k\":0,\"min_p\":1",
                                            ",\"temperature\":1.5,\"seed\":7,\"top_k\":0,\"min_p\":0,\"top_p\":0.000001",
                                            /* the values of refused fields that ask for nothing */
                                            ",\"temperature\":0,\"response_format\":{\"type\":\"text\"},\"echo\":false,\"best_of\":1,\"suffix\":\"\","
                                            "\"logit_bias\":{}"};
    for (int i = 0; i < 4; i++) {
        json_t *ids = ids_of(&s, as_greedy[i]);
        CHECKF(ids && greedy && json_equal(ids, greedy), "%s: %s", as_greedy[i], buf);
        json_decref(ids);
    }
    json_t *hot = ids_of(&s, ",\"temperature\":1.5,\"seed\":7,\"top_k\":0,\"min_p\":0,\"top_p\":1");
    CHECKF(hot && greedy && !json_equal(hot, greedy), "temperature 1.5 gave the greedy reply: %s", buf);
    json_decref(hot);
    /* max_completion_tokens (OpenAI's newer name) */
    CHECK(http_x(s.url, "POST", "/v1/completions", "{\"prompt\":[1],\"max_completion_tokens\":3,\"ignore_eos\":true}", NULL, buf, sizeof buf) == 200);
    json_t *mc = json_loads(buf, JSON_ALLOW_NUL, NULL), *length = json_string("length");
    CHECKF(json_integer_value(json_object_get(json_object_get(mc, "usage"), "completion_tokens")) == 3 &&
               json_equal(json_object_get(json_array_get(json_object_get(mc, "choices"), 0), "finish_reason"), length),
           "%s", buf);
    json_decref(mc), json_decref(length);
    /* logit_bias: +100 on a token makes greedy choose it every time; banning the greedy reply's
     * first id (false, llama-server's list form, or -100) changes the first id */
    json_t *forced = ids_of(&s, ",\"temperature\":0,\"logit_bias\":{\"77\":100}");
    bool all77 = forced != NULL;
    for (size_t i = 0; forced && i < json_array_size(forced); i++) all77 &= json_integer_value(json_array_get(forced, i)) == 77;
    CHECKF(all77, "logit_bias 77: +100: %s", buf);
    json_decref(forced);
    char ban[3][128];
    const long long first = greedy ? json_integer_value(json_array_get(greedy, 0)) : 0;
    snprintf(ban[0], sizeof ban[0], ",\"temperature\":0,\"logit_bias\":[[%lld,false]]", first);
    snprintf(ban[1], sizeof ban[1], ",\"temperature\":0,\"logit_bias\":{\"%lld\":-100}", first);
    snprintf(ban[2], sizeof ban[2], ",\"temperature\":1.5,\"seed\":3,\"logit_bias\":[[%lld,false]]", first);
    for (int i = 0; i < 3; i++) {
        json_t *ids = ids_of(&s, ban[i]);
        bool never = ids != NULL;
        for (size_t k = 0; ids && k < json_array_size(ids); k++) never &= json_integer_value(json_array_get(ids, k)) != first;
        CHECKF(never, "%s: %s", ban[i], buf);
        json_decref(ids);
    }
    CHECK(stop(&s) == 0);
    /* -l/--logit-bias is the default of requests without their own logit_bias, which replaces it */
    snprintf(args, sizeof args, "-m %s -np 1 -c 512 -t 1 -l 77+100", gguf);
    CHECK(start(&s, "sampling-bias", args) == 0);
    forced = ids_of(&s, ",\"temperature\":0");
    all77 = forced != NULL;
    for (size_t i = 0; forced && i < json_array_size(forced); i++) all77 &= json_integer_value(json_array_get(forced, i)) == 77;
    CHECKF(all77, "serve -l 77+100: %s", buf);
    json_decref(forced);
    json_t *own = ids_of(&s, ",\"temperature\":0,\"logit_bias\":{}");
    CHECKF(own && greedy && json_equal(own, greedy), "a request's empty logit_bias did not replace -l: %s", buf);
    json_decref(own);
    json_decref(greedy);
    CHECK(stop(&s) == 0);
}

static void test_refuses_public_without_key(void) {
    char cmd[PATH_MAX * 2], out[1024];
    snprintf(cmd, sizeof cmd, "%s serve -m %s --host 0.0.0.0 --port 0 2>&1", bin, model);
    CHECKF(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "--api-key"), "%s", out);
}

int main(void) {
    char build[PATH_MAX], shared[PATH_MAX];
    if (!realpath(t_build(), build) || !realpath(t_shared(), shared) || !realpath(".", root)) {
        printf("FAIL setup: no %s or %s\n", t_build(), t_shared());
        return 1;
    }
    if (!t_need_shared("templates/Qwen-Qwen2.5-7B-Instruct.jinja", NULL)) return T_DONE();
    snprintf(dir, sizeof dir, "%.900s/test-serve", build);
    snprintf(bin, sizeof bin, "%.900s/bin/edge0-infer", build);
    snprintf(model, sizeof model, "%.900s/chat.gguf", dir);
    snprintf(slow, sizeof slow, "%.900s/slow.gguf", dir);
    mkdir(dir, 0755);
    static char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "%s synth --arch qwen3moe --out %s --seed 3 --chat-template-file %.900s/templates/Qwen-Qwen2.5-7B-Instruct.jinja >/dev/null"
             " && %s synth --arch llama --out %s --seed 5 --n-layer 6 --n-embd 768 --n-ff 2048 --n-ctx 8192 >/dev/null",
             bin, model, shared, bin, slow);
    if (t_sh(cmd, NULL, 0) != 0) {
        printf("FAIL setup: %s\n", cmd);
        return 1;
    }
    srv s;
    char args[PATH_MAX + 128];
    snprintf(args, sizeof args, "-m %s -np 4 -c 4096 -t 1 --max-body 64KiB", model);
    if (start(&s, "main", args) != 0) {
        printf("FAIL setup: serve did not start (%s/main.log)\n", dir);
        return 1;
    }
    server = s.pid;
    snprintf(url, sizeof url, "%s", s.url);
    RUN(test_endpoints);
    RUN(test_greedy_equals_cli);
    RUN(test_stop);
    RUN(test_usage_and_cache);
    RUN(test_errors);
    RUN(test_grammar);
    RUN(test_tools);
    RUN(test_metrics);
    RUN(test_openai_npm);
    RUN(test_load);
    RUN(test_refuses_public_without_key);
    RUN(test_engine_error_500);
    RUN(test_golden_batched);
    RUN(test_prefill_budget);
    RUN(test_sampling_params);
    t_begin("test_sigterm_exits_0");
    CHECK(stop(&s) == 0);
    t_end();
    RUN(test_limits);
    RUN(test_robustness);
    return T_DONE();
}
