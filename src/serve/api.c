/* api.c — request parsing and response building of the OpenAI-compatible API (see api.h).
 * Every field of a body is checked for its type and range before use; unknown fields are ignored
 * (clients send many), fields we cannot honour (n > 1, non-text content, a forced tool call, echo,
 * suffix, best_of, schema keywords the grammar would not enforce) are refused. response_format
 * json_object / json_schema and llama-server's `json_schema` and `grammar` (GBNF) constrain the
 * output (text/grammar.h, text/json_schema.h). Tools: `tools` and the
 * messages' tool fields go to the chat template as llama-server gives them with --jinja (a tool
 * call's JSON-string arguments as an object); a template that does not render them
 * (srv_api_probe) gets the request refused with 400 rather than silently dropping them. A reply
 * of <tool_call> blocks, for templates that ask for them, comes back as message.tool_calls
 * (whole responses) or delta.tool_calls chunks (streams, srv_sse). */
#include "serve/api.h"

#include <math.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "serve/output.h"
#include "text/jinja/jinja.h"
#include "text/json_schema.h"
#include "text/prompt.h"

#define MAX_STOP_BYTES 1024

static int fail(srv_fail *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(srv_fail *f, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    f->status = status;
    f->type = status == 401 ? "authentication_error" : status >= 500 ? "server_error" : "invalid_request_error";
    return -1;
}

void srv_job_free(srv_job *j) {
    free(j->ids);
    for (int i = 0; i < j->p.n_stop; i++) free(j->p.stop[i]);
    e0_grammar_free(j->p.grammar);
    memset(j, 0, sizeof *j);
}

/* The body as a JSON object. */
static json_t *parse_body(const char *body, size_t len, srv_fail *f) {
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return fail(f, 400, "the body is not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column), NULL;
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(f, 400, "the body must be a JSON object"), NULL;
    }
    return root;
}

/* Optional number field in [lo, hi] (null or absent: *out unchanged). */
static int get_num(json_t *o, const char *key, double lo, double hi, double *out, srv_fail *f) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return fail(f, 400, "'%s' must be a number", key);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi) return fail(f, 400, "'%s' must be between %g and %g (got %g)", key, lo, hi, d);
    *out = d;
    return 0;
}
static int get_int(json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, srv_fail *f) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return fail(f, 400, "'%s' must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) return fail(f, 400, "'%s' must be between %lld and %lld (got %lld)", key, (long long)lo, (long long)hi, (long long)x);
    *out = x;
    return 0;
}
static int get_bool(json_t *o, const char *key, bool *out, srv_fail *f) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return fail(f, 400, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int add_stop(srv_job *j, const char *s, size_t n, srv_fail *f) {
    if (n == 0) return 0; /* an empty stop string would stop at once: ignored */
    if (n > MAX_STOP_BYTES) return fail(f, 400, "a stop string is longer than %d bytes", MAX_STOP_BYTES);
    if (memchr(s, 0, n)) return fail(f, 400, "a stop string contains a NUL character");
    if (j->p.n_stop == SRV_MAX_STOP) return fail(f, 400, "at most %d stop strings", SRV_MAX_STOP);
    char *c = strndup(s, n);
    if (!c) return fail(f, 500, "out of memory");
    j->p.stop[j->p.n_stop++] = c;
    return 0;
}

/* One logit_bias entry: a number from -100 to 100, or false (never choose the token). */
static int add_bias(e0_sampler_params *sp, int64_t id, json_t *v, srv_fail *f) {
    float b;
    if (json_is_false(v)) b = -INFINITY;
    else if (json_is_number(v) && json_number_value(v) >= -100 && json_number_value(v) <= 100) b = (float)json_number_value(v);
    else return fail(f, 400, "'logit_bias' values must be numbers from -100 to 100 (or false: never choose the token)");
    sp->bias[sp->n_bias++] = (e0_logit_bias){(int32_t)id, b};
    return 0;
}

/* logit_bias: OpenAI's {"token id": bias}, or llama-server's [[token id, bias], ...]; it
 * replaces the server's default (-l/--logit-bias). */
static int parse_logit_bias(const srv_api *a, json_t *o, e0_sampler_params *sp, srv_fail *f) {
    json_t *lb = json_object_get(o, "logit_bias");
    const int64_t n_vocab = a->m->hp.n_vocab;
    if (!lb || json_is_null(lb)) return 0;
    sp->n_bias = 0;
    if (!json_is_object(lb) && !json_is_array(lb))
        return fail(f, 400, "'logit_bias' must be an object {\"token id\": bias} or a list of [token id, bias] pairs");
    if ((json_is_object(lb) ? json_object_size(lb) : json_array_size(lb)) > E0_MAX_LOGIT_BIAS)
        return fail(f, 400, "'logit_bias' names more than %d tokens", E0_MAX_LOGIT_BIAS);
    if (json_is_object(lb)) {
        const char *key;
        json_t *v;
        json_object_foreach(lb, key, v) {
            int64_t id = -1;
            e0_err e;
            if (e0_parse_i64(key, 0, n_vocab - 1, &id, "logit_bias", &e) < 0)
                return fail(f, 400, "'logit_bias' keys must be token ids from 0 to %lld; got '%.40s'", (long long)n_vocab - 1, key);
            if (add_bias(sp, id, v, f) < 0) return -1;
        }
        return 0;
    }
    size_t i;
    json_t *pair;
    json_array_foreach(lb, i, pair) {
        json_t *id = json_array_get(pair, 0);
        if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= n_vocab)
            return fail(f, 400, "'logit_bias'[%zu] must be [token id from 0 to %lld, bias]", i, (long long)n_vocab - 1);
        if (add_bias(sp, json_integer_value(id), json_array_get(pair, 1), f) < 0) return -1;
    }
    return 0;
}

/* The output's form: response_format {"type": "json_object"} (any JSON object, or llama-server's
 * "schema" in it), {"type": "json_schema", "json_schema": {"schema": ...}} (OpenAI's structured
 * output), llama-server's `json_schema` and `grammar` (GBNF) constrain it; a request with none of
 * them gets the server's --grammar. The grammar is made and checked here (400). */
static int parse_format(const srv_api *a, json_t *o, srv_params *p, srv_fail *f) {
    const char *text = NULL, *what = NULL;
    size_t len = 0;
    bool chosen = false; /* the request says which form (text is NULL when it asks for free text) */
    const json_t *schema = NULL;
    int n_forms = 0;
    json_t *rf = json_object_get(o, "response_format");
    if (rf && !json_is_null(rf)) {
        const char *type = json_string_value(json_object_get(rf, "type"));
        if (!json_is_object(rf) || !type)
            return fail(f, 400, "'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}");
        chosen = true;
        json_t *sc = json_object_get(rf, "schema");
        if (!strcmp(type, "json_schema")) {
            json_t *js = json_object_get(rf, "json_schema");
            if (!json_is_object(js) || !(sc = json_object_get(js, "schema")))
                return fail(f, 400, "'response_format' json_schema needs {\"json_schema\": {\"name\": ..., \"schema\": {...}}}");
            schema = sc, what = "response_format", n_forms++;
        } else if (!strcmp(type, "json_object")) {
            if (sc && !json_is_null(sc)) schema = sc;
            else text = e0_grammar_json, len = strlen(e0_grammar_json);
            what = "response_format", n_forms++;
        } else if (strcmp(type, "text"))
            return fail(f, 400, "'response_format' type '%.40s' is not one of text, json_object, json_schema", type);
    }
    json_t *js = json_object_get(o, "json_schema"); /* llama-server's */
    if (js && !json_is_null(js)) schema = js, what = "json_schema", chosen = true, n_forms++;
    json_t *g = json_object_get(o, "grammar");
    if (g && !json_is_null(g)) {
        if (!json_is_string(g)) return fail(f, 400, "'grammar' must be a string (GBNF)");
        chosen = true;
        if (json_string_length(g)) text = json_string_value(g), len = json_string_length(g), what = "grammar", n_forms++;
    }
    if (n_forms > 1) return fail(f, 400, "give one of 'grammar', 'json_schema' and a JSON 'response_format'");
    e0_err e = {0};
    char *made = NULL;
    if (schema && !(text = made = e0_json_schema_grammar(schema, &len, &e))) return fail(f, 400, "'%s': %s", what, e.msg);
    if (!chosen && a->grammar) text = a->grammar, len = a->grammar_len;
    if (!text) return 0;
    p->grammar = e0_grammar_parse(text, len, &e);
    free(made);
    if (!p->grammar) return fail(f, 400, "%s", e.msg); /* "grammar: line L, ..." */
    e0_gmatch *m = e0_gmatch_new(p->grammar, &e); /* its start must fit the matcher's limits */
    e0_gmatch_free(m);
    if (!m) return fail(f, 400, "%s", e.msg);
    return 0;
}

/* Fields this server cannot honour: a 400 rather than silently ignoring them. */
static int refuse_unsupported(json_t *o, bool chat, srv_fail *f) {
    if (chat) return 0;
    bool echo = false;
    int64_t best_of = 1;
    if (get_bool(o, "echo", &echo, f) < 0 || get_int(o, "best_of", 1, 1 << 20, &best_of, f) < 0) return -1;
    json_t *suffix = json_object_get(o, "suffix");
    if (echo) return fail(f, 400, "'echo' is not supported");
    if (best_of != 1) return fail(f, 400, "'best_of' other than 1 is not supported");
    if (suffix && !json_is_null(suffix) && (!json_is_string(suffix) || json_string_length(suffix)))
        return fail(f, 400, "'suffix' is not supported");
    return 0;
}

/* Sampling, length, stop, logprobs and the extensions common to both endpoints. */
static int parse_common(const srv_api *a, json_t *o, srv_job *j, srv_fail *f) {
    srv_params *p = &j->p;
    p->sp = a->sp;
    p->max_tokens = a->max_tokens;
    p->top_logprobs = -1;
    double d;
    int64_t n;
    d = p->sp.temp;
    if (get_num(o, "temperature", 0, 100, &d, f) < 0) return -1;
    p->sp.temp = (float)d;
    d = p->sp.top_p;
    if (get_num(o, "top_p", 0, 1, &d, f) < 0) return -1;
    p->sp.top_p = (float)d;
    d = p->sp.min_p;
    if (get_num(o, "min_p", 0, 1, &d, f) < 0) return -1;
    p->sp.min_p = (float)d;
    d = p->sp.repeat_penalty;
    if (get_num(o, "repeat_penalty", 1e-6, 100, &d, f) < 0) return -1;
    p->sp.repeat_penalty = (float)d;
    d = p->sp.presence_penalty;
    if (get_num(o, "presence_penalty", -100, 100, &d, f) < 0) return -1;
    p->sp.presence_penalty = (float)d;
    d = p->sp.frequency_penalty;
    if (get_num(o, "frequency_penalty", -100, 100, &d, f) < 0) return -1;
    p->sp.frequency_penalty = (float)d;
    n = p->sp.top_k;
    if (get_int(o, "top_k", 0, 1 << 24, &n, f) < 0) return -1;
    p->sp.top_k = (int)n;
    n = p->sp.repeat_last_n;
    if (get_int(o, "repeat_last_n", -1, 1 << 24, &n, f) < 0) return -1;
    p->sp.repeat_last_n = n < 0 ? a->n_ctx : (int)n;
    json_t *seed = json_object_get(o, "seed");
    if (seed && !json_is_null(seed)) {
        if (!json_is_integer(seed)) return fail(f, 400, "'seed' must be an integer");
        p->sp.seed = (uint64_t)json_integer_value(seed);
    } else if (!a->seed_fixed) {
        static _Atomic uint64_t n_drawn;
        p->sp.seed = (uint64_t)(e0_now() * 1e9) ^ (atomic_fetch_add(&n_drawn, 1) * 0x9E3779B97F4A7C15ull);
    }
    int64_t mt = -2;
    if (get_int(o, "max_tokens", 1, 1 << 24, &mt, f) < 0) return -1;
    if (get_int(o, "max_completion_tokens", 1, 1 << 24, &mt, f) < 0) return -1;
    if (get_int(o, "n_predict", -1, 1 << 24, &mt, f) < 0) return -1; /* llama-server's name */
    if (mt != -2) p->max_tokens = mt;
    int64_t nc = 1;
    if (get_int(o, "n", 1, 1 << 20, &nc, f) < 0) return -1;
    if (nc != 1) return fail(f, 400, "'n' other than 1 is not supported");
    if (parse_logit_bias(a, o, &p->sp, f) < 0 || refuse_unsupported(o, j->chat, f) < 0 || parse_format(a, o, p, f) < 0)
        return -1;
    bool cache_prompt = true;
    if (get_bool(o, "stream", &j->stream, f) < 0 || get_bool(o, "ignore_eos", &p->ignore_eos, f) < 0 ||
        get_bool(o, "return_tokens", &j->return_tokens, f) < 0 || get_bool(o, "cache_prompt", &cache_prompt, f) < 0)
        return -1;
    p->no_cache = !cache_prompt;
    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return fail(f, 400, "'stream_options' must be an object");
        if (get_bool(so, "include_usage", &j->include_usage, f) < 0) return -1;
    }
    json_t *stop = json_object_get(o, "stop");
    if (json_is_string(stop)) {
        if (add_stop(j, json_string_value(stop), json_string_length(stop), f) < 0) return -1;
    } else if (json_is_array(stop)) {
        size_t i;
        json_t *s;
        json_array_foreach(stop, i, s) {
            if (!json_is_string(s)) return fail(f, 400, "'stop' must be a string or a list of strings");
            if (add_stop(j, json_string_value(s), json_string_length(s), f) < 0) return -1;
        }
    } else if (stop && !json_is_null(stop)) return fail(f, 400, "'stop' must be a string or a list of strings");
    if (j->chat) {
        bool lp = false;
        if (get_bool(o, "logprobs", &lp, f) < 0) return -1;
        int64_t top = 0;
        if (get_int(o, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &top, f) < 0) return -1;
        if (json_object_get(o, "top_logprobs") && !json_is_null(json_object_get(o, "top_logprobs")) && !lp)
            return fail(f, 400, "'top_logprobs' needs 'logprobs': true");
        if (lp) j->logprobs = true, p->top_logprobs = (int)top;
    } else {
        int64_t lp = -1;
        if (get_int(o, "logprobs", 0, SRV_MAX_TOP_LOGPROBS, &lp, f) < 0) return -1;
        if (lp >= 0) j->logprobs = true, p->top_logprobs = (int)lp;
    }
    return 0;
}

/* A message's content as text: a string, null, or a list of {"type": "text", "text": ...} parts. */
static int content_text(json_t *c, e0_strbuf *out, srv_fail *f) {
    if (!c || json_is_null(c)) return 0;
    if (json_is_string(c)) return e0_sb_add(out, json_string_value(c), json_string_length(c)) < 0 ? fail(f, 500, "out of memory") : 0;
    if (!json_is_array(c)) return fail(f, 400, "a message's 'content' must be a string or a list of text parts");
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        json_t *t = json_object_get(part, "text");
        if (!type || strcmp(type, "text") || !json_is_string(t))
            return fail(f, 400, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
        if (e0_sb_add(out, json_string_value(t), json_string_length(t)) < 0) return fail(f, 500, "out of memory");
    }
    return 0;
}

#define MAX_TOOL_NAME 256

/* An assistant message's tool_calls for the template: [{"id", "type": "function", "function":
 * {"name", "arguments"}}], arguments given as a JSON string made an object when they parse as
 * one (templates write them with tojson or iterate them with |items). NULL with *f on a bad list. */
static json_t *clean_tool_calls(json_t *calls, size_t mi, srv_fail *f) {
    if (!json_is_array(calls)) return fail(f, 400, "messages[%zu].tool_calls must be a list", mi), NULL;
    json_t *out = json_array();
    if (!out) return fail(f, 500, "out of memory"), NULL;
    size_t i;
    json_t *tc;
    json_array_foreach(calls, i, tc) {
        json_t *fn = json_object_get(tc, "function"), *id = json_object_get(tc, "id"), *type = json_object_get(tc, "type");
        json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (!json_is_object(tc) || !json_is_object(fn) || !json_is_string(name) || json_string_length(name) == 0 ||
            json_string_length(name) > MAX_TOOL_NAME || (id && !json_is_string(id)) ||
            (type && (!json_is_string(type) || strcmp(json_string_value(type), "function"))) ||
            (args && !json_is_string(args) && !json_is_object(args))) {
            json_decref(out);
            return fail(f, 400,
                        "messages[%zu].tool_calls[%zu] must be {\"id\": ..., \"type\": \"function\", \"function\": "
                        "{\"name\": NAME, \"arguments\": JSON text or object}}",
                        mi, i),
                   NULL;
        }
        json_t *a = NULL;
        if (json_is_string(args)) {
            a = json_loadb(json_string_value(args), json_string_length(args), JSON_REJECT_DUPLICATES, NULL);
            if (a && !json_is_object(a)) json_decref(a), a = NULL;
        }
        if (!a) a = args ? json_incref(args) : json_object();
        json_t *c = json_pack("{s:s,s:{s:O,s:o}}", "type", "function", "function", "name", name, "arguments", a);
        if (c && id) json_object_set(c, "id", id);
        if (!c || json_array_append_new(out, c) < 0) {
            json_decref(out);
            return fail(f, 500, "out of memory"), NULL;
        }
    }
    return out;
}

/* The messages as the template sees them: role, content as text, and the tool fields. */
static json_t *clean_messages(json_t *msgs, srv_fail *f) {
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return fail(f, 400, "'messages' must be a non-empty list"), NULL;
    json_t *out = json_array();
    if (!out) return fail(f, 500, "out of memory"), NULL;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!json_is_object(m) || !role) {
            fail(f, 400, "messages[%zu] must be an object with a string 'role'", i);
            goto bad;
        }
        if (!strcmp(role, "developer")) role = "system"; /* OpenAI's newer name for it */
        if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "tool")) {
            fail(f, 400, "messages[%zu]: unknown role '%.40s' (system, user, assistant or tool)", i, role);
            goto bad;
        }
        e0_strbuf text = {0};
        if (content_text(json_object_get(m, "content"), &text, f) < 0) {
            free(text.p);
            goto bad;
        }
        json_t *c = json_pack("{s:s,s:s%}", "role", role, "content", text.p ? text.p : "", text.len);
        free(text.p);
        if (!c) {
            fail(f, 500, "out of memory");
            goto bad;
        }
        static const char *const keep[] = {"name", "tool_call_id", "reasoning_content"};
        for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
            json_t *v = json_object_get(m, keep[k]);
            if (v && !json_is_string(v) && !json_is_null(v)) {
                json_decref(c);
                fail(f, 400, "messages[%zu].%s must be a string", i, keep[k]);
                goto bad;
            }
            if (v) json_object_set(c, keep[k], v);
        }
        json_t *calls = json_object_get(m, "tool_calls");
        if (calls && !json_is_null(calls)) {
            json_t *cc = strcmp(role, "assistant") ? NULL : clean_tool_calls(calls, i, f);
            if (!cc) {
                if (strcmp(role, "assistant")) fail(f, 400, "messages[%zu]: only assistant messages have 'tool_calls'", i);
                json_decref(c);
                goto bad;
            }
            if (json_array_size(cc)) json_object_set_new(c, "tool_calls", cc);
            else json_decref(cc);
        }
        json_array_append_new(out, c);
    }
    return out;
bad:
    json_decref(out);
    return NULL;
}

static const char *special_text(const e0_tokenizer *tok, int32_t id) {
    size_t len;
    const char *t = id >= 0 ? e0_tok_text(tok, id, &len) : NULL;
    return t ? t : "";
}

/* The template's variables: messages, tools (when given), add_generation_prompt, bos/eos. */
static int render(const srv_api *a, json_t *msgs, json_t *tools, char **text, size_t *tl, e0_err *e) {
    if (!tools)
        return jinja_render_chat(a->tmpl, a->tlen, msgs, true, special_text(a->tok, e0_tok_bos(a->tok)),
                                 special_text(a->tok, e0_tok_eos(a->tok)), text, tl, e);
    json_t *vars = json_pack("{s:O,s:O,s:b,s:s,s:s}", "messages", msgs, "tools", tools, "add_generation_prompt", 1, "bos_token",
                             special_text(a->tok, e0_tok_bos(a->tok)), "eos_token", special_text(a->tok, e0_tok_eos(a->tok)));
    if (!vars) return e0_fail(e, "out of memory (or bos/eos not valid UTF-8)");
    int rc = jinja_render(a->tmpl, a->tlen, vars, NULL, text, tl, e);
    json_decref(vars);
    return rc;
}

/* Renders msgs_json (and tools_json) and finds `needle` in the output. */
static bool renders(const srv_api *a, const char *msgs_json, const char *tools_json, const char *needle) {
    json_t *msgs = json_loads(msgs_json, 0, NULL), *tools = tools_json ? json_loads(tools_json, 0, NULL) : NULL;
    char *text = NULL;
    size_t tl = 0;
    e0_err e;
    bool ok = msgs && (!tools_json || tools) && render(a, msgs, tools, &text, &tl, &e) == 0 && text && strstr(text, needle);
    free(text);
    json_decref(msgs);
    json_decref(tools);
    return ok;
}

void srv_api_probe(srv_api *a) {
    memset(&a->caps, 0, sizeof a->caps);
    if (!a->tmpl) return;
    static const char tools[] = "[{\"type\":\"function\",\"function\":{\"name\":\"e0_probe_tool\",\"description\":\"a probe\","
                                "\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}}}}}]";
    static const char call[] = "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_e0\",\"type\":\"function\","
                               "\"function\":{\"name\":\"e0_probe_call\",\"arguments\":{\"x\":\"y\"}}}]}";
    char msgs[1024];
    a->caps.tools = renders(a, "[{\"role\":\"user\",\"content\":\"hi\"}]", tools, "e0_probe_tool");
    const char *t = a->caps.tools ? tools : NULL;
    snprintf(msgs, sizeof msgs, "[{\"role\":\"user\",\"content\":\"hi\"},%s]", call);
    a->caps.tool_calls = renders(a, msgs, t, "e0_probe_call");
    snprintf(msgs, sizeof msgs,
             "[{\"role\":\"user\",\"content\":\"hi\"},%s,{\"role\":\"tool\",\"tool_call_id\":\"call_e0\",\"content\":\"e0_probe_result\"}]",
             call);
    a->caps.tool_responses = renders(a, msgs, t, "e0_probe_result");
    a->caps.tool_call_tags = a->caps.tools && a->tlen >= 11 && memmem(a->tmpl, a->tlen, "<tool_call>", 11) != NULL;
}

/* `tools` and `tool_choice` of a chat request: *tools is what the template gets (NULL: none, or
 * tool_choice "none"). 0, or -1 with *f. */
static int parse_tools(const srv_api *a, json_t *o, json_t **tools, srv_fail *f) {
    *tools = NULL;
    json_t *t = json_object_get(o, "tools"), *tc = json_object_get(o, "tool_choice");
    bool b;
    if (get_bool(o, "parallel_tool_calls", &b, f) < 0) return -1;
    if (t && !json_is_null(t) && !json_is_array(t))
        return fail(f, 400, "'tools' must be a list of {\"type\": \"function\", \"function\": {\"name\": ...}}");
    size_t i, n = json_is_array(t) ? json_array_size(t) : 0;
    json_t *x;
    if (n)
        json_array_foreach(t, i, x) {
            json_t *fn = json_object_get(x, "function"), *name = json_object_get(fn, "name"), *type = json_object_get(x, "type");
            json_t *params = json_object_get(fn, "parameters"), *desc = json_object_get(fn, "description");
            if (!json_is_object(x) || !json_is_string(type) || strcmp(json_string_value(type), "function") || !json_is_object(fn))
                return fail(f, 400, "tools[%zu] must be {\"type\": \"function\", \"function\": {\"name\": ...}}", i);
            if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > MAX_TOOL_NAME)
                return fail(f, 400, "tools[%zu].function.name must be a string of 1 to %d bytes", i, MAX_TOOL_NAME);
            if (params && !json_is_null(params) && !json_is_object(params))
                return fail(f, 400, "tools[%zu].function.parameters must be a JSON schema object", i);
            if (desc && !json_is_null(desc) && !json_is_string(desc))
                return fail(f, 400, "tools[%zu].function.description must be a string", i);
        }
    bool none = false;
    if (tc && !json_is_null(tc)) {
        const char *c = json_string_value(tc);
        if (c && !strcmp(c, "none")) none = true;
        else if (c && !strcmp(c, "auto")) {
        } else if ((c && !strcmp(c, "required")) || json_is_object(tc))
            return fail(f, 400, "'tool_choice' \"required\" or a named function is not supported (the server cannot force a "
                                "tool call): use \"auto\" or \"none\"");
        else return fail(f, 400, "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", ...}");
    }
    if (!n || none) return 0;
    if (!a->caps.tools)
        return fail(f, 400, "the model's chat template does not render tools: this model cannot be given 'tools' "
                            "(a --chat-template-file that renders them would)");
    *tools = json_incref(t);
    return 0;
}

/* A chat request's prompt text: messages (and tools) through the template. */
static int chat_text(const srv_api *a, json_t *o, char **text, size_t *tl, bool *with_tools, srv_fail *f) {
    *text = NULL;
    *tl = 0;
    json_t *tools = NULL, *msgs = clean_messages(json_object_get(o, "messages"), f);
    if (!msgs) return -1;
    int rc = 0;
    e0_err e;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        bool is_tool = !strcmp(json_string_value(json_object_get(m, "role")), "tool");
        if (rc == 0 && is_tool && !a->caps.tool_responses)
            rc = fail(f, 400, "messages[%zu]: the model's chat template does not render 'tool' messages", i);
        if (rc == 0 && json_object_get(m, "tool_calls") && !a->caps.tool_calls)
            rc = fail(f, 400, "messages[%zu]: the model's chat template does not render an assistant's 'tool_calls'", i);
    }
    if (rc == 0 && !a->tmpl) rc = fail(f, 400, "the model has no chat template (start serve with --chat-template-file)");
    if (rc == 0) rc = parse_tools(a, o, &tools, f);
    if (rc == 0 && render(a, msgs, tools, text, tl, &e) < 0) rc = fail(f, 400, "chat template: %s", e.msg);
    if (with_tools) *with_tools = tools != NULL;
    json_decref(tools);
    json_decref(msgs);
    return rc;
}

json_t *srv_apply_template(const srv_api *a, const char *body, size_t len, srv_fail *f) {
    json_t *o = parse_body(body, len, f);
    if (!o) return NULL;
    char *text = NULL;
    size_t tl = 0;
    json_t *res = NULL;
    if (chat_text(a, o, &text, &tl, NULL, f) == 0) {
        json_t *p = srv_json_text(text, tl);
        res = p ? json_pack("{s:o}", "prompt", p) : NULL;
        if (!res) fail(f, 500, "out of memory");
    }
    free(text);
    json_decref(o);
    return res;
}

/* Completions' prompt: a string, a list of token ids, or a list holding one of those. */
static int completion_prompt(const srv_api *a, json_t *pr, e0_tokens *t, srv_fail *f) {
    if (json_is_array(pr) && json_array_size(pr) == 1 && !json_is_integer(json_array_get(pr, 0))) pr = json_array_get(pr, 0);
    if (json_is_string(pr)) {
        e0_err e;
        if (e0_tokenize(a->tok, json_string_value(pr), json_string_length(pr), true, true, t, &e) < 0)
            return fail(f, 400, "cannot tokenize the prompt: %s", e.msg);
        return 0;
    }
    if (!json_is_array(pr) || json_array_size(pr) == 0)
        return fail(f, 400, "'prompt' must be a string or a non-empty list of token ids (one prompt per request)");
    size_t n = json_array_size(pr), i;
    if (n > (size_t)a->n_ctx) return fail(f, 400, "the prompt has %zu tokens; a slot's context holds %d", n, a->n_ctx);
    t->ids = malloc(n * sizeof *t->ids);
    if (!t->ids) return fail(f, 500, "out of memory");
    t->cap = n;
    json_t *v;
    json_array_foreach(pr, i, v) {
        if (!json_is_integer(v)) return fail(f, 400, "'prompt' lists must hold token ids only (one prompt per request)");
        json_int_t id = json_integer_value(v);
        if (id < 0 || id >= (json_int_t)e0_tok_n_vocab(a->tok))
            return fail(f, 400, "prompt token %lld is not in the vocabulary (0..%u)", (long long)id, e0_tok_n_vocab(a->tok) - 1);
        t->ids[t->n++] = (int32_t)id;
    }
    return 0;
}

int srv_parse_job(const srv_api *a, bool chat, const char *body, size_t len, srv_job *j, srv_fail *f) {
    memset(j, 0, sizeof *j);
    j->chat = chat;
    json_t *o = parse_body(body, len, f);
    if (!o) return -1;
    int rc = parse_common(a, o, j, f);
    e0_tokens t = {0};
    if (rc == 0 && chat) {
        char *text = NULL;
        size_t tl = 0;
        e0_err e;
        if (chat_text(a, o, &text, &tl, &j->tools, f) < 0) rc = -1;
        else if (e0_tokenize_prompt(a->tok, text, tl, true, &t, &e) < 0) rc = fail(f, 400, "cannot tokenize the prompt: %s", e.msg);
        free(text);
    } else if (rc == 0) {
        json_t *pr = json_object_get(o, "prompt");
        if (!pr) rc = fail(f, 400, "'prompt' is required");
        else rc = completion_prompt(a, pr, &t, f);
    }
    json_decref(o);
    if (rc == 0 && t.n == 0) rc = fail(f, 400, "the prompt is empty");
    if (rc == 0 && (int64_t)t.n >= a->n_ctx)
        rc = fail(f, 400, "the prompt has %zu tokens; a slot's context holds %d (leave room for the reply)", t.n, a->n_ctx);
    if (rc < 0) {
        e0_tokens_free(&t);
        srv_job_free(j);
        return -1;
    }
    j->ids = (int *)t.ids;
    j->n = (int)t.n;
    return 0;
}

json_t *srv_error_json(int status, const char *type, const char *msg) {
    json_t *m = srv_json_text(msg, strlen(msg));
    return json_pack("{s:{s:o,s:s,s:i}}", "error", "message", m ? m : json_string("?"), "type", type, "code", status);
}

const char *srv_finish_name(srv_finish f) {
    return f == SRV_FINISH_STOP ? "stop" : f == SRV_FINISH_LENGTH ? "length" : NULL;
}

json_t *srv_usage_json(int n_prompt, int n_gen, int n_cached) {
    return json_pack("{s:i,s:i,s:i,s:{s:i}}", "prompt_tokens", n_prompt, "completion_tokens", n_gen, "total_tokens",
                     n_prompt + n_gen, "prompt_tokens_details", "cached_tokens", n_cached);
}

/* A token's text and bytes for logprobs. */
static json_t *token_entry(const srv_api *a, int id, float lp) {
    size_t n;
    const char *piece = e0_tok_piece(a->tok, id, false, &n);
    json_t *bytes = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(bytes, json_integer((unsigned char)piece[i]));
    json_t *t = srv_json_text(piece, n);
    return json_pack("{s:o,s:f,s:o}", "token", t ? t : json_string(""), "logprob", (double)lp, "bytes", bytes);
}

/* chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}; completions: the legacy
 * {"tokens", "token_logprobs", "top_logprobs"} lists. */
static json_t *logprobs_json(const srv_api *a, const srv_job *j, const srv_lp *lp, int n) {
    if (j->chat) {
        json_t *content = json_array();
        for (int i = 0; i < n; i++) {
            json_t *e = token_entry(a, lp[i].id, lp[i].lp), *top = json_array();
            for (int k = 0; k < lp[i].n_top; k++) json_array_append_new(top, token_entry(a, lp[i].top_id[k], lp[i].top_lp[k]));
            json_object_set_new(e, "top_logprobs", top);
            json_array_append_new(content, e);
        }
        return json_pack("{s:o}", "content", content);
    }
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array();
    for (int i = 0; i < n; i++) {
        size_t len;
        const char *piece = e0_tok_piece(a->tok, lp[i].id, false, &len);
        json_array_append_new(tokens, srv_json_text(piece, len));
        json_array_append_new(lps, json_real(lp[i].lp));
        json_t *top = json_object();
        for (int k = 0; k < lp[i].n_top; k++) {
            const char *tp = e0_tok_piece(a->tok, lp[i].top_id[k], false, &len);
            json_t *key = srv_json_text(tp, len);
            if (key) json_object_set_new(top, json_string_value(key), json_real(lp[i].top_lp[k]));
            json_decref(key);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops);
}

static json_t *ids_json(const int *ids, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

json_t *srv_response_json(const srv_api *a, const srv_job *j, const char *id, long created, const srv_update *u,
                          const int *ids, int n_ids, const srv_lp *lp, int n_lp) {
    (void)n_lp;
    const char *fin = srv_finish_name(u->finish);
    size_t content_len = 0;
    json_t *calls = j->chat && j->tools && a->caps.tool_call_tags && u->finish == SRV_FINISH_STOP
                        ? srv_parse_tool_calls(u->text ? u->text : "", u->text_len, id, &content_len)
                        : NULL;
    json_t *text = calls && content_len == 0 ? json_null() : srv_json_text(u->text ? u->text : "", calls ? content_len : u->text_len);
    if (calls) fin = "tool_calls";
    json_t *choice = j->chat ? json_pack("{s:i,s:{s:s,s:o},s:s?}", "index", 0, "message", "role", "assistant", "content", text,
                                         "finish_reason", fin)
                             : json_pack("{s:i,s:o,s:s?}", "index", 0, "text", text, "finish_reason", fin);
    if (!choice) return json_decref(calls), NULL;
    if (calls) json_object_set_new(json_object_get(choice, "message"), "tool_calls", calls);
    json_object_set_new(choice, "logprobs", j->logprobs ? logprobs_json(a, j, lp, n_lp) : json_null());
    if (j->return_tokens) json_object_set_new(choice, "tokens", ids_json(ids, n_ids));
    return json_pack("{s:s,s:s,s:i,s:s,s:[o],s:o}", "id", id, "object", j->chat ? "chat.completion" : "text_completion",
                     "created", (json_int_t)created, "model", a->model_id, "choices", choice, "usage",
                     srv_usage_json(u->n_prompt, u->n_gen, u->n_cached));
}

/* A chunk of one choice (stolen; NULL gives NULL). */
static json_t *chunk_of(const srv_api *a, const srv_job *j, const char *id, long created, json_t *choice) {
    if (!choice) return NULL;
    json_t *c = json_pack("{s:s,s:s,s:i,s:s,s:[o]}", "id", id, "object", j->chat ? "chat.completion.chunk" : "text_completion",
                          "created", (json_int_t)created, "model", a->model_id, "choices", choice);
    if (c && j->include_usage) json_object_set_new(c, "usage", json_null());
    return c;
}

/* null_content: chat's first chunk says content null when it has no text (a reply that may be
 * only tool calls, as llama-server and OpenAI send it). */
static json_t *text_chunk(const srv_api *a, const srv_job *j, const char *id, long created, const srv_update *u,
                          const char *finish, bool first, bool null_content) {
    json_t *choice;
    json_t *text = srv_json_text(u->text ? u->text : "", u->text_len);
    if (j->chat) {
        json_t *delta = json_object();
        if (first) json_object_set_new(delta, "role", json_string("assistant"));
        if (u->text_len || (first && !null_content)) json_object_set_new(delta, "content", text);
        else {
            json_decref(text);
            if (first) json_object_set_new(delta, "content", json_null());
        }
        choice = json_pack("{s:i,s:o,s:s?}", "index", 0, "delta", delta, "finish_reason", finish);
    } else choice = json_pack("{s:i,s:o,s:s?}", "index", 0, "text", text, "finish_reason", finish);
    if (!choice) return NULL;
    json_object_set_new(choice, "logprobs", j->logprobs && u->n_lp ? logprobs_json(a, j, u->lp, u->n_lp) : json_null());
    if (j->return_tokens) json_object_set_new(choice, "tokens", ids_json(u->ids, u->n_ids));
    return chunk_of(a, j, id, created, choice);
}

json_t *srv_chunk_json(const srv_api *a, const srv_job *j, const char *id, long created, const srv_update *u,
                       const char *finish, bool first) {
    return text_chunk(a, j, id, created, u, finish, first, false);
}

void srv_sse_init(srv_sse *s, const srv_api *a, const srv_job *j, const char *id, long created) {
    memset(s, 0, sizeof *s);
    s->a = a;
    s->j = j;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->created = created;
    s->first = true;
    s->split = j->chat && j->tools && a->caps.tool_call_tags;
}

void srv_sse_free(srv_sse *s) { srv_toolsplit_free(&s->ts); }

static void sse_line(e0_strbuf *out, json_t *j) {
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!t) {
        out->oom = 1; /* the stream ends with an error (the reader sees oom) */
        return;
    }
    e0_sb_printf(out, "data: %s\n\n", t);
    free(t);
}

void srv_sse_feed(srv_sse *s, const srv_update *u, e0_strbuf *out) {
    const srv_api *a = s->a;
    const srv_job *j = s->j;
    if (s->ended) return;
    srv_update v = *u; /* u with only the text that may go out now */
    e0_strbuf content = {0};
    json_t *calls = NULL;
    if (s->split) {
        if (srv_toolsplit_feed(&s->ts, u->text ? u->text : "", u->text_len, &content) < 0) out->oom = 1;
        if (u->done) calls = srv_toolsplit_end(&s->ts, u->finish == SRV_FINISH_STOP, s->id, &content);
        if (content.oom) out->oom = 1;
        v.text = content.p ? content.p : "";
        v.text_len = content.len;
    }
    /* a chunk when there is text, the role to send, or ids / logprobs the client asked for */
    if (v.text_len || s->first || (v.n_ids && (j->return_tokens || (j->logprobs && v.n_lp)))) {
        sse_line(out, text_chunk(a, j, s->id, s->created, &v, NULL, s->first, s->split));
        s->first = false;
    }
    free(content.p);
    if (!u->done) return;
    const char *fin = srv_finish_name(u->finish);
    if (!fin) {
        const char *type = u->finish == SRV_FINISH_ERROR ? "server_error" : "unavailable_error";
        int status = u->finish == SRV_FINISH_ERROR ? 500 : 503;
        sse_line(out, srv_error_json(status, type,
                                     u->finish == SRV_FINISH_TIMEOUT ? "the request's time limit passed"
                                     : u->err[0]                     ? u->err
                                                                     : "cancelled"));
    } else {
        size_t i;
        json_t *call;
        json_array_foreach(calls, i, call) {
            json_t *tc = json_deep_copy(call);
            if (tc) json_object_set_new(tc, "index", json_integer((json_int_t)i));
            json_t *choice = tc ? json_pack("{s:i,s:{s:[o]},s:n,s:n}", "index", 0, "delta", "tool_calls", tc, "logprobs", "finish_reason")
                                : NULL;
            sse_line(out, chunk_of(a, j, s->id, s->created, choice));
        }
        srv_update end = {.text = "", .done = true};
        sse_line(out, text_chunk(a, j, s->id, s->created, &end, calls ? "tool_calls" : fin, false, false));
        if (j->include_usage) {
            json_t *c = json_pack("{s:s,s:s,s:i,s:s,s:[],s:o}", "id", s->id, "object", j->chat ? "chat.completion.chunk" : "text_completion",
                                  "created", (json_int_t)s->created, "model", a->model_id, "choices", "usage",
                                  srv_usage_json(u->n_prompt, u->n_gen, u->n_cached));
            sse_line(out, c);
        }
    }
    json_decref(calls);
    e0_sb_add(out, "data: [DONE]\n\n", 14);
    s->ended = true;
}

json_t *srv_tokenize(const srv_api *a, const char *body, size_t len, srv_fail *f) {
    json_t *o = parse_body(body, len, f);
    if (!o) return NULL;
    json_t *c = json_object_get(o, "content"), *res = NULL;
    bool add_special = false, parse_special = true, pieces = false;
    if (!json_is_string(c)) fail(f, 400, "'content' must be a string");
    else if (get_bool(o, "add_special", &add_special, f) == 0 && get_bool(o, "parse_special", &parse_special, f) == 0 &&
             get_bool(o, "with_pieces", &pieces, f) == 0) {
        e0_tokens t = {0};
        e0_err e;
        if (e0_tokenize(a->tok, json_string_value(c), json_string_length(c), add_special, parse_special, &t, &e) < 0)
            fail(f, 400, "cannot tokenize: %s", e.msg);
        else {
            json_t *arr = json_array();
            for (size_t i = 0; i < t.n; i++) {
                if (!pieces) {
                    json_array_append_new(arr, json_integer(t.ids[i]));
                    continue;
                }
                size_t n;
                const char *p = e0_tok_piece(a->tok, t.ids[i], true, &n);
                json_array_append_new(arr, json_pack("{s:i,s:o}", "id", t.ids[i], "piece", srv_json_text(p, n)));
            }
            res = json_pack("{s:o}", "tokens", arr);
        }
        e0_tokens_free(&t);
    }
    json_decref(o);
    return res;
}

json_t *srv_detokenize(const srv_api *a, const char *body, size_t len, srv_fail *f) {
    json_t *o = parse_body(body, len, f);
    if (!o) return NULL;
    json_t *ts = json_object_get(o, "tokens"), *res = NULL;
    if (!json_is_array(ts)) fail(f, 400, "'tokens' must be a list of token ids");
    else {
        e0_strbuf sb = {0};
        size_t i;
        json_t *v;
        bool ok = true;
        json_array_foreach(ts, i, v) {
            json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
            if (id < 0 || id >= (json_int_t)e0_tok_n_vocab(a->tok)) {
                ok = false;
                fail(f, 400, "tokens[%zu] is not a token id of the vocabulary (0..%u)", i, e0_tok_n_vocab(a->tok) - 1);
                break;
            }
            size_t n;
            const char *p = e0_tok_piece(a->tok, (int32_t)id, false, &n);
            e0_sb_add(&sb, p, n);
        }
        if (ok && sb.oom) fail(f, 500, "out of memory");
        else if (ok) res = json_pack("{s:o}", "content", srv_json_text(sb.p ? sb.p : "", sb.len));
        free(sb.p);
    }
    json_decref(o);
    return res;
}

json_t *srv_models_json(const srv_api *a, long created) {
    const e0_hparams *hp = &a->m->hp;
    json_t *r = json_pack("{s:s,s:[{s:s,s:s,s:i,s:s,s:{s:i,s:i,s:i,s:i}}]}", "object", "list", "data", "id", a->model_id,
                          "object", "model", "created", (json_int_t)created, "owned_by", "edge0-infer", "meta", "n_ctx_train",
                          (json_int_t)hp->n_ctx_train, "n_ctx_slot", a->n_ctx, "n_vocab", (json_int_t)hp->n_vocab, "n_embd",
                          (json_int_t)hp->n_embd);
    json_t *meta = json_object_get(json_array_get(json_object_get(r, "data"), 0), "meta");
    if (meta && a->model_path) {
        json_object_set_new(meta, "model_path", json_string(a->model_path));
        json_object_set_new(meta, "model_size", json_integer((json_int_t)a->model_size));
    }
    if (meta && a->kv_type_k) {
        json_object_set_new(meta, "kv_type_k", json_string(a->kv_type_k));
        json_object_set_new(meta, "kv_type_v", json_string(a->kv_type_v));
        json_object_set_new(meta, "threads", json_integer(a->threads));
        json_object_set_new(meta, "n_slots", json_integer(a->n_slots));
        json_object_set_new(meta, "chat_template_caps",
                            json_pack("{s:b,s:b,s:b}", "tools", a->caps.tools, "tool_calls", a->caps.tool_calls, "tool_responses",
                                      a->caps.tool_responses));
    }
    return r;
}
