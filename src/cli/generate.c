/* generate.c — sampling loop with streaming output and stop strings (see generate.h). */
#include "generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "cli.h"
#include "measure/sysinfo.h"

/* Bytes of text[from..len) that may be printed now: everything except a tail that could still
 * grow into a stop string. Sets *stop_at when a stop string is complete. */
static size_t printable(const char *text, size_t len, size_t from, const gen_opts *o, long *stop_at) {
    *stop_at = -1;
    for (int i = 0; i < o->n_stop; i++) {
        const char *hit = NULL;
        size_t sl = strlen(o->stop[i]);
        if (!sl) continue;
        size_t start = from >= sl ? from - sl + 1 : 0;
        for (size_t p = start; p + sl <= len; p++)
            if (!memcmp(text + p, o->stop[i], sl)) {
                hit = text + p;
                break;
            }
        if (hit && (*stop_at < 0 || hit - text < *stop_at)) *stop_at = hit - text;
    }
    if (*stop_at >= 0) return (size_t)*stop_at;
    size_t keep = len; /* hold back a suffix that is a prefix of some stop string */
    for (int i = 0; i < o->n_stop; i++) {
        size_t sl = strlen(o->stop[i]);
        for (size_t k = sl > 1 ? sl - 1 : 0; k > 0; k--)
            if (k <= len - from && !memcmp(text + len - k, o->stop[i], k)) {
                if (len - k < keep) keep = len - k;
                break;
            }
    }
    return keep;
}

int gen_run(e0_ctx *c, const e0_tokenizer *tok, e0_sampler *s, const gen_opts *o, gen_result *r, e0_err *e) {
    memset(r, 0, sizeof *r);
    const int64_t V = e0_ctx_model(c)->hp.n_vocab;
    e0_detok_stream ds;
    e0_detok_init(&ds, tok, false, false);
    e0_strbuf text = {0};
    size_t printed = 0;
    int rc = 0;
    e0_gsampler *gs = o->grammar ? e0_gsampler_new(o->grammar, tok, V, e) : NULL;
    if (o->grammar && !gs) rc = -1;
    double t0 = e0_now();
    for (int64_t k = 0; rc == 0 && (o->n_predict < 0 || k < o->n_predict); k++) {
        if (o->cancel && *o->cancel) {
            r->cancelled = true;
            break;
        }
        int id = gs ? e0_gsampler_sample(gs, s, e0_ctx_logits(c), e) : e0_sample(s, e0_ctx_logits(c));
        if (id < 0) {
            rc = -1;
            break;
        }
        if (gs) e0_gsampler_accept(gs, id);
        if ((int64_t)id >= V) id = (int)(V - 1);
        e0_sampler_accept(s, id);
        r->n_generated++;
        if (!o->ignore_eos && e0_tok_is_eog(tok, id)) {
            r->hit_eog = true;
            break;
        }
        size_t n;
        const char *piece = e0_detok_push(&ds, id, &n);
        if (!piece || e0_sb_add(&text, piece, n) < 0) {
            rc = e0_fail(e, "out of memory");
            break;
        }
        long stop_at;
        size_t upto = printable(text.p, text.len, printed, o, &stop_at);
        if (o->echo && upto > printed) {
            fwrite(text.p + printed, 1, upto - printed, stdout);
            if (!cli_stdout_ok()) {
                r->output_lost = true;
                break;
            }
        }
        if (upto > printed) printed = upto;
        if (stop_at >= 0) {
            r->hit_stop = true;
            text.len = (size_t)stop_at;
            break;
        }
        if (gs && e0_gsampler_must_end(gs)) {
            r->grammar_done = true;
            break;
        }
        if (o->n_predict >= 0 && k + 1 >= o->n_predict) break;
        if (e0_ctx_pos(c) >= e0_ctx_n_ctx(c)) {
            r->context_full = true;
            break;
        }
        if (e0_decode(c, id, e) < 0) {
            rc = -1;
            break;
        }
        if (o->record && r->n_recorded < o->record_cap) o->record[r->n_recorded++] = id;
    }
    if (rc == 0 && !r->hit_stop && !r->output_lost) {
        size_t n;
        const char *tail = e0_detok_flush(&ds, &n);
        if (tail && n) e0_sb_add(&text, tail, n);
        if (o->echo && text.len > printed) fwrite(text.p + printed, 1, text.len - printed, stdout);
        if (o->echo && !cli_stdout_ok()) r->output_lost = true;
    }
    r->seconds = e0_now() - t0;
    e0_gsampler_free(gs);
    e0_detok_free(&ds);
    if (!text.p) e0_sb_add(&text, "", 0);
    r->text = text.p;
    r->text_len = text.len;
    return rc;
}

unsigned long long gen_peak_rss(void) {
    char *s = e0_read_text("/proc/self/status", 1 << 16, NULL);
    uint64_t v = 0;
    if (s && e0_parse_kb_field(s, "VmHWM:", &v) != 0) v = 0;
    free(s);
    return (unsigned long long)v;
}
