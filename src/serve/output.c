/* output.c — stop strings, log-probabilities, UTF-8-safe JSON strings, tool calls in generated
 * text (see output.h). */
#include "serve/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/unicode.h"

size_t srv_stop_scan(const char *text, size_t len, size_t from, char *const *stop, int n_stop, long *stop_at) {
    *stop_at = -1;
    for (int i = 0; i < n_stop; i++) {
        size_t sl = strlen(stop[i]);
        if (!sl || sl > len) continue;
        /* a new match must end in the unreleased part: start at from - sl + 1 or later */
        size_t p = from >= sl ? from - sl + 1 : 0;
        for (; p + sl <= len; p++)
            if (!memcmp(text + p, stop[i], sl)) {
                if (*stop_at < 0 || (long)p < *stop_at) *stop_at = (long)p;
                break;
            }
    }
    if (*stop_at >= 0) return (size_t)*stop_at;
    size_t keep = len;
    for (int i = 0; i < n_stop; i++) {
        size_t sl = strlen(stop[i]);
        /* the longest k < sl such that the text ends with the first k bytes of the stop string */
        for (size_t k = sl > 0 ? sl - 1 : 0; k > 0; k--)
            if (k <= len - from && !memcmp(text + len - k, stop[i], k)) {
                if (len - k < keep) keep = len - k;
                break;
            }
    }
    return keep;
}

void srv_logprobs(const float *logits, int64_t V, int id, int n_top, srv_lp *out) {
    memset(out, 0, sizeof *out);
    if (n_top > SRV_MAX_TOP_LOGPROBS) n_top = SRV_MAX_TOP_LOGPROBS;
    if (n_top > V) n_top = (int)V;
    float mx = -INFINITY;
    for (int64_t i = 0; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int64_t i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    double lse = mx + log(sum);
    out->id = id;
    out->lp = (float)(logits[id] - lse);
    /* top n_top by insertion into a sorted list (n_top <= 20) */
    int n = 0;
    for (int64_t i = 0; i < V; i++) {
        float v = logits[i];
        if (n == n_top && (n == 0 || v <= logits[out->top_id[n - 1]])) continue;
        int j = n < n_top ? n++ : n - 1;
        while (j > 0 && logits[out->top_id[j - 1]] < v) {
            out->top_id[j] = out->top_id[j - 1];
            j--;
        }
        out->top_id[j] = (int)i;
    }
    out->n_top = n;
    for (int j = 0; j < n; j++) out->top_lp[j] = (float)(logits[out->top_id[j]] - lse);
}

json_t *srv_json_text(const char *s, size_t n) {
    char *clean = malloc(n * 3 + 1);
    if (!clean) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int k = e0_utf8_valid_prefix((const unsigned char *)s + i, n - i);
        if (k > 0) {
            memcpy(clean + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            o += e0_utf8_encode(0xFFFD, clean + o);
            i++;
        }
    }
    json_t *j = json_stringn(clean, o);
    free(clean);
    return j;
}

static size_t skip_space(const char *t, size_t i, size_t n) {
    while (i < n && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) i++;
    return i;
}

/* srv_parse_tool_calls; on NULL, *later (when not NULL) says whether more text could still make
 * it calls: it ends inside a block or inside a tag that may be "<tool_call>" (or memory ran out),
 * rather than with a block that is not valid or text that is not a block. */
static json_t *parse_calls(const char *text, size_t len, const char *id_prefix, size_t *content_len, bool *later) {
    static const char open_tag[] = "<tool_call>", close_tag[] = "</tool_call>";
    bool dummy;
    if (!later) later = &dummy;
    *later = true;
    const size_t ol = sizeof open_tag - 1, cl = sizeof close_tag - 1;
    const char *first = len >= ol ? memmem(text, len, open_tag, ol) : NULL;
    if (!first) return NULL;
    size_t start = (size_t)(first - text), c = start;
    while (c > 0 && (text[c - 1] == ' ' || text[c - 1] == '\n' || text[c - 1] == '\r' || text[c - 1] == '\t')) c--;
    json_t *calls = json_array();
    if (!calls) return NULL;
    size_t i = start;
    while (i < len) {
        if (len - i < ol || memcmp(text + i, open_tag, ol)) { /* only blocks after the first */
            *later = len - i < ol && !memcmp(text + i, open_tag, len - i);
            goto bad;
        }
        i += ol;
        const char *end = memmem(text + i, len - i, close_tag, cl);
        if (!end) goto bad; /* not closed (yet) */
        json_t *o = json_loadb(text + i, (size_t)(end - (text + i)), JSON_REJECT_DUPLICATES, NULL);
        json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "arguments");
        if (!json_is_object(o) || !json_is_string(name) || json_string_length(name) == 0 || (args && !json_is_object(args))) {
            json_decref(o);
            *later = false;
            goto bad;
        }
        char *a = args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
        char id[96];
        snprintf(id, sizeof id, "%.64s-%zu", id_prefix, json_array_size(calls));
        json_t *call = a ? json_pack("{s:s,s:s,s:{s:O,s:s}}", "id", id, "type", "function", "function", "name", name, "arguments", a) : NULL;
        free(a);
        json_decref(o);
        if (!call || json_array_append_new(calls, call) < 0) goto bad;
        i = skip_space(text, (size_t)(end - text) + cl, len);
    }
    *content_len = c;
    return calls;
bad:
    json_decref(calls);
    return NULL;
}

json_t *srv_parse_tool_calls(const char *text, size_t len, const char *id_prefix, size_t *content_len) {
    return parse_calls(text, len, id_prefix, content_len, NULL);
}

static const char tool_open[] = "<tool_call>";
#define TOOL_OPEN_LEN (sizeof tool_open - 1)

static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* In calls: held is whitespace, the first tag and what followed. Once no text to come can make it
 * valid blocks (a block that is not a call, text after one), the whole reply is content. */
static int check_calls(srv_toolsplit *t, e0_strbuf *out) {
    size_t cl;
    bool later;
    json_t *calls = parse_calls(t->held.p, t->held.len, "x", &cl, &later);
    if (calls || later) return json_decref(calls), 0;
    t->plain = true;
    t->in_calls = false;
    int rc = e0_sb_add(out, t->held.p, t->held.len);
    t->held.len = 0;
    return rc;
}

int srv_toolsplit_feed(srv_toolsplit *t, const char *s, size_t n, e0_strbuf *out) {
    if (t->plain) return e0_sb_add(out, s, n);
    if (e0_sb_add(&t->held, s, n) < 0) return -1;
    if (t->in_calls) return check_calls(t, out);
    const char *h = t->held.p ? t->held.p : "";
    size_t len = t->held.len, keep;
    const char *tag = len >= TOOL_OPEN_LEN ? memmem(h, len, tool_open, TOOL_OPEN_LEN) : NULL;
    if (tag) {
        t->in_calls = true;
        keep = (size_t)(tag - h);
    } else {
        /* the longest tail that is a proper prefix of the tag */
        size_t k = TOOL_OPEN_LEN - 1 < len ? TOOL_OPEN_LEN - 1 : len;
        for (; k > 0; k--)
            if (!memcmp(h + len - k, tool_open, k)) break;
        keep = len - k;
    }
    while (keep > 0 && is_space(h[keep - 1])) keep--; /* whitespace before a tag is not content */
    if (keep > 0) {
        if (e0_sb_add(out, h, keep) < 0) return -1;
        memmove(t->held.p, h + keep, len - keep + 1);
        t->held.len = len - keep;
    }
    return t->in_calls ? check_calls(t, out) : 0;
}

json_t *srv_toolsplit_end(srv_toolsplit *t, bool parse, const char *id_prefix, e0_strbuf *out) {
    size_t content_len = 0;
    json_t *calls = parse && t->in_calls ? srv_parse_tool_calls(t->held.p, t->held.len, id_prefix, &content_len) : NULL;
    /* what is held starts with whitespace and the first tag: no content before the calls */
    if (!calls && t->held.len) e0_sb_add(out, t->held.p, t->held.len);
    t->held.len = 0;
    t->in_calls = t->plain = false;
    return calls;
}

void srv_toolsplit_free(srv_toolsplit *t) {
    free(t->held.p);
    memset(t, 0, sizeof *t);
}
