/* bench.h — edge0-bench, the measurement harness around `edge0-infer bench`: shared pieces of
 * its subcommands (sweep, report render/compare, ab). The report format is in docs/bench.md. */
#ifndef E0_BENCH_H
#define E0_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/strbuf.h" /* growing text for the Markdown and SVG renderers */
#include "base/util.h"

#define REPORT_FORMAT "edge0-bench-report/1"

/* Subcommands; argv[0] is the subcommand name. Return the exit status. */
int bench_sweep(int argc, char **argv);
int bench_report(int argc, char **argv);
int bench_ab(int argc, char **argv);
int bench_bound(int argc, char **argv);
int bench_stream_row(int argc, char **argv);
int bench_compare(int argc, char **argv);
int bench_load(int argc, char **argv);

/* "edge0-bench: <msg>" on stderr; returns 1 (common.c). */
int bench_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Progress line on stderr ("edge0-bench: ..."), flushed. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- child processes (proc.c) ---- */
typedef struct proc_result {
    int started;         /* fork/exec worked */
    int exited;          /* exited normally (else killed by a signal or by the timeout) */
    int exit_status;     /* when exited */
    int signal;          /* when killed by a signal */
    int timed_out;
    int interrupted;     /* the harness got SIGINT/SIGTERM and stopped the child */
    double wall_seconds;
    char *out;           /* captured stdout (NUL-terminated, malloc'd) */
    size_t out_len;
    char *err;           /* captured stderr, its last part when long */
    size_t err_len;
    char error[256];     /* why it did not start, when !started */
} proc_result;
/* Run argv (argv[0] is a path or is looked up in PATH), capturing stdout and stderr, killing its
 * process group after timeout_s seconds. Never fails as a call: the result says what happened. */
void proc_run(char *const *argv, double timeout_s, proc_result *r);
void proc_result_free(proc_result *r);
/* True once SIGINT/SIGTERM arrived (installed by proc_install_signal_handlers). */
int proc_interrupted(void);
void proc_install_signal_handlers(void);
/* Sleep s seconds unless interrupted. */
void proc_sleep(double s);
/* The last line of text that parses as a JSON object (a `bench` row); NULL when none. */
json_t *proc_last_json_row(const char *text);
/* A short description of how the process ended, e.g. "exit status 1: <last stderr line>". */
void proc_describe_failure(const proc_result *r, char *buf, size_t cap);

/* ---- one measured process (measure.c) ---- */
typedef struct bench_job {
    const char *label;  /* the configuration or engine; names the record and the raw files */
    int index, total;   /* this is process index (1-based) of total, for progress lines */
    char **argv;        /* NULL-terminated */
    double timeout;     /* seconds */
    double model_size;  /* bytes, for the free-memory condition (0 = unknown) */
    const char *raw_dir;/* keep stdout/stderr as RAW_DIR/LABEL-INDEX.std{out,err}; NULL = not kept */
} bench_job;
/* Conditions check (a refused process is recorded, not started), snapshots before and after, the
 * run: {"configuration", "index", "argv", "started_utc", "before", "conditions", "after",
 * "wall_seconds", "exit_status", "status": ok|failed|refused|interrupted, "reason", "row"}. */
json_t *bench_measure(const bench_job *j);
/* mkdir -p; 0 or 1 with the error printed. */
int bench_make_dir(const char *path);
/* "2026-12-01T11:20:00Z" now. */
json_t *bench_utc_now(void);
/* The file's sha256 as a JSON string (cached: by path, size and mtime), or "unavailable: why". */
json_t *bench_sha_json(const char *path, int cached);

/* The model's training context from `CLI info --model F` ("context length: N"); 0 if unknown. */
int64_t bench_model_context(const char *cli, const char *model);

/* ---- HTTP/1.1 client for OpenAI-compatible servers (http.c; http:// only) ---- */
typedef struct http_url {
    char host[256], port[8];
    char base[1024]; /* the URL's path without a trailing slash ("" or "/prefix") */
} http_url;
typedef struct http_request {
    const http_url *url;
    const char *method, *path; /* "POST", "/v1/completions" (appended to url->base) */
    const char *body;          /* JSON or NULL */
    const char *api_key;       /* Authorization: Bearer, or NULL */
    double timeout;            /* seconds for the whole exchange (0 = 600) */
    size_t max_body;           /* bytes; a longer body is an error */
    int sse;                   /* a 200 response is an event stream: on_event per `data:` line */
    int (*on_event)(void *user, const char *data, double t); /* t: CLOCK_MONOTONIC seconds; < 0 stops */
    void *user;
    int cancel_after_events;   /* > 0: close the connection after this many events (a client going away) */
} http_request;
typedef struct http_response {
    int status;
    char content_type[128];
    char *body;        /* non-SSE (or non-200) body, NUL-terminated; NULL when empty */
    size_t body_len, body_bytes;
    int n_events, cancelled, timed_out;
    double t_start, t_sent, t_headers, t_end; /* CLOCK_MONOTONIC seconds */
} http_response;
/* "http://host[:port][/prefix]" into u; -1 + error otherwise (https is refused: no TLS). */
int http_parse_url(const char *url, http_url *u, e0_err *e);
/* One request on its own connection; 0 when a response was received in full (any status; also
 * when cancelled on purpose), -1 + error on a connection, timeout or protocol failure. */
int http_request_run(const http_request *rq, http_response *rs, e0_err *e);
void http_response_free(http_response *rs);

/* ---- the openai adapter (openai.c): an OpenAI-compatible endpoint measured like a process ---- */
#define OPENAI_MAX_BATCH 64
typedef struct openai_engine {
    http_url url;
    char url_text[1100];
    const char *api_key;
    char model[256];     /* the first id of GET /v1/models */
    json_t *models;      /* that response */
    const json_t *meta;  /* its first model's "meta" (our serve: model path and size, KV types, ...), or NULL */
} openai_engine;
/* GET /v1/models; -1 + error when the endpoint does not answer with a model list. */
int openai_open(const char *url, const char *api_key, openai_engine *o, e0_err *e);
void openai_close(openai_engine *o);
/* One measurement shaped like a `bench` row: an untimed warm-up of `warmup` tokens, then `batch`
 * concurrent streamed completions of the prompt ids_json ("[1,2,3]"), each ntok + 1 tokens
 * (greedy, ignore_eos, cache_prompt false). NULL + error on any failed request. */
json_t *openai_row(const openai_engine *o, const char *ids_json, int warmup, int ntok, int batch, double timeout, e0_err *e);

/* ---- the load workload as a library (load.c), for `compare --mode server` ---- */
typedef struct load_point_spec {
    const char *url, *model, *api_key; /* the endpoint, the request's "model" */
    const char *const *prompt_json;    /* [n_prompts] JSON values sent as "prompt" (token id arrays) */
    const int *max_tokens;             /* [n_prompts] output tokens of each (ignore_eos: exactly these) */
    int n_prompts, n_requests;         /* request i takes prompt i % n_prompts */
    int max_inflight;                  /* client connections at once */
    double rate;                       /* Poisson arrivals per second; 0 = closed loop: max_inflight
                                        * clients sending back to back */
    int64_t seed;
    double duration, timeout, slo_ttft, slo_tpot; /* 0 = no limit, 600 s, 2 s, 0.2 s */
} load_point_spec;
/* One load point, as one rate of `edge0-bench load` (load.json's "rates" entry) plus "samples":
 * every TTFT, TPOT, ITL and end-to-end latency (seconds); requests carry ignore_eos and
 * cache_prompt false. NULL + error when it could not run at all. */
json_t *load_point_run(const load_point_spec *s, e0_err *e);

/* ---- a server's own /metrics against the client's view of a load window (server_metrics.c) ---- */
typedef struct window_view {
    int scheduled, sent, ok, failed, cancelled, not_sent; /* the client's requests (failed excludes cancelled) */
    int n_status, status[32], status_n[32];   /* HTTP statuses the sent requests got (0 = no response), counts */
    int64_t ok_prompt_tokens, ok_completion_tokens; /* `usage` summed over the completed requests */
    double busy_seconds;           /* the union of the sent requests' [sent, end] intervals */
    double prefill_window_seconds; /* the union of their [sent, first token (or end)] intervals */
    double busy_sum_seconds, prefill_wait_sum_seconds; /* the sums of those intervals' lengths */
    int scrapes;                   /* GET /metrics the server answered after the "before" text was made, up
                                    * to the "after" one (the "before" scrape itself counts: 1 or more) */
} window_view;
/* "edge0" (edge0-infer serve), "llama.cpp" (llama-server --metrics), "vllm", or NULL. */
const char *server_metrics_dialect(const char *text);
/* 1 when an edge0 /metrics text shows no open stream, live request, running or queued sequence. */
int server_metrics_idle(const char *text);
/* The length of the union of n intervals iv[2i] .. iv[2i+1] (iv is sorted in place). */
double interval_union(double *iv, size_t n);
/* The server's counter deltas over the window against the client's view (the checks are listed in
 * server_metrics.c): {"dialect", "strict", "client", "server", "checks", "agree", "disagreements"},
 * or "unavailable: why" (no /metrics, or no counters the harness knows). */
json_t *server_metrics_check(const char *before, const char *after, const window_view *w);

/* ---- a server process the harness starts and stops (server_proc.c) ---- */
typedef struct server_proc {
    int pid;
    char url[64];   /* http://127.0.0.1:PORT, from the "listening on" line of its stderr */
    char log[4200]; /* its stderr */
} server_proc;
/* Start argv (stderr to log_path) and wait up to timeout_s for "listening on http://HOST:PORT"
 * on its stderr; -1 + error (the log's last line) when it exits or does not listen in time. */
int server_start(char *const *argv, const char *log_path, double timeout_s, server_proc *sp, e0_err *e);
/* VmHWM of the server now (bytes), -1 when unknown. */
long long server_peak_rss(const server_proc *sp);
/* SIGTERM, up to grace_s seconds, then SIGKILL; reaped. */
void server_stop(server_proc *sp, double grace_s);

/* ---- the compare modes beyond single/batch (compare_modes.c) ---- */
/* A --mode server configuration's summary over its ok processes (rounds): request counts summed
 * (scheduled, ok, failed, cancelled, not_sent, failure_reasons), TTFT, TPOT, ITL and end-to-end
 * latency pooled over every request ({n, mean, min, p50, p90, p95, p99, max}, seconds), the
 * median request, output-token and goodput throughput; drops each row's raw "samples". */
json_t *compare_server_summary(json_t *processes);
/* A --mode sustained configuration's summary: per process its mean tok/s and the slope of the
 * per-interval tok/s over time (least squares, tok/s per minute), their medians, and the first
 * ok process's per-interval series {t_s, tokens_per_second}. */
json_t *compare_sustained_summary(const json_t *processes);
/* SVG of a --mode server report: output tok/s and TTFT p99 against the request rate, a line per
 * engine (compare writes it as DIR/server.svg). */
char *compare_server_svg(const json_t *report);
/* Markdown of a compare report's server, sustained and depth results ("" when none). */
void report_md_modes(e0_strbuf *b, const json_t *report);

/* ---- metrics and reports (report_common.c) ---- */
typedef struct metric_def {
    const char *key;   /* dotted path in a row, also the metric's name in report.json */
    const char *label; /* column heading */
    const char *unit;
    int lower_is_better;
} metric_def;
extern const metric_def METRICS[];
extern const size_t N_METRICS;
/* Number at a dotted path ("memory.peak_rss_bytes") of a row; 0 when present and numeric. */
int json_path_number(const json_t *row, const char *path, double *out);
/* {"n", "median", "min", "max", "unit"} over the numeric values of `key` in the ok processes of
 * one configuration; "unavailable: <reason>" when none. */
json_t *metric_summary_json(const json_t *processes, const metric_def *m);
/* Load and check a report file (format, required members). NULL + error. */
json_t *report_load(const char *path, e0_err *e);
/* Markdown of a report (report_md.c) and its SVG chart (report_svg.c), malloc'd text. */
char *report_markdown(const json_t *report);
char *report_svg(const json_t *report);
/* Write text to a file; -1 + error. */
int write_text_file(const char *path, const char *text, e0_err *e);

/* ---- measurement conditions (conditions.c) ---- */
/* Check a system snapshot (e0_system_json) before a process: returns
 * {"warnings": [...], "refused": "<reason>" | null}. model_size 0 = unknown. */
json_t *conditions_check(const json_t *snapshot, double model_size_bytes);

#endif
