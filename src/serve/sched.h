/* sched.h — the scheduler of `serve`: N slots over ONE loaded model, a bounded queue of
 * requests and one worker thread that steps every active sequence.
 *
 *   slot     one sequence: its own e0_ctx (KV cache, scratch; the thread pool is slot 0's, shared
 *            by all, as one thread evaluates every step) over the shared model, the
 *            tokens its KV cache holds (for prefix reuse), the request it runs, a sampler and a
 *            streaming detokenizer. A free slot keeps its cached tokens for the next request.
 *   queue    requests waiting for a slot, FIFO, at most max_queue (srv_submit refuses beyond).
 *   worker   loop: admit queued requests into free slots (the slot whose cached tokens share the
 *            longest prefix with the prompt), build one step — one token for every decoding
 *            sequence plus prompt pieces of prefilling sequences, taken round-robin: the first
 *            always, more while the step stays within n_batch tokens, and while any sequence
 *            decodes at most prefill_budget prompt tokens (so the decoding ones keep a steady pace) —
 *            evaluate it (step.h: one forward pass when it fits), then sample, detokenize, apply
 *            stop strings and publish the new output to the request.
 *
 * A request is shared by the HTTP thread that made it and the worker (reference counted); its
 * output fields are written by the worker and read by srv_wait under the scheduler's lock.
 * Greedy output does not depend on what else runs: every sequence has its own context, and its
 * prompt pieces give the bits of the whole prompt alone (prompt tokens are routed exactly however
 * they are cut; only generated tokens are predicted: engine.h). */
#ifndef E0_SERVE_SCHED_H
#define E0_SERVE_SCHED_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/load.h"
#include "engine/sample.h"
#include "text/grammar.h"
#include "text/tokenizer.h"

#define SRV_MAX_STOP 16
#define SRV_MAX_TOP_LOGPROBS 20

typedef enum srv_finish {
    SRV_FINISH_NONE = 0, /* still running */
    SRV_FINISH_STOP,     /* end-of-generation token or a stop string */
    SRV_FINISH_LENGTH,   /* max_tokens, or the slot's context is full */
    SRV_FINISH_CANCELLED, /* the client went away, or the server is shutting down */
    SRV_FINISH_TIMEOUT,  /* the per-request time limit */
    SRV_FINISH_ERROR,    /* the engine failed (message in err) */
} srv_finish;

/* One request's generation parameters. */
typedef struct srv_params {
    e0_sampler_params sp;
    int64_t max_tokens;   /* < 0: until end of generation or the slot's context is full */
    bool ignore_eos;
    bool no_cache;        /* "cache_prompt": false (llama-server's name): reuse no cached prefix */
    char *stop[SRV_MAX_STOP]; /* owned (srv_req_free frees them) */
    int n_stop;
    e0_grammar *grammar;  /* the output must match it (owned: srv_req_free frees it); NULL: free text */
    int top_logprobs;     /* < 0: no logprobs; else logprobs with this many alternatives (<= 20) */
    double deadline;      /* e0_now() after which the request is stopped; 0 = none */
} srv_params;

/* Log-probabilities (natural log, of the model's softmax before sampling) of one generated token. */
typedef struct srv_lp {
    int id;
    float lp;
    int n_top;
    int top_id[SRV_MAX_TOP_LOGPROBS];
    float top_lp[SRV_MAX_TOP_LOGPROBS];
} srv_lp;

typedef struct srv_req srv_req;
typedef struct srv_sched srv_sched;

/* A request for prompt ids[0..n) (copied). NULL when out of memory. Takes ownership of p->stop
 * and p->grammar. */
srv_req *srv_req_new(const int *ids, int n, const srv_params *p);

typedef struct srv_sched_params {
    int n_slots;
    int max_queue;        /* requests waiting for a slot (beyond those free slots take); more are refused (429) */
    int prefill_budget;   /* prompt tokens a step takes while sequences decode (1 .. n_batch; 0 or more: n_batch) */
    e0_ctx_params cp;     /* each slot's context (n_ctx = its share of the total) */
} srv_sched_params;

/* Slot 0 uses the session's context; the others get contexts of their own over the same model,
 * configured like it (expert cache, routing). Starts the worker. */
srv_sched *srv_sched_new(e0_session *ses, const e0_tokenizer *tok, const srv_sched_params *p, e0_err *e);
/* Stops the worker (cancelling what runs) and frees the extra contexts (not the session). */
void srv_sched_free(srv_sched *s);
int srv_sched_n_ctx(const srv_sched *s); /* one slot's context */

enum { SRV_OK = 0, SRV_QUEUE_FULL = 1, SRV_DRAINING = 2 };
/* Queue r (the scheduler takes its own reference). SRV_OK, SRV_QUEUE_FULL or SRV_DRAINING. */
int srv_submit(srv_sched *s, srv_req *r);
/* Ask the worker to stop r (client gone / timeout); its slot is freed at the next step. */
void srv_cancel(srv_sched *s, srv_req *r, srv_finish why);
/* Drop the caller's reference. */
void srv_release(srv_sched *s, srv_req *r);

/* What a request produced since the caller's last look (copies, malloc'd; srv_update_free). */
typedef struct srv_update {
    char *text;           /* new visible text (stop strings never appear), valid until freed */
    size_t text_len;
    int *ids;             /* new generated ids */
    int n_ids;
    srv_lp *lp;           /* new logprob entries (when asked for) */
    int n_lp;
    bool done;
    srv_finish finish;
    char err[256];        /* SRV_FINISH_ERROR / CANCELLED: why */
    int n_prompt, n_cached, n_gen; /* usage so far */
} srv_update;
typedef struct srv_cursor {
    size_t text;
    int ids, lp;
} srv_cursor;
/* Wait up to timeout_ms for output beyond *cur (or the end), copy it into *u and advance *cur.
 * Returns 1 when *u holds something new or the end, 0 on timeout, -1 when out of memory. */
int srv_wait(srv_sched *s, srv_req *r, srv_cursor *cur, int timeout_ms, srv_update *u);
void srv_update_free(srv_update *u);

/* Counters and gauges for /metrics. */
typedef struct srv_stats {
    uint64_t prompt_tokens, completion_tokens, cached_tokens, prefilled_tokens;
    uint64_t prompt_pieces;  /* prompt pieces evaluated (a prompt takes several: n_batch, --prefill-budget) */
    uint64_t requests_done, requests_cancelled, requests_timeout, requests_error;
    int queue_depth, active, n_slots;
    int64_t kv_cells_used;   /* positions held by running sequences */
    int64_t kv_cells_cached; /* positions kept by free slots for prefix reuse */
    int64_t kv_cells_total;
    double prefill_seconds, decode_seconds;
    uint64_t steps;
    bool streamed;           /* experts stream: the expert counters below mean something */
    uint64_t expert_hits, expert_misses, expert_bytes_read;
    int64_t requests_live;   /* srv_req objects not yet freed (0 when idle: none leaked) */
} srv_stats;
void srv_get_stats(srv_sched *s, srv_stats *st);

/* Shutdown: refuse new requests (SRV_DRAINING), cancel the queued ones, let running ones finish
 * for up to grace_s seconds, then cancel them; returns when no sequence runs. */
void srv_drain(srv_sched *s, double grace_s);

#endif
