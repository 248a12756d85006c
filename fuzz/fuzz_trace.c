/* fuzz_trace.c — libFuzzer target: the expert-routing trace reader (src/engine/trace.c), which
 * `--routing replay`, `--routing-trace` and tools/expert_policy_sim read untrusted CSV with.
 *
 * Input: the trace text itself (format in src/engine/trace.h). Checked beyond "no crash, no
 * leak": a failure always comes with a message; an accepted trace has a consistent table (every
 * expert id in [0, E), the k ids of an entry distinct, weights finite and non-negative, phases
 * -1/0/1, trace layers strictly ascending), e0_trace_layer_for maps every model layer into range
 * for several model depths, e0_trace_check_model accepts the trace's own (E, k) and refuses
 * another E; and writing the table back as a trace (one sequence, one row per step and layer)
 * and reading that gives the same table (ids, weights bit for bit, phases). Inputs above
 * FUZZ_TRACE_MAX bytes are skipped. */
#include <math.h>

#include "fuzz_common.h"

#include "base/strbuf.h"
#include "engine/trace.h"

#define FUZZ_TRACE_MAX (64u << 10)

int fuzz_trace_init(void) { return 0; }

/* The table of t written back as trace text (NULL if out of memory). */
static char *tr_write(const e0_trace *t, size_t *len) {
    e0_strbuf b = {0};
    e0_sb_printf(&b, "# E=%d k=%d\nseq,token,phase,layer,experts%s\n", t->n_expert, t->k, t->w ? ",weights" : "");
    for (int s = 0; s < t->n_step; s++)
        for (int li = 0; li < t->n_layer; li++) {
            const int *ids = e0_trace_experts(t, (uint64_t)s, li);
            const float *w = e0_trace_weights(t, (uint64_t)s, li);
            if (t->phase[s] < 0) e0_sb_printf(&b, "0,%d,,%d,", s, t->layer_id[li]);
            else e0_sb_printf(&b, "0,%d,%d,%d,", s, (int)t->phase[s], t->layer_id[li]);
            for (int j = 0; j < t->k; j++) e0_sb_printf(&b, "%s%d", j ? ";" : "", ids[j]);
            if (w) {
                e0_sb_printf(&b, ",");
                for (int j = 0; j < t->k; j++) e0_sb_printf(&b, "%s%.9g", j ? ";" : "", (double)w[j]);
            }
            e0_sb_printf(&b, "\n");
        }
    size_t n = b.len;
    char *text = e0_sb_take(&b);
    if (text) *len = n;
    return text;
}

static void tr_check_table(const e0_trace *t) {
    FUZZ_CHECK(t->n_expert > 0 && t->k > 0 && t->k <= t->n_expert, "E=%d k=%d accepted", t->n_expert, t->k);
    FUZZ_CHECK(t->n_layer > 0 && t->n_step > 0, "empty table accepted (%d layers, %d steps)", t->n_layer, t->n_step);
    for (int li = 1; li < t->n_layer; li++)
        FUZZ_CHECK(t->layer_id[li] > t->layer_id[li - 1], "trace layers not ascending at %d", li);
    for (int s = 0; s < t->n_step; s++) {
        FUZZ_CHECK(t->phase[s] >= -1 && t->phase[s] <= 1, "phase %d", (int)t->phase[s]);
        for (int li = 0; li < t->n_layer; li++) {
            const int *ids = e0_trace_experts(t, (uint64_t)s, li);
            const float *w = e0_trace_weights(t, (uint64_t)s, li);
            for (int j = 0; j < t->k; j++) {
                FUZZ_CHECK(ids[j] >= 0 && ids[j] < t->n_expert, "expert id %d outside [0, %d)", ids[j], t->n_expert);
                for (int i = 0; i < j; i++) FUZZ_CHECK(ids[i] != ids[j], "expert %d twice in one entry", ids[j]);
                if (w) FUZZ_CHECK(isfinite(w[j]) && w[j] >= 0, "weight %g accepted", (double)w[j]);
            }
        }
    }
    /* stepping past the end cycles */
    FUZZ_CHECK(e0_trace_experts(t, (uint64_t)t->n_step, 0) == e0_trace_experts(t, 0, 0), "steps do not cycle");
    static const int64_t depths[] = {1, 2, 3, 7, 48, 61, 1000};
    for (size_t d = 0; d < sizeof depths / sizeof *depths; d++)
        for (int64_t l = 0; l < depths[d]; l++) {
            int li = e0_trace_layer_for(t, l, depths[d]);
            FUZZ_CHECK(li >= 0 && li < t->n_layer, "model layer %lld of %lld -> trace layer %d of %d", (long long)l,
                       (long long)depths[d], li, t->n_layer);
        }
    e0_err e = {{0}};
    FUZZ_CHECK(e0_trace_check_model(t, t->n_expert, t->k, &e) == 0, "its own E, k refused: %s", e.msg);
    e0_err e2 = {{0}};
    FUZZ_CHECK(e0_trace_check_model(t, (int64_t)t->n_expert + 1, 1, &e2) != 0 && e2.msg[0],
               "another expert count accepted without a message");
}

static void tr_check_roundtrip(const e0_trace *t) {
    size_t len;
    char *text = tr_write(t, &len);
    if (!text) return; /* out of memory: nothing to compare */
    e0_err e = {{0}};
    e0_trace *u = e0_trace_parse("roundtrip", text, len, &e);
    FUZZ_CHECK(u != NULL, "the written-back table does not read: %s", e.msg);
    if (u) {
        FUZZ_CHECK(u->n_expert == t->n_expert && u->k == t->k && u->n_layer == t->n_layer && u->n_step == t->n_step,
                   "round trip changed the shape");
        size_t n = (size_t)t->n_step * (size_t)t->n_layer * (size_t)t->k;
        if (u->n_layer == t->n_layer && u->n_step == t->n_step && u->k == t->k) {
            FUZZ_CHECK(!memcmp(u->ids, t->ids, n * sizeof *t->ids), "round trip changed expert ids");
            FUZZ_CHECK(!memcmp(u->layer_id, t->layer_id, (size_t)t->n_layer * sizeof *t->layer_id), "round trip changed layers");
            FUZZ_CHECK(!memcmp(u->phase, t->phase, (size_t)t->n_step), "round trip changed phases");
            FUZZ_CHECK((u->w == NULL) == (t->w == NULL), "round trip changed the weights column");
            if (u->w && t->w) FUZZ_CHECK(!memcmp(u->w, t->w, n * sizeof *t->w), "round trip changed weights");
        }
        FUZZ_CHECK(u->n_filled == 0, "a complete table needed %llu filled entries", (unsigned long long)u->n_filled);
        e0_trace_free(u);
    }
    free(text);
}

int fuzz_trace_one(const uint8_t *data, size_t size) {
    if (size > FUZZ_TRACE_MAX) return 0;
    e0_err e = {{0}};
    e0_trace *t = e0_trace_parse("fuzz.csv", (const char *)data, size, &e);
    if (!t) {
        FUZZ_CHECK(e.msg[0] != 0, "a refused trace without a message");
        return 0;
    }
    tr_check_table(t);
    tr_check_roundtrip(t);
    e0_trace_free(t);
    return 0;
}

FUZZ_ENTRY_POINTS(trace)
