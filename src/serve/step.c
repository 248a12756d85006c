/* step.c — evaluates one scheduler step (see step.h): every decode item (one token each) in one
 * e0_eval_batch call, so the weights and the batch's experts are read once per step for all of
 * them; each prefill chunk in its own e0_eval. */
#include "serve/step.h"

#include <stdlib.h>

static void eval_one(srv_item *it, double *prefill_s, double *decode_s) {
    double t0 = e0_now();
    it->rc = e0_eval(it->c, it->tokens, it->n, NULL, &it->err);
    double dt = e0_now() - t0;
    if (it->prefill) *prefill_s += dt;
    else *decode_s += dt;
}

int srv_step_forward(srv_item *items, int n, double *prefill_s, double *decode_s) {
    int failed = 0, n_dec = 0;
    /* the decode items: their contexts and tokens, gathered for one batched step */
    e0_ctx **ctxs = malloc((size_t)(n > 0 ? n : 1) * sizeof *ctxs);
    int *toks = malloc((size_t)(n > 0 ? n : 1) * sizeof *toks);
    int *which = malloc((size_t)(n > 0 ? n : 1) * sizeof *which);
    int *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos); /* each one's position before the step */
    bool batch = ctxs && toks && which && pos;
    for (int i = 0; i < n; i++) {
        srv_item *it = &items[i];
        if (batch && !it->prefill && it->n == 1) {
            ctxs[n_dec] = it->c;
            toks[n_dec] = it->tokens[0];
            pos[n_dec] = e0_ctx_pos(it->c);
            which[n_dec++] = i;
        } else {
            eval_one(it, prefill_s, decode_s);
            if (it->rc < 0) failed++;
        }
    }
    /* more decode items than the first context's chunk: in pieces of n_batch */
    for (int d0 = 0; d0 < n_dec;) {
        int cap = e0_ctx_n_batch(ctxs[d0]), nd = n_dec - d0 < cap ? n_dec - d0 : cap;
        double t0 = e0_now();
        int rc = e0_eval_batch(ctxs + d0, toks + d0, nd, &items[which[d0]].err);
        *decode_s += e0_now() - t0;
        for (int k = d0; k < d0 + nd; k++) {
            srv_item *it = &items[which[k]];
            it->rc = 0;
            /* a failed batch (one bad sequence fails it before any position moves; a failed
             * fallback may have advanced the first ones): the unmoved ones again, each alone, so
             * only the failing sequence fails */
            if (rc < 0 && e0_ctx_pos(ctxs[k]) == pos[k]) eval_one(it, prefill_s, decode_s);
            if (it->rc < 0) failed++;
        }
        d0 += nd;
    }
    free(ctxs);
    free(toks);
    free(which);
    free(pos);
    return failed;
}
