/* output.c — stop strings, log-probabilities, UTF-8-safe JSON strings (see output.h). */
#include "serve/output.h"

#include <math.h>
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
