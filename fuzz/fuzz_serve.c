/* fuzz_serve.c — libFuzzer target: the request handling of `serve` apart from the socket
 * (src/serve/api.c: the bodies of POST /v1/chat/completions, /v1/completions, /tokenize,
 * /detokenize, and the response and stream-chunk JSON built for a parsed request), and the
 * stop-string hold-back of src/serve/output.c.
 *
 * The srv_api is built once, as `serve` builds it, over a tiny synth qwen2 model (600 tokens)
 * whose tokenizer.chat_template is ../shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja (a built-in
 * ChatML template without ../shared); a slot's context is FS_N_CTX tokens, defaults are llama.cpp's.
 *
 * Input: byte 0 selects the mode (modulo 5): 0 chat, 1 completions, 2 tokenize, 3 detokenize —
 * the rest is the request body — or 4 stop strings:
 *   byte 1: number of stop strings - 1 (modulo 8), then that many NUL-terminated stop strings,
 *   then generated text pieces, each a length byte L and L % 32 bytes (a short last one is cut).
 * Checked, requests: a parse either succeeds with a job in the documented ranges (prompt of 1 ..
 * n_ctx-1 ids, each < n_vocab; a token-id prompt kept as sent; sampling parameters in their
 * ranges and equal to the body's; stop strings non-empty, without NUL, at most 16 of at most 1024
 * bytes, those of the body; top_logprobs -1 or 0..20 exactly when logprobs is asked) or fails
 * with a status in 400..499, an error type and a message; the error object serializes to valid
 * JSON (valid UTF-8) with that message, type and code. For a parsed request, the whole response
 * and two stream chunks for a fake update (the prompt's pieces as the text, cut anywhere, so
 * maybe not valid UTF-8; its ids; logprobs from srv_logprobs over made-up logits) serialize to
 * valid JSON and UTF-8 with the fields clients read; a valid-UTF-8 text comes back unchanged.
 * tokenize/detokenize: a result with in-range ids / a string, or the same error rules.
 * Stop strings, fed piece by piece as the scheduler does (sched.c, one scan per token): what is
 * released never contains a stop string; a stop is found exactly when some stop string is
 * complete in the text so far, at its earliest start, never inside the released part; the held
 * tail is a proper prefix of a stop string (nothing held without reason); at the end the output
 * is the text up to that stop (or all of it). Inputs above FUZZ_SERVE_MAX bytes are skipped. */
#include <math.h>
#include <unistd.h>

#include "fuzz_common.h"

#include "base/strbuf.h"
#include "engine/model.h"
#include "serve/api.h"
#include "serve/output.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

#define FUZZ_SERVE_MAX (16u << 10)
#define FS_N_CTX 1024

static srv_api fs_api;
static e0_model *fs_model;
static e0_tokenizer *fs_tok;
static uint32_t fs_vocab;

static const char fs_chatml[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/* RFC 3629 UTF-8 (no overlongs, no surrogates, <= U+10FFFF), written here independently of
 * src/text/unicode.c, which the code under test uses. */
static bool fs_utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || i + k > n) return false;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += k;
    }
    return true;
}

int fuzz_serve_init(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/Qwen-Qwen2.5-7B-Instruct.jinja", fuzz_shared());
    size_t tlen;
    char *tmpl = fuzz_read_file(path, 4u << 20, &tlen);
    char tmp[] = "/tmp/e0-fuzz-serve-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) return free(tmpl), -1;
    close(fd);
    e0_err e = {{0}};
    int rc = fuzz_synth_tiny_tmpl(E0_ARCH_QWEN2, 0, 0, tmpl ? tmpl : fs_chatml, tmp, &e);
    free(tmpl);
    if (rc == 0) fs_model = e0_model_load(tmp, NULL, false, &e);
    unlink(tmp);
    if (fs_model) fs_tok = e0_model_tokenizer(fs_model, &e);
    if (!fs_tok) return fprintf(stderr, "fuzz_serve: %s\n", e.msg), -1;
    fs_vocab = e0_tok_n_vocab(fs_tok);
    fs_api = (srv_api){.m = fs_model, .tok = fs_tok, .model_id = "fuzz.gguf", .n_ctx = FS_N_CTX,
                       .sp = e0_sampler_defaults(), .max_tokens = -1, .seed_fixed = true};
    fs_api.tmpl = e0_model_chat_template(fs_model, &fs_api.tlen);
    if (!fs_api.tmpl) return fprintf(stderr, "fuzz_serve: the synth model has no chat template\n"), -1;
    srv_api_probe(&fs_api); /* as serve does: tools reach the template when it renders them */
    json_t *models = srv_models_json(&fs_api, 1);
    bool ok = models && json_array_size(json_object_get(models, "data")) == 1;
    json_decref(models);
    return ok ? 0 : -1;
}

/* j serialized (compact, raw UTF-8 as `serve` sends it) must be valid UTF-8 and parse back
 * (generated text may hold NUL bytes: "\u0000" in JSON, which clients accept);
 * returns the parsed copy (the caller frees it), or NULL after a failed check. Takes j. */
static json_t *fs_roundtrip(json_t *j, const char *what) {
    FUZZ_CHECK(j != NULL, "%s: no JSON object was built", what);
    if (!j) return NULL;
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    FUZZ_CHECK(s != NULL, "%s: does not serialize", what);
    if (!s) return NULL;
    size_t n = strlen(s);
    FUZZ_CHECK(fs_utf8_ok((const unsigned char *)s, n), "%s: serialized JSON is not valid UTF-8", what);
    json_error_t je;
    json_t *back = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je); /* "\u0000" is valid JSON */
    FUZZ_CHECK(back != NULL, "%s: serialized JSON does not parse: %s", what, je.text);
    free(s);
    return back;
}

/* A failed request: status 400..499 with a type and a message, and an error object that says so. */
static void fs_check_fail(const srv_fail *f, const char *what) {
    FUZZ_CHECK(f->status >= 400 && f->status <= 499, "%s: failed with HTTP status %d (%s)", what, f->status, f->msg);
    FUZZ_CHECK(f->type && *f->type, "%s: failure without an error type", what);
    FUZZ_CHECK(memchr(f->msg, 0, sizeof f->msg) && f->msg[0], "%s: failure without a message", what);
    if (!f->type) return;
    json_t *e = fs_roundtrip(srv_error_json(f->status, f->type, f->msg), "error object");
    json_t *err = json_object_get(e, "error");
    const char *msg = json_string_value(json_object_get(err, "message"));
    FUZZ_CHECK(msg && *msg, "error object without a message");
    if (msg && fs_utf8_ok((const unsigned char *)f->msg, strlen(f->msg)))
        FUZZ_CHECK(!strcmp(msg, f->msg), "error message changed: '%s' became '%s'", f->msg, msg);
    FUZZ_CHECK(json_integer_value(json_object_get(err, "code")) == f->status, "error code is not the status");
    const char *type = json_string_value(json_object_get(err, "type"));
    FUZZ_CHECK(type && !strcmp(type, f->type), "error type changed");
    json_decref(e);
}

/* A number the body gives for key (NaN when absent, null or not a number). */
static double fs_body_num(json_t *body, const char *key) {
    json_t *v = json_object_get(body, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The job's fields against their documented ranges and against the body they came from. */
static void fs_check_job(const srv_job *j, bool chat, json_t *body) {
    const srv_params *p = &j->p;
    FUZZ_CHECK(j->chat == chat, "job kind is not the endpoint's");
    FUZZ_CHECK(j->ids && j->n >= 1 && j->n < FS_N_CTX, "prompt of %d tokens (context %d)", j->n, FS_N_CTX);
    for (int i = 0; j->ids && i < j->n; i++)
        FUZZ_CHECK(j->ids[i] >= 0 && (uint32_t)j->ids[i] < fs_vocab, "prompt id %d out of the vocabulary", j->ids[i]);
    FUZZ_CHECK(p->sp.temp >= 0 && p->sp.temp <= 100, "temperature %g", (double)p->sp.temp);
    FUZZ_CHECK(p->sp.top_p >= 0 && p->sp.top_p <= 1, "top_p %g", (double)p->sp.top_p);
    FUZZ_CHECK(p->sp.min_p >= 0 && p->sp.min_p <= 1, "min_p %g", (double)p->sp.min_p);
    FUZZ_CHECK(p->sp.repeat_penalty > 0 && p->sp.repeat_penalty <= 100, "repeat_penalty %g", (double)p->sp.repeat_penalty);
    FUZZ_CHECK(fabsf(p->sp.presence_penalty) <= 100 && fabsf(p->sp.frequency_penalty) <= 100, "penalties out of range");
    FUZZ_CHECK(p->sp.top_k >= 0 && p->sp.top_k <= (1 << 24), "top_k %d", p->sp.top_k);
    FUZZ_CHECK(p->sp.repeat_last_n >= 0 && p->sp.repeat_last_n <= (1 << 24), "repeat_last_n %d", p->sp.repeat_last_n);
    FUZZ_CHECK(p->max_tokens >= -1 && p->max_tokens <= (1 << 24), "max_tokens %lld", (long long)p->max_tokens);
    FUZZ_CHECK(p->top_logprobs >= -1 && p->top_logprobs <= SRV_MAX_TOP_LOGPROBS, "top_logprobs %d", p->top_logprobs);
    FUZZ_CHECK(j->logprobs == (p->top_logprobs >= 0), "logprobs %d with top_logprobs %d", j->logprobs, p->top_logprobs);
    FUZZ_CHECK(p->n_stop >= 0 && p->n_stop <= SRV_MAX_STOP, "%d stop strings", p->n_stop);
    /* what the body asked for (the parse accepted it, so each given value is used as is) */
    static const char *const keys[] = {"temperature", "top_p", "min_p", "top_k"};
    const double got[] = {p->sp.temp, p->sp.top_p, p->sp.min_p, p->sp.top_k};
    for (int k = 0; k < 4; k++) {
        double want = fs_body_num(body, keys[k]);
        if (!isnan(want)) FUZZ_CHECK((float)want == (float)got[k], "'%s' %g became %g", keys[k], want, got[k]);
    }
    json_t *stop = json_object_get(body, "stop");
    int ns = 0;
    for (size_t i = 0; i < (json_is_array(stop) ? json_array_size(stop) : json_is_string(stop) ? 1 : 0); i++) {
        json_t *s = json_is_array(stop) ? json_array_get(stop, i) : stop;
        size_t len = json_string_length(s);
        if (len == 0) continue; /* ignored, as api.c documents */
        FUZZ_CHECK(ns < p->n_stop, "a stop string of the body is missing");
        if (ns >= p->n_stop) break;
        const char *js = p->stop[ns++];
        FUZZ_CHECK(js && strlen(js) == len && len <= 1024 && !memcmp(js, json_string_value(s), len), "stop string %d changed", ns - 1);
    }
    FUZZ_CHECK(ns == p->n_stop, "%d stop strings from %d in the body", p->n_stop, ns);
    if (!chat) { /* a token-id prompt is kept as sent */
        json_t *pr = json_object_get(body, "prompt");
        if (json_is_array(pr) && json_array_size(pr) == 1 && !json_is_integer(json_array_get(pr, 0))) pr = json_array_get(pr, 0);
        if (json_is_array(pr)) {
            FUZZ_CHECK(json_array_size(pr) == (size_t)j->n, "token prompt of %zu ids became %d", json_array_size(pr), j->n);
            for (int i = 0; i < j->n && (size_t)i < json_array_size(pr); i++)
                FUZZ_CHECK(json_integer_value(json_array_get(pr, (size_t)i)) == j->ids[i], "prompt id %d changed", i);
        }
    }
}

/* Made-up logits for the logprobs of a fake update: an xorshift stream, some ties and spikes. */
static void fs_logits(float *l, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint32_t i = 0; i < fs_vocab; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        l[i] = (x & 7) == 0 ? 3.0f : (float)((int64_t)(x >> 40) - (1 << 23)) / (float)(1 << 20);
    }
}

static void fs_check_lp(const srv_lp *lp, int id, int n_top) {
    FUZZ_CHECK(lp->id == id && lp->lp <= 1e-6f && isfinite(lp->lp), "logprob of %d is %g", id, (double)lp->lp);
    FUZZ_CHECK(lp->n_top == n_top, "%d top logprobs, asked %d", lp->n_top, n_top);
    for (int k = 0; k < lp->n_top && k < SRV_MAX_TOP_LOGPROBS; k++) {
        FUZZ_CHECK(lp->top_id[k] >= 0 && (uint32_t)lp->top_id[k] < fs_vocab, "top id %d", lp->top_id[k]);
        FUZZ_CHECK(k == 0 || lp->top_lp[k] <= lp->top_lp[k - 1], "top logprobs not descending");
    }
    if (lp->n_top > 0) FUZZ_CHECK(lp->top_lp[0] >= lp->lp, "the best alternative is less likely than the token");
}

/* The text choices[0] carries (chat message.content / delta.content, or text) and its length. */
static const char *fs_choice_text(json_t *resp, bool chat, bool chunk, json_t **choice, size_t *len) {
    *choice = json_array_get(json_object_get(resp, "choices"), 0);
    json_t *t = chat ? json_object_get(json_object_get(*choice, chunk ? "delta" : "message"), "content")
                     : json_object_get(*choice, "text");
    *len = json_string_length(t);
    return json_string_value(t);
}

/* Response and chunks for a fake update of the parsed job j. */
static void fs_check_responses(const srv_job *j, uint64_t h) {
    /* the text: the prompt's pieces, cut at an arbitrary byte (a stream chunk may end mid-character) */
    e0_strbuf text = {0};
    for (int i = 0; i < j->n; i++) {
        size_t n;
        const char *piece = e0_tok_piece(fs_tok, j->ids[i], false, &n);
        if (piece) e0_sb_add(&text, piece, n);
    }
    size_t cut = text.len ? (size_t)(h % (text.len + 1)) : 0;
    int n_lp = j->logprobs ? (j->n < 8 ? j->n : 8) : 0;
    srv_lp lp[8];
    float *logits = n_lp ? malloc(fs_vocab * sizeof *logits) : NULL;
    if (n_lp && !logits) n_lp = 0;
    for (int i = 0; i < n_lp; i++) {
        fs_logits(logits, h + (uint64_t)i);
        srv_logprobs(logits, fs_vocab, j->ids[i], j->p.top_logprobs, &lp[i]);
        fs_check_lp(&lp[i], j->ids[i], j->p.top_logprobs < (int)fs_vocab ? j->p.top_logprobs : (int)fs_vocab);
    }
    free(logits);
    srv_update u = {.text = text.p ? text.p : "", .text_len = cut, .ids = j->ids, .n_ids = j->n < 64 ? j->n : 64,
                    .lp = lp, .n_lp = n_lp, .done = true, .finish = h & 1 ? SRV_FINISH_STOP : SRV_FINISH_LENGTH,
                    .n_prompt = j->n, .n_gen = j->n < 64 ? j->n : 64, .n_cached = (int)(h % (uint64_t)j->n)};
    bool valid = fs_utf8_ok((const unsigned char *)u.text, u.text_len);
    const char *fin = srv_finish_name(u.finish);
    for (int k = 0; k < 3; k++) {
        bool chunk = k > 0, first = k == 1;
        json_t *r = !chunk ? srv_response_json(&fs_api, j, "cmpl-1", 1, &u, u.ids, u.n_ids, u.lp, u.n_lp)
                           : srv_chunk_json(&fs_api, j, "cmpl-1", 1, &u, first ? NULL : fin, first);
        const char *what = !chunk ? "response" : first ? "first chunk" : "last chunk";
        json_t *back = fs_roundtrip(r, what);
        if (!back) continue;
        json_t *choice;
        size_t tl;
        const char *t = fs_choice_text(back, j->chat, chunk, &choice, &tl);
        FUZZ_CHECK(choice != NULL, "%s: no choices[0]", what);
        if (!(j->chat && chunk && !first && u.text_len == 0)) FUZZ_CHECK(t != NULL, "%s: no text", what);
        if (t && valid) FUZZ_CHECK(tl == u.text_len && !memcmp(t, u.text, u.text_len), "%s: valid UTF-8 text changed", what);
        const char *f = json_string_value(json_object_get(choice, "finish_reason"));
        if (!chunk || !first) FUZZ_CHECK(f && !strcmp(f, fin), "%s: finish_reason", what);
        else FUZZ_CHECK(json_is_null(json_object_get(choice, "finish_reason")) || !json_object_get(choice, "finish_reason"), "%s: finish_reason", what);
        if (j->chat && first) {
            const char *role = json_string_value(json_object_get(json_object_get(choice, "delta"), "role"));
            FUZZ_CHECK(role && !strcmp(role, "assistant"), "first chunk without the assistant role");
        }
        json_t *l = json_object_get(choice, "logprobs");
        FUZZ_CHECK(n_lp ? json_is_object(l) : json_is_null(l), "%s: logprobs", what);
        if (n_lp && j->chat) FUZZ_CHECK(json_array_size(json_object_get(l, "content")) == (size_t)n_lp, "%s: logprobs.content", what);
        if (n_lp && !j->chat) FUZZ_CHECK(json_array_size(json_object_get(l, "tokens")) == (size_t)n_lp, "%s: logprobs.tokens", what);
        if (j->return_tokens) FUZZ_CHECK(json_array_size(json_object_get(choice, "tokens")) == (size_t)u.n_ids, "%s: tokens", what);
        if (!chunk)
            FUZZ_CHECK(json_integer_value(json_object_get(json_object_get(back, "usage"), "total_tokens")) == u.n_prompt + u.n_gen,
                       "usage");
        json_decref(back);
    }
    free(text.p);
}

static void fs_request(int mode, const char *body, size_t len) {
    srv_fail f;
    memset(&f, 0, sizeof f);
    if (mode <= 1) {
        bool chat = mode == 0;
        srv_job j;
        int rc = srv_parse_job(&fs_api, chat, body, len, &j, &f);
        if (rc < 0) {
            fs_check_fail(&f, chat ? "chat" : "completions");
            return;
        }
        FUZZ_CHECK(rc == 0, "srv_parse_job returned %d", rc);
        json_t *o = json_loadb(body, len, 0, NULL);
        FUZZ_CHECK(json_is_object(o), "an accepted body is not a JSON object");
        fs_check_job(&j, chat, o);
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)body[i]) * 1099511628211ull;
        fs_check_responses(&j, h);
        json_decref(o);
        srv_job_free(&j);
        return;
    }
    json_t *r = mode == 2 ? srv_tokenize(&fs_api, body, len, &f) : srv_detokenize(&fs_api, body, len, &f);
    if (!r) {
        fs_check_fail(&f, mode == 2 ? "tokenize" : "detokenize");
        return;
    }
    json_t *back = fs_roundtrip(r, mode == 2 ? "tokenize result" : "detokenize result");
    if (mode == 2) {
        json_t *ts = json_object_get(back, "tokens"), *v;
        size_t i;
        FUZZ_CHECK(json_is_array(ts), "tokenize: no 'tokens'");
        json_array_foreach(ts, i, v) {
            json_int_t id = json_integer_value(json_is_object(v) ? json_object_get(v, "id") : v);
            FUZZ_CHECK(id >= 0 && id < (json_int_t)fs_vocab, "tokenize: id %lld", (long long)id);
            if (json_is_object(v)) FUZZ_CHECK(json_is_string(json_object_get(v, "piece")), "tokenize: piece");
        }
    } else FUZZ_CHECK(json_is_string(json_object_get(back, "content")), "detokenize: no 'content'");
    json_decref(back);
}

/* Earliest start of a complete stop string in t[0..n) (-1: none). */
static long fs_first_stop(const char *t, size_t n, char *const *stop, int n_stop) {
    long best = -1;
    for (int i = 0; i < n_stop; i++) {
        const char *m = memmem(t, n, stop[i], strlen(stop[i]));
        if (m && (best < 0 || m - t < best)) best = m - t;
    }
    return best;
}

static void fs_stops(const uint8_t *d, size_t n) {
    if (n < 1) return;
    int want = d[0] % 8 + 1, n_stop = 0;
    char *stop[8];
    size_t at = 1, max_sl = 0;
    while (n_stop < want && at < n) {
        const uint8_t *z = memchr(d + at, 0, n - at);
        size_t sl = z ? (size_t)(z - (d + at)) : n - at;
        if (sl > 0) { /* empty stop strings are dropped by the parser */
            stop[n_stop++] = strndup((const char *)d + at, sl);
            if (sl > max_sl) max_sl = sl;
        }
        at += sl + 1;
    }
    e0_strbuf gen = {0};
    size_t released = 0;
    long stopped = -1;
    while (at < n && stopped < 0) {
        size_t pl = d[at++] % 32;
        if (pl > n - at) pl = n - at;
        e0_sb_add(&gen, (const char *)d + at, pl);
        at += pl;
        if (gen.oom) break;
        const char *g = gen.p ? gen.p : "";
        long stop_at;
        size_t upto = srv_stop_scan(g, gen.len, released, stop, n_stop, &stop_at);
        long want_at = fs_first_stop(g, gen.len, stop, n_stop);
        FUZZ_CHECK(stop_at == want_at, "stop found at %ld, the first complete stop string starts at %ld", stop_at, want_at);
        FUZZ_CHECK(upto >= released && upto <= gen.len, "released %zu then %zu of %zu bytes", released, upto, gen.len);
        if (stop_at >= 0) {
            FUZZ_CHECK((size_t)stop_at >= released, "a stop string at %ld began in the released text (%zu bytes)", stop_at, released);
            FUZZ_CHECK(upto == (size_t)stop_at, "at a stop, %zu released instead of %ld", upto, stop_at);
            stopped = stop_at;
        } else {
            size_t held = gen.len - upto;
            FUZZ_CHECK(held < (max_sl ? max_sl : 1), "%zu bytes held back, longest stop string %zu", held, max_sl);
            bool prefix = held == 0;
            for (int i = 0; i < n_stop && !prefix; i++) prefix = strlen(stop[i]) > held && !memcmp(stop[i], g + upto, held);
            FUZZ_CHECK(prefix, "a held tail of %zu bytes is no stop string's beginning", held);
        }
        if (upto > released) released = upto;
        FUZZ_CHECK(fs_first_stop(g, released, stop, n_stop) < 0, "the released text contains a stop string");
    }
    /* the end: sched.c cuts at the stop, else releases the held tail */
    size_t out = stopped >= 0 ? (size_t)stopped : gen.len;
    FUZZ_CHECK(released <= out, "released %zu bytes beyond the output's %zu", released, out);
    free(gen.p);
    for (int i = 0; i < n_stop; i++) free(stop[i]);
}

/* The same bytes as a generated reply: tool calls parsed out are well formed, their content a
 * prefix of the text. */
static void fs_tool_calls(const char *t, size_t n) {
    size_t cl = 0;
    json_t *calls = srv_parse_tool_calls(t, n, "fz", &cl);
    /* streamed (srv_toolsplit, pieces of 1..7 bytes): the same calls, the same content, and
     * nothing of the calls went out before the end */
    srv_toolsplit ts = {0};
    e0_strbuf out = {0};
    for (size_t i = 0, k; i < n; i += k) {
        k = 1 + (size_t)((unsigned char)t[i] % 7);
        if (k > n - i) k = n - i;
        FUZZ_CHECK(srv_toolsplit_feed(&ts, t + i, k, &out) == 0, "toolsplit: out of memory");
    }
    FUZZ_CHECK(!calls || !out.p || !memmem(out.p, out.len, "<tool_call>", 11), "toolsplit released a call before the end");
    json_t *sc = srv_toolsplit_end(&ts, true, "fz", &out);
    char *a1 = calls ? json_dumps(calls, JSON_COMPACT) : NULL, *a2 = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
    size_t want = calls ? cl : n;
    FUZZ_CHECK((!a1 && !a2) || (a1 && a2 && !strcmp(a1, a2)), "streamed calls %s vs whole %s", a2, a1);
    FUZZ_CHECK(out.len == want && (want == 0 || !memcmp(out.p, t, want)), "streamed content %zu bytes vs %zu", out.len, want);
    free(a1), free(a2), free(out.p);
    json_decref(sc);
    srv_toolsplit_free(&ts);
    if (!calls) return;
    FUZZ_CHECK(json_array_size(calls) > 0 && cl <= n, "tool calls: %zu, content %zu of %zu bytes", json_array_size(calls), cl, n);
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        json_t *a = args ? json_loads(args, 0, NULL) : NULL;
        FUZZ_CHECK(json_string_length(json_object_get(fn, "name")) > 0 && json_is_object(a), "tool call %zu malformed", i);
        json_decref(a);
    }
    json_decref(calls);
}

int fuzz_serve_one(const uint8_t *data, size_t size) {
    if (size < 1 || size > FUZZ_SERVE_MAX || !fs_tok) return 0;
    int mode = data[0] % 5;
    if (mode == 4) fs_stops(data + 1, size - 1), fs_tool_calls((const char *)data + 1, size - 1);
    else fs_request(mode, (const char *)data + 1, size - 1);
    return 0;
}

FUZZ_ENTRY_POINTS(serve)
