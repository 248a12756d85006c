/* test_serveload.c — the acceptance load test of `edge0-infer serve` (issue 15): on loopback, a
 * tiny synth model (2 layers, 64-wide, 1024-token vocabulary: the whole test takes seconds),
 * 64 concurrent streaming clients send 512 requests, one in ten going away mid-stream (half with
 * a plain close, half with a reset). Checked:
 *   - every request that was not abandoned ends complete: HTTP 200, a finish_reason, the usage
 *     chunk, `data: [DONE]`, and its ids and text equal those of the same prompt run alone
 *     (greedy, asked before the load, one at a time);
 *   - the server did not crash, still answers, and counts what happened: sequences finished +512,
 *     cancelled +51 (the abandoned ones);
 *   - nothing leaked: after the load the active sequences, queue, KV cells held by running
 *     sequences, live requests and open streams are all 0 (GET /metrics), the server's RSS is back
 *     near its baseline (measured after a warm-up round that touched every slot) and it runs as
 *     many threads as before the load: one pool for all 16 slots, no thread left behind.
 * The client is plain C (sockets, one thread per client; HTTP/1.1 with Connection: close, chunked
 * bodies decoded), so the test needs nothing beyond the build. */
#include <arpa/inet.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

#pragma GCC diagnostic ignored "-Wformat-truncation"

#define N_CLIENTS 64
#define N_REQUESTS 512
#define N_PROMPTS 32
#define DISCONNECT_EVERY 10 /* request i goes away when i % 10 == 9: 51 of 512 */
#define SLOTS 16
#define SLOT_CTX 640
#define THREADS 2
#define LONG_TOKENS 500     /* abandoned requests ask for this many: surely mid-stream when cut */

static char bin[PATH_MAX], dir[PATH_MAX], model[PATH_MAX];
static int port;
static pid_t server;

/* ---- a minimal HTTP/1.1 client ---- */

typedef struct resp {
    int status;
    char *body; /* decoded body (chunked or not), NUL-terminated, malloc'd */
    size_t len;
    bool cut;   /* we closed it on purpose */
} resp;

static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Decode a chunked body in place; -1 when malformed or incomplete. */
static long unchunk(char *b, size_t n) {
    size_t r = 0, w = 0;
    for (;;) {
        char *end;
        if (r >= n) return -1;
        unsigned long sz = strtoul(b + r, &end, 16);
        char *crlf = strstr(b + r, "\r\n");
        if (!crlf || end == b + r) return -1;
        r = (size_t)(crlf - b) + 2;
        if (sz == 0) return (long)w;
        if (r + sz + 2 > n) return -1;
        memmove(b + w, b + r, sz);
        w += sz, r += sz + 2;
    }
}

/* A generated token id has arrived: some `"tokens":[N` in what was read. */
static bool has_token(const char *b) {
    for (const char *p = b; (p = strstr(p, "\"tokens\":[")); p++)
        if (p[10] >= '0' && p[10] <= '9') return true;
    return false;
}

/* method path body: the whole response. cut_after_token: close the connection (reset when
 * reset) as soon as the first generated token id has arrived. -1 on a transport error. */
static int request(const char *method, const char *path, const char *body, bool cut_after_token, bool reset, resp *out) {
    memset(out, 0, sizeof *out);
    int fd = dial();
    if (fd < 0) return -1;
    char head[512];
    size_t bl = body ? strlen(body) : 0;
    int hl = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      method, path, bl);
    if (send_all(fd, head, (size_t)hl) < 0 || (bl && send_all(fd, body, bl) < 0)) {
        close(fd);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    int rc = -1;
    for (;;) {
        if (!b) break;
        if (n + 4097 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) break;
            b = nb;
        }
        ssize_t k = recv(fd, b + n, cap - n - 1, 0);
        if (k < 0) break; /* timeout or error */
        if (k == 0) {
            rc = 0;
            break;
        }
        n += (size_t)k;
        b[n] = 0;
        if (cut_after_token && has_token(b)) {
            if (reset) {
                struct linger l = {.l_onoff = 1, .l_linger = 0};
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            }
            out->cut = true;
            rc = 0;
            break;
        }
    }
    close(fd);
    if (rc < 0 || !b) return free(b), -1;
    b[n] = 0;
    if (out->cut) return free(b), 0;
    char *sep = strstr(b, "\r\n\r\n");
    if (strncmp(b, "HTTP/1.", 7) || !sep) return free(b), -1;
    out->status = atoi(b + 9);
    *sep = 0;
    bool chunked = strcasestr(b, "\r\nTransfer-Encoding: chunked") != NULL;
    char *payload = sep + 4;
    size_t plen = n - (size_t)(payload - b);
    if (chunked) {
        long d = unchunk(payload, plen);
        if (d < 0) return free(b), -1;
        plen = (size_t)d;
    }
    memmove(b, payload, plen);
    b[plen] = 0;
    out->body = b;
    out->len = plen;
    return 0;
}

static double metric(const char *name) {
    resp r;
    if (request("GET", "/metrics", NULL, false, false, &r) < 0 || r.status != 200) return free(r.body), -1;
    char key[256];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(r.body, key);
    double v = p ? atof(p + strlen(key)) : -1;
    free(r.body);
    return v;
}

/* A field of /proc/PID/status ("VmRSS:" in KiB, "Threads:"), -1 when absent. */
static long proc_status(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    size_t fl = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl)) v = atol(line + fl);
    if (f) fclose(f);
    return v;
}

/* ---- the prompts and their answers alone ---- */

typedef struct prompt {
    char ids[512];   /* "[5,17,...]" */
    int max_tokens;
    bool ignore_eos;
    json_t *ref_ids; /* the answer alone */
    char *ref_text;  /* [ref_len] (generated text may hold NUL bytes) */
    size_t ref_len;
    char ref_finish[16];
} prompt;
static prompt prompts[N_PROMPTS];

static void make_prompts(int n_vocab) {
    uint32_t x = 12345;
    for (int k = 0; k < N_PROMPTS; k++) {
        int len = 2 + (k * 7) % 29, o = snprintf(prompts[k].ids, sizeof prompts[k].ids, "[");
        for (int i = 0; i < len; i++) {
            x = x * 1664525u + 1013904223u;
            o += snprintf(prompts[k].ids + o, sizeof prompts[k].ids - (size_t)o, "%s%u", i ? "," : "", 3 + (x >> 8) % (uint32_t)(n_vocab - 3));
        }
        snprintf(prompts[k].ids + o, sizeof prompts[k].ids - (size_t)o, "]");
        prompts[k].max_tokens = 6 + (k * 5) % 27;
        prompts[k].ignore_eos = k % 4 != 3; /* every 4th may end early on an end-of-generation token */
    }
}

static char *body_of(const prompt *p, bool stream, int max_tokens) {
    char *b = malloc(1024);
    if (b)
        snprintf(b, 1024,
                 "{\"prompt\":%s,\"max_tokens\":%d,\"temperature\":0,\"ignore_eos\":%s,\"return_tokens\":true%s}", p->ids,
                 max_tokens, p->ignore_eos ? "true" : "false",
                 stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}" : "");
    return b;
}

/* ---- the load ---- */

typedef struct load {
    int n_requests;
    _Atomic int next;
    _Atomic int completed, cut, bad, transport;
    pthread_mutex_t mu;
    char first_bad[1024];
} load;

static void note_bad(load *L, int i, const char *fmt, const char *detail) {
    atomic_fetch_add(&L->bad, 1);
    pthread_mutex_lock(&L->mu);
    if (!L->first_bad[0]) {
        int o = snprintf(L->first_bad, sizeof L->first_bad, "request %d (prompt %d): ", i, i % N_PROMPTS);
        snprintf(L->first_bad + o, sizeof L->first_bad - (size_t)o, fmt, detail);
    }
    pthread_mutex_unlock(&L->mu);
}

/* A completed stream against the answer alone. */
static void check_stream(load *L, int i, const prompt *p, const resp *r) {
    if (r->status != 200) return note_bad(L, i, "status not 200: %.200s", r->body ? r->body : "");
    json_t *ids = json_array();
    char *text = calloc(1, r->len + 1), finish[16] = "";
    size_t tl = 0;
    int done = 0, usage_gen = -1, events = 0;
    char *save = NULL;
    for (char *line = strtok_r(r->body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "data: ", 6)) continue;
        if (!strcmp(line + 6, "[DONE]")) {
            done++;
            continue;
        }
        events++;
        json_t *j = json_loads(line + 6, JSON_ALLOW_NUL, NULL);
        if (!j || json_object_get(j, "error")) {
            json_decref(j);
            json_decref(ids);
            free(text);
            return note_bad(L, i, "bad event %.200s", line);
        }
        json_t *u = json_object_get(j, "usage");
        if (json_is_object(u)) usage_gen = (int)json_integer_value(json_object_get(u, "completion_tokens"));
        json_t *c = json_array_get(json_object_get(j, "choices"), 0);
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(c, "tokens"), k, v) json_array_append(ids, v);
        const char *t = json_string_value(json_object_get(c, "text"));
        if (t) {
            size_t n = json_string_length(json_object_get(c, "text"));
            if (text && tl + n <= r->len) memcpy(text + tl, t, n), tl += n;
        }
        const char *f = json_string_value(json_object_get(c, "finish_reason"));
        if (f) snprintf(finish, sizeof finish, "%s", f);
        json_decref(j);
    }
    char why[256] = "";
    if (done != 1) snprintf(why, sizeof why, "%d [DONE] lines", done);
    else if (!finish[0] || strcmp(finish, p->ref_finish)) snprintf(why, sizeof why, "finish '%s', alone '%s'", finish, p->ref_finish);
    else if (usage_gen != (int)json_array_size(ids)) snprintf(why, sizeof why, "usage says %d tokens, %zu came", usage_gen, json_array_size(ids));
    else if (!json_equal(ids, p->ref_ids)) snprintf(why, sizeof why, "ids differ from the prompt alone (%zu vs %zu)", json_array_size(ids), json_array_size(p->ref_ids));
    else if (!text || !p->ref_text || tl != p->ref_len || memcmp(text, p->ref_text, tl)) snprintf(why, sizeof why, "text differs from the prompt alone");
    if (why[0]) note_bad(L, i, "%s", why);
    else atomic_fetch_add(&L->completed, 1);
    json_decref(ids);
    free(text);
}

static void *client(void *arg) {
    load *L = arg;
    for (int i; (i = atomic_fetch_add(&L->next, 1)) < L->n_requests;) {
        const prompt *p = &prompts[i % N_PROMPTS];
        bool go_away = i % DISCONNECT_EVERY == DISCONNECT_EVERY - 1;
        char *b = body_of(p, true, go_away ? LONG_TOKENS : p->max_tokens);
        resp r;
        /* abandoned ones ignore the end of generation so that they are surely still running */
        if (b && go_away) {
            char *ie = strstr(b, "\"ignore_eos\":false");
            if (ie) memcpy(ie, "\"ignore_eos\":true ", 18);
        }
        int rc = b ? request("POST", "/v1/completions", b, go_away, (i / DISCONNECT_EVERY) % 2 == 1, &r) : -1;
        free(b);
        if (rc < 0) atomic_fetch_add(&L->transport, 1);
        else if (r.cut) atomic_fetch_add(&L->cut, 1);
        else if (go_away) note_bad(L, i, "%s", "meant to go away mid-stream, but the stream ended before its first token");
        else check_stream(L, i, p, &r);
        free(r.body);
    }
    return NULL;
}

static double run_load(load *L, int n_requests) {
    memset(L, 0, sizeof *L);
    pthread_mutex_init(&L->mu, NULL);
    L->n_requests = n_requests;
    pthread_t th[N_CLIENTS];
    double t0 = t_now();
    int started = 0;
    for (int k = 0; k < N_CLIENTS; k++)
        if (pthread_create(&th[k], NULL, client, L) == 0) started++;
        else break;
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
    pthread_mutex_destroy(&L->mu);
    return started == N_CLIENTS ? t_now() - t0 : -1;
}

/* Wait (up to 10 s) until the server has let go of every request. */
static bool settled(void) {
    for (int k = 0; k < 100; k++) {
        if (metric("edge0_active_sequences") == 0 && metric("edge0_queue_depth") == 0 && metric("edge0_requests_live") == 0 &&
            metric("edge0_streams_open") == 0)
            return true;
        usleep(100000);
    }
    return false;
}

static int start_server(void) {
    char log[PATH_MAX + 16], cmd[PATH_MAX * 3];
    snprintf(log, sizeof log, "%s/serve.log", dir);
    snprintf(cmd, sizeof cmd, "exec %s serve -m %s --port 0 -np %d -c %d -t %d --max-queue 128 --timeout 300 2>%s", bin, model,
             SLOTS, SLOTS * SLOT_CTX, THREADS, log);
    unlink(log);
    server = fork();
    if (server == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600; i++) {
        FILE *f = fopen(log, "r");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "listening on http://127.0.0.1:");
            if (p) port = atoi(p + strlen("listening on http://127.0.0.1:"));
        }
        if (f) fclose(f);
        if (port > 0) return 0;
        if (waitpid(server, NULL, WNOHANG) == server) return -1;
        usleep(100000);
    }
    return -1;
}

/* The server's threads once connection threads that are closing have gone (the least seen over 1 s). */
static long idle_threads(void) {
    long least = -1;
    for (int k = 0; k < 20; k++) {
        long n = proc_status(server, "Threads:");
        if (n > 0 && (least < 0 || n < least)) least = n;
        usleep(50000);
    }
    return least;
}

static bool server_alive(void) { return waitpid(server, NULL, WNOHANG) == 0; }

static void test_load_acceptance(void) {
    /* the answers alone, one request at a time */
    resp r;
    int n_vocab = 0;
    if (request("GET", "/v1/models", NULL, false, false, &r) == 0 && r.status == 200) {
        json_t *j = json_loads(r.body, 0, NULL);
        n_vocab = (int)json_integer_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "data"), 0), "meta"), "n_vocab"));
        json_decref(j);
    }
    free(r.body);
    CHECKF(n_vocab > 100, "n_vocab %d", n_vocab);
    if (n_vocab <= 100) return;
    make_prompts(n_vocab);
    int refs_ok = 0;
    for (int k = 0; k < N_PROMPTS; k++) {
        char *b = body_of(&prompts[k], false, prompts[k].max_tokens);
        if (b && request("POST", "/v1/completions", b, false, false, &r) == 0 && r.status == 200) {
            json_t *j = json_loads(r.body, JSON_ALLOW_NUL, NULL), *c = json_array_get(json_object_get(j, "choices"), 0);
            const char *t = json_string_value(json_object_get(c, "text")), *f = json_string_value(json_object_get(c, "finish_reason"));
            if (t && f && json_is_array(json_object_get(c, "tokens"))) {
                prompts[k].ref_ids = json_incref(json_object_get(c, "tokens"));
                prompts[k].ref_len = json_string_length(json_object_get(c, "text"));
                prompts[k].ref_text = malloc(prompts[k].ref_len + 1);
                if (prompts[k].ref_text) memcpy(prompts[k].ref_text, t, prompts[k].ref_len + 1);
                snprintf(prompts[k].ref_finish, sizeof prompts[k].ref_finish, "%s", f);
                refs_ok++;
            }
            json_decref(j);
        }
        free(b);
        free(r.body);
    }
    CHECKF(refs_ok == N_PROMPTS, "%d of %d prompts answered alone", refs_ok, N_PROMPTS);
    if (refs_ok != N_PROMPTS) return;

    /* warm-up: one round through every slot (contexts, malloc arenas, connection threads) */
    load L;
    double tw = run_load(&L, 2 * N_CLIENTS);
    CHECKF(tw > 0 && L.bad == 0 && L.transport == 0, "warm-up: %d bad (%s), %d transport errors", L.bad, L.first_bad, L.transport);
    CHECK(settled());
    long rss0 = proc_status(server, "VmRSS:");
    /* one thread pool for all slots: main, HTTP listener, scheduler and THREADS - 1 pool workers
     * (a pool per slot would add SLOTS * (THREADS - 1)) */
    long threads0 = idle_threads();
    CHECKF(threads0 > 0 && threads0 <= 3 + THREADS, "%ld threads in the idle server", threads0);
    double fin0 = metric("edge0_sequences_finished_total"), can0 = metric("edge0_sequences_cancelled_total");

    /* the load */
    double t = run_load(&L, N_REQUESTS);
    int n_cut_expected = N_REQUESTS / DISCONNECT_EVERY;
    printf("# load: %d requests by %d clients in %.2f s: %d complete and equal to alone, %d cut mid-stream, %d bad, %d transport errors\n",
           N_REQUESTS, N_CLIENTS, t, L.completed, L.cut, L.bad, L.transport);
    CHECKF(t > 0 && t < 240, "the load took %.1f s", t);
    CHECKF(L.bad == 0, "%d bad: first %s", L.bad, L.first_bad);
    CHECKF(L.transport == 0, "%d requests failed to connect or read", L.transport);
    CHECKF(L.completed == N_REQUESTS - n_cut_expected && L.cut == n_cut_expected, "%d complete, %d cut (want %d, %d)", L.completed,
           L.cut, N_REQUESTS - n_cut_expected, n_cut_expected);
    CHECKF(server_alive(), "the server died (see %s/serve.log)", dir);

    /* nothing lost, nothing leaked */
    CHECKF(settled(), "after the load: active %g queued %g live requests %g open streams %g", metric("edge0_active_sequences"),
           metric("edge0_queue_depth"), metric("edge0_requests_live"), metric("edge0_streams_open"));
    double fin1 = metric("edge0_sequences_finished_total"), can1 = metric("edge0_sequences_cancelled_total");
    CHECKF(fin1 - fin0 == N_REQUESTS, "sequences finished %g -> %g", fin0, fin1);
    CHECKF(can1 - can0 == n_cut_expected, "sequences cancelled %g -> %g (want +%d)", can0, can1, n_cut_expected);
    CHECKF(metric("edge0_kv_cells_used") == 0, "KV cells still held: %g", metric("edge0_kv_cells_used"));
    CHECKF(metric("edge0_http_requests_open") == 1, "HTTP requests open: %g (this one only)", metric("edge0_http_requests_open"));
    long rss1 = proc_status(server, "VmRSS:");
    long threads1 = idle_threads();
    printf("# server RSS: %ld KiB after the warm-up, %ld KiB after the load (%+ld KiB); threads %ld and %ld\n", rss0, rss1,
           rss1 - rss0, threads0, threads1);
    CHECKF(threads1 > 0 && threads1 <= threads0, "threads %ld -> %ld", threads0, threads1);
    /* a leak of even 1 KiB per request would be 512 KiB; allow allocator slack of 4 MiB + 5% */
#ifndef __SANITIZE_ADDRESS__
    CHECKF(rss0 > 0 && rss1 > 0 && rss1 <= rss0 + 4096 + rss0 / 20, "RSS %ld -> %ld KiB", rss0, rss1);
#else
    /* ASan's quarantine holds freed memory: RSS says nothing here; its LeakSanitizer checks the
     * server at exit instead (a leak makes the exit status non-zero: test_sigterm_after_load_exits_0) */
    CHECK(rss0 > 0 && rss1 > 0);
#endif
    CHECKF(request("GET", "/health", NULL, false, false, &r) == 0 && r.status == 200, "health after the load");
    free(r.body);
    for (int k = 0; k < N_PROMPTS; k++) json_decref(prompts[k].ref_ids), free(prompts[k].ref_text);
}

int main(void) {
    char build[PATH_MAX];
    signal(SIGPIPE, SIG_IGN);
    if (!realpath(t_build(), build)) {
        printf("FAIL setup: no %s\n", t_build());
        return 1;
    }
    snprintf(dir, sizeof dir, "%.900s/test-serveload", build);
    snprintf(bin, sizeof bin, "%.900s/bin/edge0-infer", build);
    snprintf(model, sizeof model, "%.900s/tiny.gguf", dir);
    mkdir(dir, 0755);
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd,
             "%s synth --arch llama --out %s --seed 11 --n-layer 2 --n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 128 --n-vocab 1024 "
             "--n-ctx 4096 >/dev/null",
             bin, model);
    if (t_sh(cmd, NULL, 0) != 0) {
        printf("FAIL setup: %s\n", cmd);
        return 1;
    }
    if (start_server() != 0) {
        printf("FAIL setup: serve did not start (%s/serve.log)\n", dir);
        return 1;
    }
    RUN(test_load_acceptance);
    t_begin("test_sigterm_after_load_exits_0");
    kill(server, SIGTERM);
    int st = -1, got = 0;
    for (int i = 0; i < 200 && !got; i++) {
        if (waitpid(server, &st, WNOHANG) == server) got = 1;
        else usleep(100000);
    }
    if (!got) kill(server, SIGKILL), waitpid(server, NULL, 0);
    CHECKF(got && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    t_end();
    unlink(model);
    return T_DONE();
}
