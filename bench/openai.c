/* openai.c — the `openai` adapter of `edge0-bench compare`: an OpenAI-compatible endpoint (our
 * `serve`, llama-server, vLLM, LM Studio, ...) measured so that its row reads like an
 * `edge0-infer bench` row. Identity from GET /v1/models (the model id, owned_by, and where the
 * server says them — our serve's "meta" — the model file's path and size, the KV cache types,
 * threads, slot context). One measurement: an untimed warm-up request, then B concurrent
 * streamed /v1/completions of the prompt token ids (greedy, ignore_eos, cache_prompt false so a
 * prefix cache does not turn prefill into a no-op, stream_options.include_usage, logprobs 0), timed
 * per chunk on the client: first token (TTFT) = prefill, the chunks after it = decode. logprobs 0
 * (the standard field; no alternatives) makes a server send one chunk per token even when the
 * token's text is empty or held back (part of a UTF-8 character, a possible stop string): without
 * it a server may send none, and random-weight models often sample such tokens. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "measure/stats.h"

typedef struct stream {
    const openai_engine *o;
    const char *body;
    double timeout;
    /* results */
    double t_send, t_first, t_last, t_end;
    int n_chunks, done;
    int64_t prompt_tokens, completion_tokens;
    double *gaps;
    int n_gaps, cap_gaps;
    char err[256];
} stream;

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int openai_open(const char *url, const char *api_key, openai_engine *o, e0_err *e) {
    memset(o, 0, sizeof *o);
    o->api_key = api_key;
    if (http_parse_url(url, &o->url, e)) return -1;
    snprintf(o->url_text, sizeof o->url_text, "%s", url);
    http_request rq = {.url = &o->url, .method = "GET", .path = "/v1/models", .api_key = api_key, .timeout = 30, .max_body = 1 << 20};
    http_response rs;
    if (http_request_run(&rq, &rs, e) < 0) return -1;
    json_t *j = rs.status == 200 && rs.body ? json_loads(rs.body, 0, NULL) : NULL;
    if (!j) {
        int st = rs.status;
        http_response_free(&rs);
        return e0_fail(e, "%s: GET /v1/models gave HTTP %d, not a model list", url, st);
    }
    http_response_free(&rs);
    json_t *m0 = json_array_get(json_object_get(j, "data"), 0);
    const char *id = json_string_value(json_object_get(m0, "id"));
    if (!id) {
        json_decref(j);
        return e0_fail(e, "%s: GET /v1/models lists no model", url);
    }
    snprintf(o->model, sizeof o->model, "%s", id);
    o->models = j;
    o->meta = json_object_get(m0, "meta");
    return 0;
}

void openai_close(openai_engine *o) {
    json_decref(o->models);
    o->models = NULL;
}

static int on_event(void *user, const char *data, double t) {
    stream *s = user;
    if (!strcmp(data, "[DONE]")) {
        s->done = 1;
        return 0;
    }
    json_t *j = json_loads(data, 0, NULL);
    if (!j) return 0;
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    /* a token arrived: a choice with text, or with empty text before the end (a token whose
     * bytes the server holds back, e.g. part of a UTF-8 character, still took its decode step) */
    const char *text = json_string_value(json_object_get(ch, "text"));
    const json_t *fin = json_object_get(ch, "finish_reason");
    if (text && (*text || !fin || json_is_null(fin))) {
        if (s->n_chunks == 0) s->t_first = t;
        else {
            if (s->n_gaps == s->cap_gaps) {
                int cap = s->cap_gaps ? s->cap_gaps * 2 : 256;
                double *g = realloc(s->gaps, (size_t)cap * sizeof *g);
                if (!g) {
                    json_decref(j);
                    return -1;
                }
                s->gaps = g;
                s->cap_gaps = cap;
            }
            s->gaps[s->n_gaps++] = t - s->t_last;
        }
        s->t_last = t;
        s->n_chunks++;
    }
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        s->prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
        s->completion_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
    }
    json_decref(j);
    return 0;
}

static void *run_stream(void *arg) {
    stream *s = arg;
    http_request rq = {.url = &s->o->url, .method = "POST", .path = "/v1/completions", .body = s->body, .api_key = s->o->api_key,
                       .timeout = s->timeout, .max_body = (size_t)64 << 20, .sse = 1, .on_event = on_event, .user = s};
    http_response rs;
    e0_err e = {{0}};
    s->t_send = mono();
    if (http_request_run(&rq, &rs, &e) < 0) snprintf(s->err, sizeof s->err, "%.255s", e.msg);
    else if (rs.status != 200) snprintf(s->err, sizeof s->err, "HTTP %d: %.200s", rs.status, rs.body ? rs.body : "");
    else if (!s->done) snprintf(s->err, sizeof s->err, "the stream ended without data: [DONE]");
    else if (s->n_chunks == 0 || s->completion_tokens <= 0) snprintf(s->err, sizeof s->err, "no text or no usage in the stream");
    s->t_end = rs.t_end;
    http_response_free(&rs);
    return NULL;
}

static char *request_body(const openai_engine *o, const char *ids_json, int max_tokens) {
    char *b = NULL;
    size_t need = strlen(ids_json) + strlen(o->model) + 256;
    if (!(b = malloc(need))) return NULL;
    snprintf(b, need,
             "{\"model\":\"%s\",\"prompt\":%s,\"max_tokens\":%d,\"temperature\":0,\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true},\"ignore_eos\":true,\"cache_prompt\":false,"
             "\"logprobs\":0}",
             o->model, ids_json, max_tokens);
    return b;
}

/* B streams at once; 0 or -1 with the first failure in e. */
static int run_batch(const openai_engine *o, const char *body, int batch, double timeout, stream *s, e0_err *e) {
    pthread_t th[OPENAI_MAX_BATCH];
    int started = 0;
    for (int b = 0; b < batch; b++) {
        memset(&s[b], 0, sizeof s[b]);
        s[b].o = o, s[b].body = body, s[b].timeout = timeout;
    }
    for (int b = 0; b < batch; b++) {
        if (pthread_create(&th[b], NULL, run_stream, &s[b]) != 0) break;
        started++;
    }
    for (int b = 0; b < started; b++) pthread_join(th[b], NULL);
    if (started < batch) return e0_fail(e, "could not start %d client threads", batch);
    for (int b = 0; b < batch; b++)
        if (s[b].err[0]) return e0_fail(e, "%s", s[b].err);
    return 0;
}

json_t *openai_row(const openai_engine *o, const char *ids_json, int warmup, int ntok, int batch, double timeout, e0_err *e) {
    if (batch < 1 || batch > OPENAI_MAX_BATCH) return e0_fail(e, "batch size %d outside 1..%d", batch, OPENAI_MAX_BATCH), NULL;
    stream *s = calloc((size_t)batch, sizeof *s);
    char *wbody = request_body(o, ids_json, warmup > 0 ? warmup : 1), *body = request_body(o, ids_json, ntok + 1);
    json_t *row = NULL;
    if (!s || !wbody || !body) {
        e0_fail(e, "out of memory");
        goto out;
    }
    if (run_batch(o, wbody, 1, timeout, s, e) < 0) goto out; /* warm-up */
    free(s[0].gaps);
    if (run_batch(o, body, batch, timeout, s, e) < 0) goto out;
    /* prefill = the median TTFT. decode: with several streams, the tokens that arrived while every
     * stream was decoding (from the last first token to the first last token) over that window,
     * since a server prefills new prompts between decode steps; with one stream (or no such
     * window) every stream's tokens after its first over the first first token .. last token. */
    double *ttft = calloc((size_t)batch, sizeof *ttft), t0 = INFINITY, t1 = 0;
    size_t n_gaps = 0;
    int64_t after_first = 0;
    for (int b = 0; b < batch; b++) {
        if (ttft) ttft[b] = s[b].t_first - s[b].t_send;
        t0 = fmin(t0, s[b].t_first);
        t1 = fmax(t1, s[b].t_last);
        after_first += s[b].completion_tokens - 1;
        n_gaps += (size_t)s[b].n_gaps;
        if (s[b].prompt_tokens != s[0].prompt_tokens) {
            free(ttft);
            e0_fail(e, "the %d streams reported different prompt token counts", batch);
            goto out;
        }
    }
    /* decode is timed by the chunks: a server that sends far fewer chunks than tokens (several
     * tokens per chunk when the client reads slower than a tiny model decodes, or none for empty
     * text) makes that timing coarse: said on stderr, never silently */
    if ((int64_t)n_gaps * 2 < after_first)
        fprintf(stderr, "edge0-bench: openai: warning: the server sent %zu chunks after the first for %lld tokens: decode timing is coarse\n",
                n_gaps, (long long)after_first);
    double *gaps = malloc((n_gaps ? n_gaps : 1) * sizeof *gaps);
    size_t k = 0;
    for (int b = 0; gaps && b < batch; b++)
        for (int i = 0; i < s[b].n_gaps; i++) gaps[k++] = s[b].gaps[i];
    double ttft_med = ttft ? e0_median(ttft, (size_t)batch) : NAN;
    double lo = -INFINITY, hi = INFINITY, dec = t1 > t0 ? (double)after_first / (t1 - t0) : 0.0;
    for (int b = 0; b < batch; b++) lo = fmax(lo, s[b].t_first), hi = fmin(hi, s[b].t_last);
    int overlap = batch > 1 && hi > lo;
    if (overlap) {
        int64_t in_window = 0;
        for (int b = 0; b < batch; b++) { /* chunk i arrived at t_first + gaps[0..i) */
            double t = s[b].t_first;
            for (int i = 0; i < s[b].n_gaps; i++) {
                t += s[b].gaps[i];
                in_window += t > lo && t <= hi;
            }
        }
        dec = (double)in_window / (hi - lo);
    }
    const json_t *meta = o->meta;
    json_t *cfg = json_pack("{s:O?, s:O?, s:O?, s:O?, s:s, s:i, s:i, s:i, s:b}", "context", json_object_get(meta, "n_ctx_slot"),
                            "kv_type_k", json_object_get(meta, "kv_type_k"), "kv_type_v", json_object_get(meta, "kv_type_v"),
                            "threads", json_object_get(meta, "threads"), "sampling", "greedy", "batch", batch, "warmup", warmup,
                            "ntok", ntok, "cache_prompt", 0);
    row = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:b, s:f, s:I, s:I, s:o, s:o, s:{s:s, s:s, s:s, s:O?}, s:{s:O?, s:O?, s:s}}",
                    "mode", batch > 1 ? "batch" : "single", "batch_size", batch, "prefill_seconds", ttft_med,
                    "prefill_tokens_per_second", (double)s[0].prompt_tokens / ttft_med, "decode_tokens_per_second", dec,
                    "decode_tokens_per_second_per_sequence", dec / batch, "all_streams_overlapped", overlap,
                    "overlap_seconds", overlap ? hi - lo : 0.0, "n_prompt",
                    (json_int_t)s[0].prompt_tokens, "n_decode", (json_int_t)(s[0].completion_tokens - 1), "itl",
                    e0_distribution_json(gaps, k), "config", cfg, "engine", "name", "openai", "url", o->url_text, "model_id",
                    o->model, "owned_by", json_object_get(json_array_get(json_object_get(o->models, "data"), 0), "owned_by"),
                    "model", "path", json_object_get(meta, "model_path"), "size", json_object_get(meta, "model_size"),
                    "identity_source", "GET /v1/models");
    free(gaps);
    free(ttft);
out:
    for (int b = 0; s && b < batch; b++) free(s[b].gaps);
    free(s);
    free(wbody);
    free(body);
    return row;
}
