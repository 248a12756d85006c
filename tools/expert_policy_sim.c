/* expert_policy_sim.c — replay a routing trace through the expert cache (experts.c) with each
 * eviction policy and several slot counts, to choose the policy and slot count on real routing.
 * It uses the real cache on the real file (page cache reads), so hit rates are exact and the
 * time column is a rough indication only.
 *
 * Trace: a text file, one line per (token, layer) in evaluation order: "LAYER ID ID ..." (the
 * experts that layer used for that token, or for a prefill chunk); '#' lines are comments.
 * Built by `make` into build/tools/expert_policy_sim. Run:
 *   build/tools/expert_policy_sim MODEL.gguf TRACE [slots,...]   (default: k, 2k, 4k, n_expert/2) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/experts.h"
#include "quant/quant.h"

typedef struct step {
    int layer, n, first; /* ids[first .. first + n) */
} step;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf TRACE [slots,...]\n", argv[0]);
        return 1;
    }
    e0_err e = {0};
    e0_model *m = e0_model_load(argv[1], &(e0_model_params){.experts_resident = false}, true, &e);
    if (!m || !e0_model_is_moe(m)) {
        fprintf(stderr, "%s\n", m ? "not a MoE model" : e.msg);
        return 1;
    }
    const int64_t X = m->hp.n_expert, K = m->hp.n_expert_used;
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    step *steps = NULL;
    int *ids = NULL, n_steps = 0, n_ids = 0, cap_steps = 0, cap_ids = 0, max_n = 0;
    char line[65536];
    for (int ln = 1; fgets(line, sizeof line, f); ln++) {
        char *p = line, *end;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        long layer = strtol(p, &end, 10);
        if (end == p || layer < 0 || layer >= m->hp.n_layer) {
            fprintf(stderr, "%s:%d: bad layer\n", argv[2], ln);
            return 1;
        }
        if (n_steps == cap_steps) steps = realloc(steps, (size_t)(cap_steps = cap_steps ? 2 * cap_steps : 1024) * sizeof *steps);
        step s = {(int)layer, 0, n_ids};
        for (p = end;;) {
            long id = strtol(p, &end, 10);
            if (end == p) break;
            if (id < 0 || id >= X) {
                fprintf(stderr, "%s:%d: expert id %ld out of range\n", argv[2], ln, id);
                return 1;
            }
            if (n_ids == cap_ids) ids = realloc(ids, (size_t)(cap_ids = cap_ids ? 2 * cap_ids : 4096) * sizeof *ids);
            ids[n_ids++] = (int)id;
            s.n++;
            p = end;
        }
        if (s.n > max_n) max_n = s.n;
        steps[n_steps++] = s;
    }
    fclose(f);
    int64_t slot_values[16] = {K, 2 * K, 4 * K, X / 2};
    int n_slots = 4;
    if (argc > 3) {
        n_slots = 0;
        for (char *s = strtok(argv[3], ","); s && n_slots < 16; s = strtok(NULL, ",")) slot_values[n_slots++] = atoll(s);
    }
    printf("%s: %d steps, %d expert uses, up to %d experts per step\n", argv[2], n_steps, n_ids, max_n);
    printf("%-6s %6s %10s %10s %12s %8s\n", "policy", "slots", "hit rate", "misses", "MB read", "seconds");
    e0_expert_ptrs *ptr = malloc((size_t)(max_n > 0 ? max_n : 1) * sizeof *ptr);
    for (int si = 0; si < n_slots; si++) {
        if (slot_values[si] < max_n || slot_values[si] > X) continue; /* a step must fit */
        for (int ev = 0; ev < 2; ev++) {
            e0_experts *x = e0_experts_new(m, &(e0_experts_params){.slots = slot_values[si], .evict = ev}, &e);
            if (!x) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            double t0 = e0_now();
            for (int i = 0; i < n_steps; i++) {
                if (e0_experts_acquire(x, steps[i].layer, ids + steps[i].first, steps[i].n, ptr, &e) < 0) {
                    fprintf(stderr, "%s\n", e.msg);
                    return 1;
                }
                e0_experts_release(x, steps[i].layer);
            }
            const e0_experts_stats *st = e0_experts_get_stats(x);
            printf("%-6s %6lld %9.2f%% %10llu %12.1f %8.2f\n", ev ? "LFU" : "LRU", (long long)slot_values[si],
                   st->requests ? 100.0 * (double)st->hits / (double)st->requests : 0, (unsigned long long)st->misses,
                   (double)st->bytes_read / 1e6, e0_now() - t0);
            e0_experts_free(x);
        }
    }
    free(ptr);
    free(steps);
    free(ids);
    e0_model_free(m);
    return 0;
}
