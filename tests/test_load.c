/* test_load.c — `edge0-bench load` (bench/load.c, bench/http.c) against a mock OpenAI-compatible
 * server started here on a free loopback port: streamed completions sent as chunked transfer
 * encoding with events split across chunks, a 503 for prompts containing FAIL, /v1/models and a
 * /metrics counter. Checked: every scheduled request is accounted for (ok, failed with its
 * reason, cancelled, not sent), token counts from `usage`, the server's own request counter
 * agrees with the client's, the same seed gives the same arrival schedule (another seed another),
 * --duration leaves later arrivals unsent, --disconnect closes streams mid-way (the server sees
 * it), and bad arguments get one clear error. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

typedef struct mock_counts {
    volatile int completions, models, metrics, closed_early;
} mock_counts;

static mock_counts *counts; /* shared with the mock server process */
static int port;
static pid_t mock_pid;
static char bench_bin[1024], dir[1024], url[64];
static char out[1 << 16];

/* ---- the mock server ---- */

static int send_str(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One HTTP chunk holding s[0..n). */
static int send_chunk(int fd, const char *s, size_t n) {
    char h[32];
    int k = snprintf(h, sizeof h, "%zx\r\n", n);
    return send_str(fd, h, (size_t)k) || send_str(fd, s, n) || send_str(fd, "\r\n", 2) ? -1 : 0;
}

/* An SSE event split over two HTTP chunks (the client must reassemble it). */
static int send_event(int fd, const char *json) {
    char ev[1024];
    int n = snprintf(ev, sizeof ev, "data: %s\n\n", json);
    return send_chunk(fd, ev, (size_t)n / 2) || send_chunk(fd, ev + n / 2, (size_t)n - (size_t)n / 2) ? -1 : 0;
}

static void *mock_conn(void *arg) {
    int fd = (int)(intptr_t)arg;
    char req[65536];
    size_t n = 0;
    char *body = NULL;
    long clen = 0;
    while (n < sizeof req - 1) {
        ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        req[n] = 0;
        char *end = strstr(req, "\r\n\r\n");
        if (!end) continue;
        char *cl = strcasestr(req, "Content-Length:");
        clen = cl ? strtol(cl + 15, NULL, 10) : 0;
        if ((size_t)(end + 4 - req) + (size_t)clen <= n) {
            body = end + 4;
            break;
        }
    }
    if (!strncmp(req, "GET /v1/models", 14)) {
        __sync_fetch_and_add(&counts->models, 1);
        const char *b = "{\"object\":\"list\",\"data\":[{\"id\":\"mock-model\",\"object\":\"model\",\"owned_by\":\"mock\"}]}";
        char h[256];
        int k = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", strlen(b));
        send_str(fd, h, (size_t)k);
        send_str(fd, b, strlen(b));
    } else if (!strncmp(req, "GET /metrics", 12)) {
        __sync_fetch_and_add(&counts->metrics, 1);
        char b[128], h[256];
        int bn = snprintf(b, sizeof b, "mock_requests_total %d\n", counts->completions);
        int k = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", bn);
        send_str(fd, h, (size_t)k);
        send_str(fd, b, (size_t)bn);
    } else if (!strncmp(req, "POST /v1/completions", 20) && body) {
        __sync_fetch_and_add(&counts->completions, 1);
        json_t *j = json_loadb(body, (size_t)clen, 0, NULL);
        const char *prompt = json_string_value(json_object_get(j, "prompt"));
        int max = (int)json_integer_value(json_object_get(j, "max_tokens"));
        if (!prompt || strstr(prompt, "FAIL")) {
            const char *b = "{\"error\":{\"message\":\"mock overloaded\",\"type\":\"server_error\",\"code\":503}}";
            char h[256];
            int k = snprintf(h, sizeof h, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                             strlen(b));
            send_str(fd, h, (size_t)k);
            send_str(fd, b, strlen(b));
        } else {
            const char *h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
            int bad = send_str(fd, h, strlen(h));
            for (int i = 0; i < max && !bad; i++) {
                char ev[256];
                snprintf(ev, sizeof ev, "{\"choices\":[{\"index\":0,\"text\":\"t%d \",\"finish_reason\":%s}]}", i,
                         i + 1 == max ? "\"length\"" : "null");
                bad = send_event(fd, ev);
                nanosleep(&(struct timespec){0, 2000000}, NULL);
            }
            char usage[256];
            snprintf(usage, sizeof usage, "{\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}",
                     (int)strlen(prompt) / 4 + 1, max);
            if (!bad) bad = send_event(fd, usage) || send_event(fd, "[DONE]") || send_str(fd, "0\r\n\r\n", 5);
            if (bad) __sync_fetch_and_add(&counts->closed_early, 1);
        }
        json_decref(j);
    } else {
        send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 45);
    }
    close(fd);
    return NULL;
}

static void mock_serve(int lfd) {
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_t t;
        if (pthread_create(&t, NULL, mock_conn, (void *)(intptr_t)fd) == 0) pthread_detach(t);
        else close(fd);
    }
}

static int start_mock(void) {
    counts = mmap(NULL, sizeof *counts, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (counts == MAP_FAILED) return -1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0};
    socklen_t len = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 256) || getsockname(lfd, (struct sockaddr *)&a, &len))
        return -1;
    port = ntohs(a.sin_port);
    mock_pid = fork();
    if (mock_pid == 0) {
        mock_serve(lfd);
        _exit(0);
    }
    close(lfd);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    return mock_pid > 0 ? 0 : -1;
}

/* ---- the client under test ---- */

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

static json_t *report(const char *name) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s/load.json", dir, name);
    json_t *r = json_load_file(p, 0, NULL);
    CHECKF(r != NULL, "no %s", p);
    return r;
}

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }
static long long iget(const json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* Every scheduled request is one of ok, failed, cancelled, not sent. */
static void check_accounting(const json_t *rate) {
    const json_t *q = get(rate, "requests");
    CHECKF(iget(q, "ok") + iget(q, "failed") + iget(q, "cancelled") + iget(q, "not_sent") == iget(q, "scheduled"),
           "%lld ok + %lld failed + %lld cancelled + %lld not sent != %lld scheduled", iget(q, "ok"), iget(q, "failed"),
           iget(q, "cancelled"), iget(q, "not_sent"), iget(q, "scheduled"));
    CHECK(json_array_size(get(rate, "requests_detail")) == (size_t)iget(q, "scheduled"));
}

static void test_basic(void) {
    int before = counts->completions;
    CHECKF(sh("'%s' load --url %s --out '%s/basic' --rate 50 --requests 12 --max-tokens 5 --seed 7", bench_bin, url, dir) == 0, "%s", out);
    json_t *r = report("basic");
    if (!r) return;
    CHECK(!strcmp(json_string_value(get(r, "model")), "mock-model"));
    CHECK(!strcmp(json_string_value(get(r, "engine")), "mock"));
    const json_t *rate = json_array_get(get(r, "rates"), 0);
    check_accounting(rate);
    CHECK(iget(get(rate, "requests"), "ok") == 12);
    CHECK(iget(rate, "completion_tokens") == 60);
    CHECK(counts->completions - before == 12);
    CHECK(iget(get(rate, "ttft_s"), "n") == 12 && iget(get(rate, "tpot_s"), "n") == 12);
    CHECK(iget(get(rate, "itl_s"), "n") == 12 * 4);
    CHECK(json_real_value(get(get(rate, "ttft_s"), "p50")) > 0);
    /* the server's counter, read before and after, moved by the requests the client sent */
    char want_before[64], want_after[64];
    snprintf(want_before, sizeof want_before, "mock_requests_total %d", before);
    snprintf(want_after, sizeof want_after, "mock_requests_total %d", before + 12);
    CHECK(strstr(json_string_value(get(rate, "server_metrics_before")), want_before) != NULL);
    CHECK(strstr(json_string_value(get(rate, "server_metrics_after")), want_after) != NULL);
    CHECK(json_is_string(get(get(rate, "ttft_s"), "warning"))); /* n = 12 < 20 */
    json_decref(r);
    CHECK(sh("grep -c '^| 50 | 12 | 0 | 0 | 0 |' '%s/basic/load.md'", dir) == 0);
}

static json_t *schedule(const char *name) {
    json_t *r = report(name), *s = json_array();
    const json_t *d = get(json_array_get(get(r, "rates"), 0), "requests_detail");
    for (size_t i = 0; i < json_array_size(d); i++) json_array_append(s, json_object_get(json_array_get(d, i), "t_scheduled"));
    json_decref(r);
    return s;
}

static void test_same_seed_same_schedule(void) {
    for (int k = 0; k < 3; k++)
        CHECK(sh("'%s' load --url %s --out '%s/seed%d' --rate 100 --requests 8 --max-tokens 2 --seed %d", bench_bin, url, dir, k,
                 k < 2 ? 11 : 12) == 0);
    json_t *a = schedule("seed0"), *b = schedule("seed1"), *c = schedule("seed2");
    CHECK(json_array_size(a) == 8 && json_equal(a, b));
    CHECK(!json_equal(a, c));
    json_decref(a);
    json_decref(b);
    json_decref(c);
}

static void test_failures_and_duration(void) {
    char p[1200];
    snprintf(p, sizeof p, "%s/prompts.jsonl", dir);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("{\"prompt\": \"hello there\", \"max_tokens\": 3}\n\n{\"prompt\": \"please FAIL\"}\n", f);
        fclose(f);
    }
    CHECKF(sh("'%s' load --url %s --out '%s/fail' --rate 40 --requests 16 --prompts '%s' --seed 3", bench_bin, url, dir, p) == 0, "%s",
           out);
    json_t *r = report("fail");
    if (r) {
        const json_t *rate = json_array_get(get(r, "rates"), 0);
        check_accounting(rate);
        long long ok = iget(get(rate, "requests"), "ok"), failed = iget(get(rate, "requests"), "failed");
        CHECK(ok > 0 && failed > 0 && ok + failed == 16);
        CHECK(iget(get(rate, "failure_reasons"), "HTTP 503: mock overloaded") == failed);
        CHECK(iget(rate, "completion_tokens") == 3 * ok);
        json_decref(r);
    }
    /* arrivals after --duration are counted, not sent */
    CHECK(sh("'%s' load --url %s --out '%s/dur' --rate 20 --requests 40 --max-tokens 2 --duration 0.3", bench_bin, url, dir) == 0);
    r = report("dur");
    if (r) {
        const json_t *rate = json_array_get(get(r, "rates"), 0);
        check_accounting(rate);
        long long not_sent = iget(get(rate, "requests"), "not_sent");
        CHECK(not_sent > 0 && not_sent < 40);
        CHECK(iget(get(rate, "failure_reasons"), "arrival after --duration") == not_sent);
        json_decref(r);
    }
}

static void test_disconnect(void) {
    int before = counts->closed_early;
    CHECK(sh("'%s' load --url %s --out '%s/disc' --rate 100 --requests 20 --max-tokens 40 --disconnect 0.5 --seed 5", bench_bin, url,
             dir) == 0);
    json_t *r = report("disc");
    if (!r) return;
    const json_t *rate = json_array_get(get(r, "rates"), 0), *d = get(rate, "requests_detail");
    check_accounting(rate);
    long long flagged = 0;
    for (size_t i = 0; i < json_array_size(d); i++) flagged += json_is_true(get(json_array_get(d, i), "disconnect"));
    CHECK(flagged > 0 && flagged < 20);
    CHECK(iget(get(rate, "requests"), "cancelled") == flagged);
    CHECK(iget(get(rate, "requests"), "ok") == 20 - flagged);
    /* the server saw its streams cut (allow it a moment to notice) */
    for (int k = 0; k < 50 && counts->closed_early - before < 1; k++) usleep(20000);
    CHECK(counts->closed_early - before >= 1);
    json_decref(r);
}

static void test_bad_arguments(void) {
    static const char *const bad[] = {"--url https://127.0.0.1:1", "--url http://127.0.0.1:99999", "--rate 0", "--rate x",
                                      "--slo ttft=fast", "--slo speed=1s", "--disconnect 2", "--requests 0", "--bogus 1", "--rate"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh("'%s' load %s%s --out '%s/bad' %s", bench_bin, strncmp(bad[i], "--url", 5) ? "--url " : "",
                    strncmp(bad[i], "--url", 5) ? url : "", dir, bad[i]);
        int lines = 0;
        for (const char *q = out; *q; q++) lines += *q == '\n';
        CHECKF(rc == 1 && lines == 1 && strstr(out, "edge0-bench: "), "load %s: exit %d: %s", bad[i], rc, out);
    }
    /* nothing listening: every request fails with the reason, exit 1 */
    CHECK(sh("'%s' load --url http://127.0.0.1:1 --model m --out '%s/down' --requests 2 --rate 100", bench_bin, dir) == 1);
    json_t *r = report("down");
    if (r) {
        const json_t *rate = json_array_get(get(r, "rates"), 0);
        check_accounting(rate);
        CHECK(iget(get(rate, "requests"), "failed") == 2);
        json_decref(r);
    }
    CHECK(sh("'%s' load --help", bench_bin) == 0 && strstr(out, "Poisson"));
}

int main(void) {
    snprintf(bench_bin, sizeof bench_bin, "%s/bin/edge0-bench", t_build());
    snprintf(dir, sizeof dir, "%s/test-load", t_build());
    mkdir(dir, 0755);
    t_begin("mock server");
    CHECK(start_mock() == 0);
    t_end();
    if (mock_pid <= 0) return T_DONE();
    RUN(test_basic);
    RUN(test_same_seed_same_schedule);
    RUN(test_failures_and_duration);
    RUN(test_disconnect);
    RUN(test_bad_arguments);
    kill(mock_pid, SIGKILL);
    return T_DONE();
}
