/* http.h — the HTTP/1.1 side of `serve` (libmicrohttpd, one thread per connection): routing,
 * the API key, body limits, JSON and Server-Sent-Event responses, client disconnects, /metrics.
 * Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,
 * POST /tokenize, POST /detokenize, POST /apply-template, GET /metrics (also without the /v1 prefix). */
#ifndef E0_SERVE_HTTP_H
#define E0_SERVE_HTTP_H

#include <stddef.h>

#include "serve/api.h"
#include "serve/sched.h"

typedef struct srv_http_params {
    const char *host;     /* numeric address or name to bind */
    int port;             /* 0: any free port (srv_http_port says which) */
    const char *api_key;  /* NULL: no authentication */
    size_t max_body;      /* bytes; larger bodies get 413 */
    unsigned conn_timeout; /* seconds a connection may make no progress (slow or half-open sockets) */
    unsigned max_conns;
} srv_http_params;

typedef struct srv_http srv_http;

srv_http *srv_http_start(const srv_http_params *p, const srv_api *api, srv_sched *sched, e0_err *e);
int srv_http_port(const srv_http *h);
/* Stop accepting connections (the listening socket closes); requests in flight go on. */
void srv_http_quiesce(srv_http *h);
/* Wait (up to timeout_s) until no HTTP request is being handled: after srv_drain, so the
 * answers of the requests that finished are sent before srv_http_stop closes their connections. */
void srv_http_wait_idle(srv_http *h, double timeout_s);
/* Close every connection and free. */
void srv_http_stop(srv_http *h);

#endif
