/* api.h — the OpenAI-compatible request and response bodies of `serve`, apart from HTTP:
 * a /v1/chat/completions or /v1/completions body (untrusted JSON) becomes prompt ids and
 * generation parameters, or an error with its HTTP status; results become the JSON objects
 * OpenAI's clients expect (whole responses, and the chunks of a stream). */
#ifndef E0_SERVE_API_H
#define E0_SERVE_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/model.h"
#include "serve/output.h"
#include "serve/sched.h"
#include "text/tokenizer.h"

/* What the model's chat template does with OpenAI's tool fields. */
typedef struct srv_tmpl_caps {
    bool tools;          /* the `tools` variable (function definitions) appears in the prompt */
    bool tool_calls;     /* an assistant message's tool_calls appear */
    bool tool_responses; /* a role "tool" message's content appears */
    bool tool_call_tags; /* the template asks for <tool_call>{...}</tool_call> replies (parsed back) */
} srv_tmpl_caps;

/* What requests share: the model, its tokenizer and chat template, the defaults. */
typedef struct srv_api {
    const e0_model *m;
    const e0_tokenizer *tok;
    const char *tmpl;          /* chat template (the model's or --chat-template-file), NULL if none */
    size_t tlen;
    const char *model_id;      /* what /v1/models lists and responses name */
    int n_ctx;                 /* one slot's context: the most tokens a sequence holds */
    e0_sampler_params sp;      /* defaults for parameters a request leaves out */
    int64_t max_tokens;        /* default max_tokens (-1: until the end or the context is full) */
    double timeout;            /* seconds per request (0 = none) */
    bool seed_fixed;           /* sp.seed is for every request without one (-s given); else each draws its own */
    const char *grammar;       /* GBNF for requests that ask for no format or grammar (--grammar), NULL: none */
    size_t grammar_len;
    /* what /v1/models tells a harness about how the engine runs (edge0-bench compare checks it) */
    const char *model_path;
    uint64_t model_size;
    const char *kv_type_k, *kv_type_v;
    int threads, n_slots;
    srv_tmpl_caps caps;        /* what the chat template renders (srv_api_probe) */
} srv_api;

/* Fill a->caps by rendering the chat template with probe tools, tool calls and tool results and
 * looking for them in the output (as llama.cpp detects a template's capabilities). */
void srv_api_probe(srv_api *a);

/* A parsed generation request. */
typedef struct srv_job {
    bool chat;                 /* chat.completions, else completions */
    bool stream, include_usage;
    bool return_tokens;        /* extension: the generated ids in each choice ("tokens") */
    bool logprobs;             /* chat: logprobs=true; completions: logprobs=N given */
    bool tools;                /* chat: tools went to the template (the reply's tool calls are parsed, streamed or not) */
    int *ids;                  /* prompt [n] (malloc'd) */
    int n;
    srv_params p;              /* stop strings owned until handed to srv_req_new */
} srv_job;
void srv_job_free(srv_job *j);

/* A request body that failed: HTTP status (400, 413, ...) and a message. */
typedef struct srv_fail {
    int status;
    const char *type;          /* OpenAI error type ("invalid_request_error", ...) */
    char msg[512];
} srv_fail;

/* Parse and check a generation request body. 0, or -1 with *f filled. */
int srv_parse_job(const srv_api *a, bool chat, const char *body, size_t len, srv_job *j, srv_fail *f);

/* The OpenAI error object {"error": {"message", "type", "code"}} (a new reference). */
json_t *srv_error_json(int status, const char *type, const char *msg);

/* Whole response (non-streamed) from the final update: chat.completion or text_completion. A chat
 * reply to a request with tools, from a template with <tool_call> tags, that is content followed
 * by valid tool-call blocks comes back as message.tool_calls with finish_reason "tool_calls". */
json_t *srv_response_json(const srv_api *a, const srv_job *j, const char *id, long created, const srv_update *u,
                          const int *ids, int n_ids, const srv_lp *lp, int n_lp);
/* One stream chunk with the new text (and logprobs) of u; finish: NULL or "stop"/"length"/
 * "tool_calls". first: chat's first chunk carries the role. */
json_t *srv_chunk_json(const srv_api *a, const srv_job *j, const char *id, long created, const srv_update *u,
                       const char *finish, bool first);
/* The formatting of one streamed reply: its SSE `data:` lines, from the updates as they come. A
 * chat request with tools, to a template with <tool_call> tags, streams its content while
 * holding back what may be a tool call (srv_toolsplit); tool calls found at the end go out as
 * OpenAI's delta.tool_calls chunks (index, id, type, function name and whole arguments, one chunk
 * each) with finish_reason "tool_calls" — the same calls and content as the whole response. */
typedef struct srv_sse {
    const srv_api *a;
    const srv_job *j;      /* must outlive this */
    char id[64];
    long created;
    bool first;            /* no chunk sent yet (the first carries the role) */
    bool ended;            /* [DONE] written */
    bool split;            /* tool calls are looked for */
    srv_toolsplit ts;
} srv_sse;
void srv_sse_init(srv_sse *s, const srv_api *a, const srv_job *j, const char *id, long created);
/* Append to *out the lines for u: a chunk of new content (logprobs, ids), and when u is the end
 * the tool-call chunks, the finish chunk, usage (include_usage) and [DONE] — or, for an error,
 * timeout or cancel, an error event and [DONE]. */
void srv_sse_feed(srv_sse *s, const srv_update *u, e0_strbuf *out);
void srv_sse_free(srv_sse *s);

/* The usage object. */
json_t *srv_usage_json(int n_prompt, int n_gen, int n_cached);
/* "stop" / "length" for a finished request (NULL for the others). */
const char *srv_finish_name(srv_finish f);

/* /tokenize and /detokenize bodies -> response objects; NULL with *f on a bad body. */
json_t *srv_tokenize(const srv_api *a, const char *body, size_t len, srv_fail *f);
json_t *srv_detokenize(const srv_api *a, const char *body, size_t len, srv_fail *f);
/* POST /apply-template (llama-server's): a chat request body -> {"prompt": the rendered text}. */
json_t *srv_apply_template(const srv_api *a, const char *body, size_t len, srv_fail *f);
/* GET /v1/models */
json_t *srv_models_json(const srv_api *a, long created);

#endif
