/* tokenizer_detok.c — ids back to bytes: the piece of every token (built once at load, like
 * llama.cpp's token-to-piece cache), the streaming UTF-8-safe decoder and whole-sequence
 * detokenize. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

static int hexdig(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Render id with special=true into out (room for 4 * len bytes); returns the length. */
static size_t render(const e0_tokenizer *t, uint32_t id, char *out) {
    const char *s = t->pool + t->off[id];
    size_t n = t->len[id], o = 0;
    uint8_t a = t->attr[id];
    if (a & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED)) {
        memcpy(out, s, n);
        return n;
    }
    bool spm_text = t->model == E0_TOK_SPM || t->bpe_raw; /* "▁" for spaces, <0xNN> bytes */
    if (spm_text && (a & ATTR_BYTE) && !(a & ATTR_NORMAL)) {
        if (n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && hexdig(s[3]) >= 0 && hexdig(s[4]) >= 0) {
            out[0] = (char)(hexdig(s[3]) * 16 + hexdig(s[4]));
            return 1;
        }
        memcpy(out, s, n);
        return n;
    }
    if (!(a & (ATTR_NORMAL | ATTR_BYTE))) return 0; /* unused, undefined */
    if (spm_text) {
        for (size_t i = 0; i < n;) {
            if (i + 3 <= n && !memcmp(s + i, "\xe2\x96\x81", 3)) {
                out[o++] = ' ';
                i += 3;
            } else {
                out[o++] = s[i++];
            }
        }
        return o;
    }
    /* BPE: GPT-2 code points back to bytes; anything else is kept as it is. */
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = e0_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        int b = k ? e0_cp_to_byte(cp) : -1;
        if (b >= 0) {
            out[o++] = (char)b;
        } else {
            if (!k) k = 1;
            memcpy(out + o, s + i, k);
            o += k;
        }
        i += k;
    }
    return o;
}

int tok_build_pieces(e0_tokenizer *t, e0_err *e) {
    /* A piece is never longer than its text. */
    t->piece_pool = tok_alloc(t, t->pool_size);
    t->piece_off = tok_alloc(t, t->n * sizeof *t->piece_off);
    t->piece_len = tok_alloc(t, t->n * sizeof *t->piece_len);
    if (!t->piece_pool || !t->piece_off || !t->piece_len) return e0_fail(e, "out of memory");
    size_t p = 0;
    for (uint32_t id = 0; id < t->n; id++) {
        t->piece_off[id] = p;
        t->piece_len[id] = (uint32_t)render(t, id, t->piece_pool + p);
        p += t->piece_len[id];
    }
    return 0;
}

const char *e0_tok_piece(const e0_tokenizer *t, int32_t id, bool special, size_t *len) {
    *len = 0;
    if (id < 0 || (uint32_t)id >= t->n) return "";
    if (!special && (t->attr[id] & (ATTR_UNKNOWN | ATTR_CONTROL))) return "";
    *len = t->piece_len[id];
    return t->piece_pool + t->piece_off[id];
}

void e0_detok_init(e0_detok_stream *s, const e0_tokenizer *t, bool special, bool strip_leading_space) {
    memset(s, 0, sizeof *s);
    s->t = t;
    s->special = special;
    s->strip_space = strip_leading_space;
}

void e0_detok_free(e0_detok_stream *s) {
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

static bool reserve(e0_detok_stream *s, size_t n) {
    if (n <= s->cap) return true;
    size_t nc = s->cap ? s->cap : 256;
    while (nc < n) nc *= 2;
    char *p = realloc(s->buf, nc);
    if (!p) return false;
    s->buf = p;
    s->cap = nc;
    return true;
}

const char *e0_detok_push(e0_detok_stream *s, int32_t id, size_t *len) {
    size_t n;
    const char *piece = e0_tok_piece(s->t, id, s->special, &n);
    if (!s->started) {
        /* The leading-space rule applies to the first piece after an optional BOS. */
        if (!(id == s->t->bos && s->t->bos >= 0)) {
            s->started = true;
            if (s->strip_space && n > 0 && piece[0] == ' ') piece++, n--;
        }
    }
    *len = 0;
    if (!reserve(s, s->npend + n + 1)) return NULL;
    /* work = held bytes + piece, in the same buffer; emit complete characters in place */
    memcpy(s->buf, s->pend, s->npend);
    memcpy(s->buf + s->npend, piece, n);
    size_t total = s->npend + n, i = 0, o = 0;
    s->npend = 0;
    while (i < total) {
        int r = e0_utf8_valid_prefix((const unsigned char *)s->buf + i, total - i);
        if (r == 0) { /* incomplete at the end: hold it */
            s->npend = total - i;
            memcpy(s->pend, s->buf + i, s->npend);
            break;
        }
        size_t k = r > 0 ? (size_t)r : 1; /* invalid byte: pass it through */
        memmove(s->buf + o, s->buf + i, k);
        o += k;
        i += k;
    }
    *len = o;
    return s->buf;
}

const char *e0_detok_flush(e0_detok_stream *s, size_t *len) {
    *len = 0;
    if (!reserve(s, s->npend + 1)) return NULL;
    memcpy(s->buf, s->pend, s->npend);
    *len = s->npend;
    s->npend = 0;
    return s->buf;
}

int e0_detokenize(const e0_tokenizer *t, const int32_t *ids, size_t n, bool special, char **out, size_t *out_len,
                  e0_err *e) {
    e0_detok_stream s;
    e0_detok_init(&s, t, special, e0_tok_strips_leading_space(t));
    size_t cap = 256, len = 0;
    char *res = malloc(cap);
    if (!res) return e0_fail(e, "out of memory");
    for (size_t i = 0; i <= n; i++) {
        size_t k;
        const char *p = i < n ? e0_detok_push(&s, ids[i], &k) : e0_detok_flush(&s, &k);
        if (!p) goto oom;
        if (len + k + 1 > cap) {
            while (len + k + 1 > cap) cap *= 2;
            char *nr = realloc(res, cap);
            if (!nr) goto oom;
            res = nr;
        }
        memcpy(res + len, p, k);
        len += k;
    }
    res[len] = 0;
    e0_detok_free(&s);
    *out = res;
    *out_len = len;
    return 0;
oom:
    free(res);
    e0_detok_free(&s);
    return e0_fail(e, "out of memory");
}
