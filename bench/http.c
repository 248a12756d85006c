/* http.c — the smallest HTTP/1.1 client the openai adapter needs (plain http:// only, no TLS:
 * local engines listen on loopback): one request per connection (Connection: close), the
 * response's status and headers parsed, the body delivered as it arrives (Content-Length, chunked
 * or until close), and Server-Sent Events split into their `data:` payloads. Every wait is bounded
 * (connect and each read by the request's deadline); sizes are checked (header block, line
 * lengths, chunk sizes, body limit); any protocol error is one message. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define HDR_MAX (64u << 10)   /* response header block */
#define LINE_MAX_SSE (1u << 20) /* one SSE line */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int http_parse_url(const char *url, http_url *u, e0_err *e) {
    memset(u, 0, sizeof *u);
    if (strncmp(url, "http://", 7) != 0)
        return e0_fail(e, "%s: only http:// URLs are supported (no TLS; local engines listen on loopback)", url);
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (hl == 0 || hl >= sizeof u->host) return e0_fail(e, "%s: no host, or a host too long", url);
    char hostport[sizeof u->host];
    memcpy(hostport, h, hl);
    hostport[hl] = 0;
    char *colon = hostport[0] == '[' ? strstr(hostport, "]:") : strrchr(hostport, ':');
    if (colon) {
        char *p = colon + (hostport[0] == '[' ? 2 : 1);
        char *end;
        long port = strtol(p, &end, 10);
        if (*p == 0 || *end || port < 1 || port > 65535) return e0_fail(e, "%s: bad port", url);
        snprintf(u->port, sizeof u->port, "%ld", port);
        *(hostport[0] == '[' ? colon + 1 : colon) = 0;
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    /* [::1] -> ::1 */
    const char *host = hostport;
    size_t n = strlen(host);
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') host++, n -= 2;
    memcpy(u->host, host, n);
    u->host[n] = 0;
    const char *path = slash ? slash : "";
    if (strlen(path) >= sizeof u->base) return e0_fail(e, "%s: path too long", url);
    snprintf(u->base, sizeof u->base, "%s", path);
    /* no trailing slash: the adapter appends "/v1/..." */
    n = strlen(u->base);
    while (n && u->base[n - 1] == '/') u->base[--n] = 0;
    return 0;
}

static int wait_fd(int fd, short ev, double deadline) {
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int connect_to(const http_url *u, double deadline, e0_err *e) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc) return e0_fail(e, "%s:%s: %s", u->host, u->port, gai_strerror(rc)), -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        int ok = errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 1;
        int err = 0;
        socklen_t len = sizeof err;
        if (ok && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) break;
        e0_fail(e, "connect to %s:%s: %s", u->host, u->port, ok ? strerror(err) : "timed out or refused");
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0 && !e->msg[0]) e0_fail(e, "connect to %s:%s failed", u->host, u->port);
    return fd;
}

static int send_all(int fd, const char *p, size_t n, double deadline, e0_err *e) {
    while (n) {
        if (wait_fd(fd, POLLOUT, deadline) != 1) return e0_fail(e, "sending the request timed out");
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (w <= 0) return e0_fail(e, "sending the request: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the response body: de-chunking, then either accumulation or SSE lines ---- */

typedef struct body_state {
    const http_request *rq;
    http_response *rs;
    /* chunked decoding */
    int chunked;
    uint64_t chunk_left; /* bytes left in the current chunk */
    int chunk_state;     /* 0 size line, 1 data, 2 CRLF after data, 3 trailers/done */
    char szline[64];
    size_t szlen;
    uint64_t content_left; /* Content-Length bytes left (when not chunked and given) */
    int have_length;
    /* SSE line assembly */
    char *line;
    size_t llen, lcap;
    int done; /* the body is complete */
} body_state;

static int sse_line(body_state *b, e0_err *e) {
    char *s = b->line;
    size_t n = b->llen;
    if (n && s[n - 1] == '\r') s[--n] = 0;
    if (n >= 5 && !strncmp(s, "data:", 5)) {
        const char *d = s + 5;
        if (*d == ' ') d++;
        if (b->rq->on_event && b->rq->on_event(b->rq->user, d, now_s()) < 0) return e0_fail(e, "the event handler stopped the stream");
        b->rs->n_events++;
    }
    return 0;
}

/* n decoded body bytes. */
static int body_bytes(body_state *b, const char *p, size_t n, e0_err *e) {
    http_response *rs = b->rs;
    rs->body_bytes += n;
    if (rs->body_bytes > b->rq->max_body) return e0_fail(e, "response body over %zu bytes", b->rq->max_body);
    if (!b->rq->sse || rs->status != 200) {
        char *nb = realloc(rs->body, rs->body_len + n + 1);
        if (!nb) return e0_fail(e, "out of memory");
        rs->body = nb;
        memcpy(rs->body + rs->body_len, p, n);
        rs->body_len += n;
        rs->body[rs->body_len] = 0;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            if (b->line) b->line[b->llen] = 0;
            if (b->line && sse_line(b, e) < 0) return -1;
            b->llen = 0;
            continue;
        }
        if (b->llen + 2 > b->lcap) {
            if (b->lcap >= LINE_MAX_SSE) return e0_fail(e, "an event line over %u bytes", LINE_MAX_SSE);
            size_t cap = b->lcap ? b->lcap * 2 : 4096;
            char *nl = realloc(b->line, cap);
            if (!nl) return e0_fail(e, "out of memory");
            b->line = nl;
            b->lcap = cap;
        }
        b->line[b->llen++] = p[i];
    }
    return 0;
}

/* n raw bytes after the headers. */
static int body_raw(body_state *b, const char *p, size_t n, e0_err *e) {
    if (!b->chunked) {
        if (b->have_length) {
            if (n > b->content_left) n = (size_t)b->content_left; /* extra bytes after the body: ignored */
            b->content_left -= n;
            if (b->content_left == 0) b->done = 1;
        }
        return n ? body_bytes(b, p, n, e) : 0;
    }
    while (n && b->chunk_state != 3) {
        if (b->chunk_state == 0) { /* "1a3f[;ext]\r\n" */
            char c = *p++;
            n--;
            if (c == '\n') {
                b->szline[b->szlen] = 0;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(b->szline, &end, 16);
                if (end == b->szline || errno || v > ((uint64_t)1 << 40)) return e0_fail(e, "bad chunk size line '%s'", b->szline);
                b->chunk_left = v;
                b->szlen = 0;
                b->chunk_state = v ? 1 : 3;
                if (!v) b->done = 1;
            } else if (c != '\r') {
                if (b->szlen + 1 >= sizeof b->szline) return e0_fail(e, "chunk size line too long");
                b->szline[b->szlen++] = c;
            }
        } else if (b->chunk_state == 1) {
            size_t k = n < b->chunk_left ? n : (size_t)b->chunk_left;
            if (body_bytes(b, p, k, e) < 0) return -1;
            p += k;
            n -= k;
            b->chunk_left -= k;
            if (!b->chunk_left) b->chunk_state = 2;
        } else { /* the CRLF after a chunk's data */
            char c = *p++;
            n--;
            if (c == '\n') b->chunk_state = 0;
            else if (c != '\r') return e0_fail(e, "no CRLF after a chunk");
        }
    }
    return 0;
}

/* Status line and headers of hdr[0..n) (ending in \r\n\r\n). */
static int parse_headers(char *hdr, body_state *b, e0_err *e) {
    http_response *rs = b->rs;
    char *save, *line = strtok_r(hdr, "\r\n", &save);
    int major, minor, status;
    if (!line || sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 || status > 999)
        return e0_fail(e, "not an HTTP response: '%.60s'", line ? line : "");
    rs->status = status;
    for (line = strtok_r(NULL, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        if (!strcasecmp(line, "Content-Length")) {
            char *end;
            errno = 0;
            unsigned long long len = strtoull(v, &end, 10);
            if (end == v || errno) return e0_fail(e, "bad Content-Length '%s'", v);
            b->have_length = 1;
            b->content_left = len;
            if (!len) b->done = 1;
        } else if (!strcasecmp(line, "Transfer-Encoding") && strcasestr(v, "chunked")) {
            b->chunked = 1;
        } else if (!strcasecmp(line, "Content-Type")) {
            snprintf(rs->content_type, sizeof rs->content_type, "%s", v);
        }
    }
    if (b->chunked) b->have_length = 0, b->done = 0;
    return 0;
}

int http_request_run(const http_request *rq, http_response *rs, e0_err *e) {
    memset(rs, 0, sizeof *rs);
    const double t0 = now_s(), deadline = t0 + (rq->timeout > 0 ? rq->timeout : 600);
    rs->t_start = t0;
    int fd = connect_to(rq->url, deadline, e);
    if (fd < 0) return -1;
    /* the request */
    size_t blen = rq->body ? strlen(rq->body) : 0;
    char head[8192];
    int hn = snprintf(head, sizeof head,
                      "%s %s%s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: edge0-bench\r\nAccept: %s\r\nConnection: close\r\n"
                      "%s%s%s%s"
                      "Content-Length: %zu\r\n\r\n",
                      rq->method, rq->url->base, rq->path, rq->url->host, rq->url->port, rq->sse ? "text/event-stream" : "application/json",
                      blen ? "Content-Type: application/json\r\n" : "", rq->api_key ? "Authorization: Bearer " : "",
                      rq->api_key ? rq->api_key : "", rq->api_key ? "\r\n" : "", blen);
    int rc = -1;
    body_state b = {.rq = rq, .rs = rs};
    char *hdr = NULL;
    if (hn < 0 || (size_t)hn >= sizeof head) {
        e0_fail(e, "request head too long");
        goto out;
    }
    if (send_all(fd, head, (size_t)hn, deadline, e) < 0 || (blen && send_all(fd, rq->body, blen, deadline, e) < 0)) goto out;
    rs->t_sent = now_s();
    /* the response: headers first (up to HDR_MAX), then the body as it comes */
    hdr = malloc(HDR_MAX + 1);
    if (!hdr) {
        e0_fail(e, "out of memory");
        goto out;
    }
    size_t hl = 0;
    int in_body = 0;
    char buf[16384];
    for (;;) {
        if (b.done) break;
        int w = wait_fd(fd, POLLIN, deadline);
        if (w != 1) {
            if (w == 0) e0_fail(e, "no complete response within %.0f s", rq->timeout > 0 ? rq->timeout : 600);
            else e0_fail(e, "waiting for the response: %s", strerror(errno));
            rs->timed_out = w == 0;
            goto out;
        }
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r < 0) {
            e0_fail(e, "reading the response: %s", strerror(errno));
            goto out;
        }
        if (r == 0) { /* closed */
            if (!in_body) {
                e0_fail(e, "the server closed the connection before a response%s", hl ? " was complete" : "");
                goto out;
            }
            if (b.chunked || (b.have_length && b.content_left)) {
                e0_fail(e, "the server closed the connection in the middle of the body");
                goto out;
            }
            break;
        }
        if (rq->cancel_after_events && rs->n_events >= rq->cancel_after_events) {
            rs->cancelled = 1;
            rc = 0;
            goto out;
        }
        const char *p = buf;
        size_t n = (size_t)r;
        if (!in_body) {
            size_t k = n < HDR_MAX - hl ? n : HDR_MAX - hl;
            memcpy(hdr + hl, p, k);
            size_t old = hl;
            hl += k;
            hdr[hl] = 0;
            char *end = strstr(hdr + (old > 3 ? old - 3 : 0), "\r\n\r\n");
            if (!end) {
                if (hl >= HDR_MAX) {
                    e0_fail(e, "response headers over %u bytes", HDR_MAX);
                    goto out;
                }
                continue;
            }
            size_t hdr_len = (size_t)(end - hdr) + 4;
            rs->t_headers = now_s();
            /* the bytes after the headers in this read */
            size_t rest_off = hdr_len - old;
            *end = 0;
            if (parse_headers(hdr, &b, e) < 0) goto out;
            in_body = 1;
            p += rest_off;
            n -= rest_off;
        }
        if (n && body_raw(&b, p, n, e) < 0) goto out;
    }
    if (b.llen && b.line) { /* a last SSE line without its newline */
        b.line[b.llen] = 0;
        if (sse_line(&b, e) < 0) goto out;
    }
    rc = 0;
out:
    rs->t_end = now_s();
    free(hdr);
    free(b.line);
    close(fd);
    return rc;
}

void http_response_free(http_response *rs) {
    free(rs->body);
    rs->body = NULL;
}
