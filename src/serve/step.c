/* step.c — evaluates one scheduler step (see step.h): today one e0_eval per item. */
#include "serve/step.h"

int srv_step_forward(srv_item *items, int n, double *prefill_s, double *decode_s) {
    int failed = 0;
    for (int i = 0; i < n; i++) {
        srv_item *it = &items[i];
        double t0 = e0_now();
        it->rc = e0_eval(it->c, it->tokens, it->n, NULL, &it->err);
        double dt = e0_now() - t0;
        if (it->prefill) *prefill_s += dt;
        else *decode_s += dt;
        if (it->rc < 0) failed++;
    }
    return failed;
}
