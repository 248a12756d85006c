/* http.c — libmicrohttpd glue of `serve` (see http.h). One thread per connection: a handler may
 * block while its request runs. A non-streamed generation waits in the handler (100 ms at a time,
 * checking that the client is still there); a streamed one answers at once with a response whose
 * reader callback blocks for the next tokens and writes them as SSE `data:` lines. A client that
 * goes away (its socket hung up, or a write failed) cancels its request, which frees its slot. */
#include "serve/http.h"

#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "serve/output.h"

#define WAIT_MS 100

struct srv_http {
    struct MHD_Daemon *d;
    const srv_api *api;
    srv_sched *sched;
    srv_http_params p;
    int port;
    _Atomic uint64_t status_count[600]; /* responses by HTTP status */
    _Atomic uint64_t next_id;
    long started;                         /* unix time the server started */
    _Atomic int64_t open_requests;        /* HTTP requests being handled (conn objects alive) */
    _Atomic int64_t open_streams;         /* streamed responses not yet freed */
};

enum route { R_NONE, R_CHAT, R_COMPLETIONS, R_MODELS, R_HEALTH, R_TOKENIZE, R_DETOKENIZE, R_METRICS, R_APPLY_TEMPLATE };
static const struct {
    const char *path;
    enum route r;
    const char *method;
} routes[] = {
    {"/v1/chat/completions", R_CHAT, "POST"}, {"/chat/completions", R_CHAT, "POST"},
    {"/v1/completions", R_COMPLETIONS, "POST"}, {"/completions", R_COMPLETIONS, "POST"},
    {"/v1/models", R_MODELS, "GET"},        {"/models", R_MODELS, "GET"},
    {"/health", R_HEALTH, "GET"},           {"/v1/health", R_HEALTH, "GET"},
    {"/tokenize", R_TOKENIZE, "POST"},      {"/detokenize", R_DETOKENIZE, "POST"},
    {"/metrics", R_METRICS, "GET"},         {"/apply-template", R_APPLY_TEMPLATE, "POST"},
};

/* Per connection request state (MHD's con_cls). */
typedef struct conn {
    int route;
    const char *method;   /* the route's method */
    e0_strbuf body;
    bool too_big;
} conn;

static int count(srv_http *h, int status) {
    if (status >= 0 && status < 600) atomic_fetch_add(&h->status_count[status], 1);
    return status;
}

static enum MHD_Result send_text(srv_http *h, struct MHD_Connection *c, int status, const char *ctype, char *text, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) return free(text), MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (status == 405) {
        MHD_add_response_header(r, "Allow", "GET, POST");
    }
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)count(h, status), r);
    MHD_destroy_response(r);
    return rc;
}

/* Queue j (stolen) as the response. */
static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *c, int status, json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        s = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"code\":500}}");
        status = 500;
        if (!s) return MHD_NO;
    }
    return send_text(h, c, status, "application/json", s, strlen(s));
}

static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, int status, const char *type, const char *msg) {
    return send_json(h, c, status, srv_error_json(status, type, msg));
}

/* The client hung up (or half-closed its side: it can no longer read what it asked for). */
static bool peer_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int conn_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static bool authorized(const srv_http *h, struct MHD_Connection *c) {
    if (!h->p.api_key) return true;
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!v || strncasecmp(v, "Bearer ", 7)) return false;
    v += 7;
    while (*v == ' ') v++;
    size_t a = strlen(v), b = strlen(h->p.api_key);
    unsigned diff = a != b;
    for (size_t i = 0; i < a && i < b; i++) diff |= (unsigned char)v[i] ^ (unsigned char)h->p.api_key[i];
    return diff == 0;
}

/* ---- streamed responses ---- */

typedef struct stream {
    srv_http *h;
    srv_job job;
    srv_req *r;
    srv_cursor cur;
    int fd;
    srv_sse fmt;          /* the chunks (api.h) */
    e0_strbuf out;        /* formatted bytes not yet handed to MHD */
    size_t off;
} stream;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *st = cls;
    while (st->off >= st->out.len) {
        st->out.len = st->off = 0;
        if (st->fmt.ended) return MHD_CONTENT_READER_END_OF_STREAM;
        if (st->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        srv_update u;
        int rc = srv_wait(st->h->sched, st->r, &st->cur, WAIT_MS, &u);
        if (rc < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (rc == 0) {
            if (peer_gone(st->fd)) {
                srv_cancel(st->h->sched, st->r, SRV_FINISH_CANCELLED);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
            continue;
        }
        srv_sse_feed(&st->fmt, &u, &st->out);
        srv_update_free(&u);
    }
    size_t n = st->out.len - st->off < max ? st->out.len - st->off : max;
    memcpy(buf, st->out.p + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream *st = cls;
    atomic_fetch_sub(&st->h->open_streams, 1);
    srv_cancel(st->h->sched, st->r, SRV_FINISH_CANCELLED); /* nothing when it has finished */
    srv_release(st->h->sched, st->r);
    srv_sse_free(&st->fmt);
    srv_job_free(&st->job);
    free(st->out.p);
    free(st);
}

/* ---- generation ---- */

static enum MHD_Result generate(srv_http *h, struct MHD_Connection *c, conn *cs, bool chat) {
    const srv_api *a = h->api;
    srv_job j;
    srv_fail f;
    if (srv_parse_job(a, chat, cs->body.p ? cs->body.p : "", cs->body.len, &j, &f) < 0)
        return send_error(h, c, f.status, f.type, f.msg);
    if (a->timeout > 0) j.p.deadline = e0_now() + a->timeout;
    srv_req *r = srv_req_new(j.ids, j.n, &j.p);
    if (!r) {
        srv_job_free(&j);
        return send_error(h, c, 500, "server_error", "out of memory");
    }
    j.p.n_stop = 0; /* the request owns the stop strings and the grammar now */
    j.p.grammar = NULL;
    int rc = srv_submit(h->sched, r);
    if (rc != SRV_OK) {
        srv_release(h->sched, r);
        srv_job_free(&j);
        return rc == SRV_QUEUE_FULL ? send_error(h, c, 429, "rate_limit_error", "too many requests are waiting: try again later")
                                    : send_error(h, c, 503, "unavailable_error", "the server is shutting down");
    }
    char id[64];
    snprintf(id, sizeof id, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)atomic_fetch_add(&h->next_id, 1));
    long created = (long)time(NULL);
    int fd = conn_fd(c);
    if (j.stream) {
        stream *st = calloc(1, sizeof *st);
        if (!st) {
            srv_cancel(h->sched, r, SRV_FINISH_CANCELLED);
            srv_release(h->sched, r);
            srv_job_free(&j);
            return send_error(h, c, 500, "server_error", "out of memory");
        }
        st->h = h;
        atomic_fetch_add(&h->open_streams, 1);
        st->job = j;
        st->r = r;
        st->fd = fd;
        srv_sse_init(&st->fmt, a, &st->job, id, created);
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
        if (!resp) {
            stream_free(st);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        enum MHD_Result q = MHD_queue_response(c, (unsigned)count(h, 200), resp);
        MHD_destroy_response(resp);
        return q;
    }
    /* whole response: collect everything, watching the client */
    srv_cursor cur = {0};
    e0_strbuf text = {0};
    int *ids = NULL, n_ids = 0;
    srv_lp *lp = NULL;
    int n_lp = 0;
    srv_update last = {0};
    bool oom = false, gone = false;
    double next_check = 0;
    for (;;) {
        srv_update u;
        int w = srv_wait(h->sched, r, &cur, WAIT_MS, &u);
        if (w < 0) {
            oom = true;
            break;
        }
        double now = e0_now();
        if (now >= next_check) { /* output may flow without pause: look at the socket every WAIT_MS */
            next_check = now + WAIT_MS / 1000.0;
            if (peer_gone(fd)) {
                if (w > 0) srv_update_free(&u);
                gone = true;
                break;
            }
        }
        if (w == 0) continue;
        e0_sb_add(&text, u.text, u.text_len);
        int *ni = realloc(ids, (size_t)(n_ids + u.n_ids + 1) * sizeof *ids);
        srv_lp *nl = realloc(lp, (size_t)(n_lp + u.n_lp + 1) * sizeof *lp);
        if (ni) ids = ni;
        if (nl) lp = nl;
        if (!ni || !nl || text.oom) {
            oom = true;
            srv_update_free(&u);
            break;
        }
        memcpy(ids + n_ids, u.ids, (size_t)u.n_ids * sizeof *ids);
        memcpy(lp + n_lp, u.lp, (size_t)u.n_lp * sizeof *lp);
        n_ids += u.n_ids;
        n_lp += u.n_lp;
        bool done = u.done;
        srv_update_free(&u);
        if (done) {
            last = u;
            break;
        }
    }
    enum MHD_Result q;
    if (gone || oom) srv_cancel(h->sched, r, SRV_FINISH_CANCELLED);
    if (gone) q = MHD_NO; /* nobody to answer: close the connection */
    else if (oom) q = send_error(h, c, 500, "server_error", "out of memory");
    else if (!srv_finish_name(last.finish)) {
        int status = last.finish == SRV_FINISH_ERROR ? 500 : 503;
        q = send_error(h, c, status, status == 500 ? "server_error" : "unavailable_error",
                       last.finish == SRV_FINISH_TIMEOUT ? "the request's time limit passed"
                       : last.finish == SRV_FINISH_CANCELLED ? "cancelled: the server is shutting down"
                                                              : last.err);
    } else {
        last.text = text.p ? text.p : "";
        last.text_len = text.len;
        q = send_json(h, c, 200, srv_response_json(a, &j, id, created, &last, ids, n_ids, lp, n_lp));
    }
    free(text.p);
    free(ids);
    free(lp);
    srv_release(h->sched, r);
    srv_job_free(&j);
    return q;
}

/* ---- /metrics ---- */

static enum MHD_Result metrics(srv_http *h, struct MHD_Connection *c) {
    srv_stats st;
    srv_get_stats(h->sched, &st);
    e0_strbuf b = {0};
    e0_sb_printf(&b, "# HELP edge0_requests_total HTTP responses sent, by status code.\n# TYPE edge0_requests_total counter\n");
    for (int s = 100; s < 600; s++) {
        uint64_t n = atomic_load(&h->status_count[s]);
        if (n) e0_sb_printf(&b, "edge0_requests_total{code=\"%d\"} %llu\n", s, (unsigned long long)n);
    }
#define M(name, type, help, fmt, v) e0_sb_printf(&b, "# HELP edge0_" name " " help "\n# TYPE edge0_" name " " type "\nedge0_" name " " fmt "\n", v)
    M("prompt_tokens_total", "counter", "Prompt tokens of the requests run (cached ones included).", "%llu", (unsigned long long)st.prompt_tokens);
    M("prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's KV cache.", "%llu", (unsigned long long)st.cached_tokens);
    M("prompt_tokens_prefilled_total", "counter", "Prompt tokens evaluated.", "%llu", (unsigned long long)st.prefilled_tokens);
    M("prompt_pieces_total", "counter", "Prompt pieces evaluated (a prompt is cut at n_batch tokens, and at --prefill-budget while others decode).", "%llu", (unsigned long long)st.prompt_pieces);
    M("completion_tokens_total", "counter", "Tokens generated.", "%llu", (unsigned long long)st.completion_tokens);
    M("sequences_finished_total", "counter", "Generation requests finished (any reason).", "%llu", (unsigned long long)st.requests_done);
    M("sequences_cancelled_total", "counter", "Requests cancelled (client gone, shutdown).", "%llu", (unsigned long long)st.requests_cancelled);
    M("sequences_timeout_total", "counter", "Requests stopped by the time limit.", "%llu", (unsigned long long)st.requests_timeout);
    M("sequences_error_total", "counter", "Requests the engine failed.", "%llu", (unsigned long long)st.requests_error);
    M("queue_depth", "gauge", "Requests waiting for a slot.", "%d", st.queue_depth);
    M("active_sequences", "gauge", "Slots running a request.", "%d", st.active);
    M("slots", "gauge", "Sequence slots (-np).", "%d", st.n_slots);
    M("kv_cells_used", "gauge", "KV cache positions held by running sequences.", "%lld", (long long)st.kv_cells_used);
    M("kv_cells_cached", "gauge", "KV cache positions kept by free slots for prefix reuse.", "%lld", (long long)st.kv_cells_cached);
    M("kv_cells_total", "gauge", "KV cache positions of all slots.", "%lld", (long long)st.kv_cells_total);
    M("expert_cache_hits_total", "counter", "Streamed experts found in the cache (0 when experts are resident).", "%llu", (unsigned long long)st.expert_hits);
    M("expert_cache_misses_total", "counter", "Streamed experts read from disk.", "%llu", (unsigned long long)st.expert_misses);
    M("expert_bytes_read_total", "counter", "Bytes of experts read from disk.", "%llu", (unsigned long long)st.expert_bytes_read);
    M("prefill_seconds_total", "counter", "Time evaluating prompt chunks (of a pass that also decodes: the prompt tokens' share).", "%.6f", st.prefill_seconds);
    M("decode_seconds_total", "counter", "Time evaluating generated tokens (of a mixed pass: their share).", "%.6f", st.decode_seconds);
    M("steps_total", "counter", "Scheduler steps.", "%llu", (unsigned long long)st.steps);
    M("requests_live", "gauge", "Generation requests in memory (queued, running, or being answered).", "%lld", (long long)st.requests_live);
    M("http_requests_open", "gauge", "HTTP requests being handled (this one included).", "%lld", (long long)atomic_load(&h->open_requests));
    M("streams_open", "gauge", "Streamed responses not yet closed.", "%lld", (long long)atomic_load(&h->open_streams));
#undef M
    char *s = e0_sb_take(&b);
    if (!s) return send_error(h, c, 500, "server_error", "out of memory");
    return send_text(h, c, 200, "text/plain; version=0.0.4", s, strlen(s));
}

/* ---- the handler ---- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                              const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn *cs = *con_cls;
    if (!cs) {
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        atomic_fetch_add(&h->open_requests, 1);
        for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
            if (!strcmp(url, routes[i].path)) cs->route = routes[i].r, cs->method = routes[i].method;
        if (!cs->route) return send_error(h, c, 404, "not_found_error", "no such endpoint");
        if (strcmp(method, cs->method)) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s needs %s", url, cs->method);
            return send_error(h, c, 405, "invalid_request_error", msg);
        }
        if (cs->route != R_HEALTH && !authorized(h, c))
            return send_error(h, c, 401, "authentication_error", "a valid API key is required (Authorization: Bearer KEY)");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > h->p.max_body) {
            char msg[128];
            snprintf(msg, sizeof msg, "the body is larger than %zu bytes", h->p.max_body);
            return send_error(h, c, 413, "invalid_request_error", msg);
        }
        if (strcmp(method, "POST")) goto dispatch; /* GET: no body */
        return MHD_YES;
    }
    if (*upload_size) {
        if (!cs->too_big && cs->body.len + *upload_size <= h->p.max_body) e0_sb_add(&cs->body, upload, *upload_size);
        else cs->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
dispatch:
    if (cs->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than %zu bytes", h->p.max_body);
        return send_error(h, c, 413, "invalid_request_error", msg);
    }
    if (cs->body.oom) return send_error(h, c, 500, "server_error", "out of memory");
    srv_fail f;
    json_t *res;
    switch (cs->route) {
    case R_CHAT: return generate(h, c, cs, true);
    case R_COMPLETIONS: return generate(h, c, cs, false);
    case R_MODELS: return send_json(h, c, 200, srv_models_json(h->api, h->started));
    case R_METRICS: return metrics(h, c);
    case R_HEALTH: {
        srv_stats st;
        srv_get_stats(h->sched, &st);
        return send_json(h, c, 200, json_pack("{s:s,s:i,s:i}", "status", "ok", "slots_idle", st.n_slots - st.active,
                                              "slots_processing", st.active));
    }
    case R_TOKENIZE:
    case R_DETOKENIZE:
    case R_APPLY_TEMPLATE:
        res = cs->route == R_TOKENIZE     ? srv_tokenize(h->api, cs->body.p ? cs->body.p : "", cs->body.len, &f)
              : cs->route == R_DETOKENIZE ? srv_detokenize(h->api, cs->body.p ? cs->body.p : "", cs->body.len, &f)
                                          : srv_apply_template(h->api, cs->body.p ? cs->body.p : "", cs->body.len, &f);
        return res ? send_json(h, c, 200, res) : send_error(h, c, f.status, f.type, f.msg);
    }
    return send_error(h, c, 404, "not_found_error", "no such endpoint");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)c, (void)toe;
    srv_http *h = cls;
    conn *cs = *con_cls;
    if (!cs) return;
    atomic_fetch_sub(&h->open_requests, 1);
    free(cs->body.p);
    free(cs);
    *con_cls = NULL;
}

srv_http *srv_http_start(const srv_http_params *p, const srv_api *api, srv_sched *sched, e0_err *e) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", p->port);
    int gai = getaddrinfo(p->host, port, &hints, &ai);
    if (gai != 0 || !ai) return e0_fail(e, "--host %s: %s", p->host, gai_strerror(gai)), NULL;
    srv_http *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        return e0_fail(e, "out of memory"), NULL;
    }
    h->api = api;
    h->sched = sched;
    h->p = *p;
    h->started = (long)time(NULL);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, (uint16_t)p->port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_CONNECTION_LIMIT, p->max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, p->conn_timeout, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        free(h);
        return e0_fail(e, "cannot listen on %s port %d (in use, or not an address of this machine?)", p->host, p->port), NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : p->port;
    return h;
}

int srv_http_port(const srv_http *h) { return h->port; }

void srv_http_quiesce(srv_http *h) {
    MHD_socket s = MHD_quiesce_daemon(h->d);
    if (s != MHD_INVALID_SOCKET) close(s);
}

void srv_http_wait_idle(srv_http *h, double timeout_s) {
    double end = e0_now() + timeout_s;
    while ((atomic_load(&h->open_requests) > 0 || atomic_load(&h->open_streams) > 0) && e0_now() < end) usleep(10000);
}

void srv_http_stop(srv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->d);
    free(h);
}
