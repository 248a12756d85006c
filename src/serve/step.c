/* step.c — evaluates one scheduler step (see step.h). When the step's tokens fit in one chunk
 * (at most n_batch of the first context) they go in one e0_eval_multi call: the decode items'
 * tokens and the prefill chunks together, so the weights and the step's experts are read once
 * for all of them. Otherwise every decode item (one token each) in e0_eval_batch calls of at most
 * n_batch, and each prefill chunk in its own e0_eval. Either way each sequence gets the bits its
 * chunk alone would (engine.h). */
#include "serve/step.h"

#include <stdbool.h>
#include <stdlib.h>

static void eval_one(srv_item *it, double *prefill_s, double *decode_s) {
    double t0 = e0_now();
    it->rc = it->prefill ? e0_eval(it->c, it->tokens, it->n, NULL, &it->err) : e0_decode(it->c, it->tokens[0], &it->err);
    double dt = e0_now() - t0;
    if (it->prefill) *prefill_s += dt;
    else *decode_s += dt;
}

/* items[which[0 .. n)] in one e0_eval_multi; the time split between prefill and decode by rows.
 * On failure (nothing moved: one bad sequence fails the call) the items again, each alone, so
 * only the failing one fails. Returns the failed items. */
static int eval_together(srv_item *items, const int *which, int n, e0_ctx **ctxs, const int **toks, int *cnt, bool *dec,
                         int *pos, double *prefill_s, double *decode_s) {
    int rows = 0, pre_rows = 0, failed = 0;
    for (int k = 0; k < n; k++) {
        srv_item *it = &items[which[k]];
        ctxs[k] = it->c, toks[k] = it->tokens, cnt[k] = it->n, dec[k] = !it->prefill, pos[k] = e0_ctx_pos(it->c);
        rows += it->n;
        if (it->prefill) pre_rows += it->n;
    }
    double t0 = e0_now();
    int rc = n == 1 ? (dec[0] ? e0_decode(ctxs[0], toks[0][0], &items[which[0]].err)
                              : e0_eval(ctxs[0], toks[0], cnt[0], NULL, &items[which[0]].err))
                    : e0_eval_multi(ctxs, toks, cnt, dec, n, &items[which[0]].err);
    double dt = e0_now() - t0;
    *prefill_s += dt * pre_rows / rows;
    *decode_s += dt * (rows - pre_rows) / rows;
    for (int k = 0; k < n; k++) {
        srv_item *it = &items[which[k]];
        it->rc = n == 1 ? rc : 0;
        if (n > 1 && rc < 0 && e0_ctx_pos(ctxs[k]) == pos[k]) eval_one(it, prefill_s, decode_s);
        if (it->rc < 0) failed++;
    }
    return failed;
}

int srv_step_forward(srv_item *items, int n, double *prefill_s, double *decode_s) {
    if (n <= 0) return 0;
    int failed = 0, n_dec = 0, rows = 0;
    e0_ctx **ctxs = malloc((size_t)n * sizeof *ctxs);
    const int **toks = malloc((size_t)n * sizeof *toks);
    int *cnt = malloc((size_t)n * sizeof *cnt);
    int *which = malloc((size_t)n * sizeof *which);
    int *pos = malloc((size_t)n * sizeof *pos); /* each one's position before the step */
    bool *dec = malloc((size_t)n * sizeof *dec); /* a decode item (its generated token), not a prompt piece */
    if (!ctxs || !toks || !cnt || !which || !pos || !dec) { /* no memory for the tables: each alone */
        for (int i = 0; i < n; i++) {
            eval_one(&items[i], prefill_s, decode_s);
            if (items[i].rc < 0) failed++;
        }
        goto out;
    }
    for (int i = 0; i < n; i++) rows += items[i].n;
    if (rows <= e0_ctx_n_batch(items[0].c)) { /* everything in one forward pass */
        for (int i = 0; i < n; i++) which[i] = i;
        failed = eval_together(items, which, n, ctxs, toks, cnt, dec, pos, prefill_s, decode_s);
        goto out;
    }
    /* the decode items in pieces of n_batch, each prefill chunk alone */
    for (int i = 0; i < n; i++) {
        if (!items[i].prefill && items[i].n == 1) which[n_dec++] = i;
        else {
            eval_one(&items[i], prefill_s, decode_s);
            if (items[i].rc < 0) failed++;
        }
    }
    for (int d0 = 0; d0 < n_dec;) {
        int cap = e0_ctx_n_batch(items[which[d0]].c), nd = n_dec - d0 < cap ? n_dec - d0 : cap;
        failed += eval_together(items, which + d0, nd, ctxs, toks, cnt, dec, pos, prefill_s, decode_s);
        d0 += nd;
    }
out:
    free(ctxs);
    free(toks);
    free(cnt);
    free(which);
    free(pos);
    free(dec);
    return failed;
}
