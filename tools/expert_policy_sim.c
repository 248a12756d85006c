/* expert_policy_sim.c — replay a routing trace (the format of ../shared/routing, read by
 * src/engine/trace.c) through the expert cache to compare eviction policies and slot counts on
 * real routing. For each slot count it reports hit rate and bytes read per token of:
 *   lru, lfu, lrfu, pin   the engine's own policies (experts.h, e0_evict), run on the real cache
 *              (experts.c) reading the model file through the page cache, so the counts are
 *              exactly the engine's
 *   belady     the offline optimum (evict the expert needed again farthest in the future),
 *              computed here: the bound no online policy can beat at that slot count
 * and each policy's bytes over Belady's (vs_belady).
 * --predict P [--seed N] [--protect on|off]: the requests of routing=replay with replay_predict=P
 * (predicted routing, predict_ahead 1, from layer 1): at model layer l the predictor's guess for
 * layer l+1 (e0_trace_guess, seeded as the engine seeds it) is prefetched, then layer l acquires
 * its own guess (layer 0: the trace's experts); bytes then include the prefetched experts, and
 * Belady runs on the acquired experts without prefetch. --protect: prediction-aware eviction
 * (the engine's protect_predicted, default on). --split-bound (actual routing): the best
 * per-layer slot counts of the same total for Belady and lrfu, found on the trace itself
 * (split_bound: an oracle's upper bound on what per-layer counts could buy). --extra-layers X:
 * X layers have one slot more than --slots says, chosen as the engine's budget rule chooses them
 * (e0_experts_layer_slots: spread evenly), for every policy and Belady alike. --horizon H,..: rows
 * horizon-H, an oracle that knows the routing of the next H steps (lookahead below: Belady's rule
 * within H steps, the engine's LRFU beyond; 0 is lrfu, >= the tokens is Belady), on the same
 * requests as Belady: how much future a policy would need to know to come near the optimum.
 * The requests are those of decode under --model-option routing=replay: token after token, model
 * layer l takes the trace's layer floor(l * Lt / Lm) (e0_trace_layer_for), the first
 * n_expert_used experts of the row, acquired in id order (as forward.c's moe_ffn does); the
 * trace's tokens cycle. So `edge0-infer run --tokens T -n N-1 ... routing=replay` with a one-token
 * prompt, actual routing and no prefetch reaches the hit counts printed here for N tokens
 * (tests/test_replay.c checks it). The model gives the shape (layers, expert sizes): a synth model
 * with the trace's expert count will do (`edge0-infer synth --arch qwen3moe --n-expert 128`).
 * Built by `make` into build/tools/expert_policy_sim. Run:
 *   build/tools/expert_policy_sim MODEL.gguf TRACE.csv [--slots A,B,..] [--tokens N]
 * (default slots: k, 2k, 4k and n_expert/2 for the model's k experts per token; default tokens: the
 * trace's steps). Output: one header line, then one row per (slots, policy):
 *   policy slots hit_rate hits requests misses MB_read MB_per_token vs_belady seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/experts.h"
#include "engine/trace.h"
#include "quant/quant.h"

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The request sequence: reqs [n_tok][n_layer][K] expert ids, sorted within each (token, layer).
 * With guesses (predicted routing) layers >= 1 request guess [n_tok][n_layer][K] instead. */
static int *build_requests(const e0_trace *t, const e0_model *m, long n_tok, const int *guess) {
    const int64_t L = m->hp.n_layer, K = m->hp.n_expert_used;
    int *r = malloc((size_t)n_tok * (size_t)L * (size_t)K * sizeof *r);
    if (!r) return NULL;
    for (long s = 0; s < n_tok; s++)
        for (int64_t l = 0; l < L; l++) {
            size_t at = ((size_t)s * (size_t)L + (size_t)l) * (size_t)K;
            int *dst = r + at;
            const int *src = guess && l >= 1 ? guess + at : e0_trace_experts(t, (uint64_t)s, e0_trace_layer_for(t, l, L));
            memcpy(dst, src, (size_t)K * sizeof *dst);
            qsort(dst, (size_t)K, sizeof *dst, cmp_int);
        }
    return r;
}

/* The predictor's guesses [n_tok][n_layer][K] for layers 1.. (rank order), drawn in the engine's
 * order: token after token, at layer l the guess for l + 1. */
static int *build_guesses(const e0_trace *t, const e0_model *m, long n_tok, double p, uint64_t seed) {
    const int64_t L = m->hp.n_layer, K = m->hp.n_expert_used, X = m->hp.n_expert;
    int *g = calloc((size_t)n_tok * (size_t)L * (size_t)K, sizeof *g);
    if (!g) return NULL;
    uint64_t rng = seed;
    for (long s = 0; s < n_tok; s++)
        for (int64_t l = 1; l < L; l++)
            e0_trace_guess(e0_trace_experts(t, (uint64_t)s, e0_trace_layer_for(t, l, L)), K, X, p, &rng,
                           g + ((size_t)s * (size_t)L + (size_t)l) * (size_t)K);
    return g;
}

/* An oracle that knows the next `horizon` steps of routing, for one slot count: per layer, on a
 * miss evict the resident expert (not requested by the current step) whose next request is
 * farthest, a request more than `horizon` steps ahead (or none) counting as beyond the horizon;
 * ties, the beyond ones included, by the engine's LRFU (the lowest score, then the least recently
 * used, then the first slot: experts.c's rules, so horizon 0 is the engine's lrfu exactly).
 * horizon >= n_tok is Belady's optimum (which expert among those never requested again goes does
 * not change the count). Fills hits and misses; bytes = misses x the layer's expert bytes. */
static void lookahead(const e0_model *m, const int *reqs, long n_tok, const int64_t *lslots, long horizon, uint64_t *hits,
                      uint64_t *misses, uint64_t *bytes, uint64_t *layer_misses) {
    const int64_t L = m->hp.n_layer, K = m->hp.n_expert_used, X = m->hp.n_expert;
    long *next = malloc((size_t)n_tok * (size_t)K * sizeof *next); /* next step that requests the same id */
    long *upcoming = malloc((size_t)X * sizeof *upcoming);
    double *crf = malloc((size_t)X * sizeof *crf); /* LRFU score at step crf_at */
    long *crf_at = malloc((size_t)X * sizeof *crf_at), *used = malloc((size_t)X * sizeof *used);
    int *res = malloc((size_t)X * sizeof *res); /* the slots' experts, in slot order */
    *hits = *misses = *bytes = 0;
    if (!next || !upcoming || !crf || !crf_at || !used || !res) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t l = 0; l < L; l++) {
        const uint64_t eb = e0_expert_bytes(m, (int)l), misses0 = *misses;
        const int64_t slots = lslots[l];
#define REQ(s, k) reqs[((size_t)(s) * (size_t)L + (size_t)l) * (size_t)K + (size_t)(k)]
        for (int64_t x = 0; x < X; x++) upcoming[x] = n_tok, crf[x] = 0, crf_at[x] = 0, used[x] = -1; /* never */
        for (long s = n_tok - 1; s >= 0; s--)
            for (int64_t k = 0; k < K; k++) {
                next[(size_t)s * (size_t)K + (size_t)k] = upcoming[REQ(s, k)];
                upcoming[REQ(s, k)] = s;
            }
        /* upcoming[x] is now the first request of x; as steps pass it becomes the next one */
        int64_t n_res = 0;
        for (long s = 0; s < n_tok; s++) {
            const long clock = s + 1; /* the engine's per-layer acquire count */
            for (int64_t k = 0; k < K; k++) { /* every requested id counted first, as experts.c does */
                const int id = REQ(s, k);
                crf[id] = e0_lrfu_decay(crf[id], (uint64_t)(clock - crf_at[id])) + 1;
                crf_at[id] = clock;
                used[id] = s;
            }
            for (int64_t k = 0; k < K; k++) {
                int id = REQ(s, k);
                bool in = false;
                for (int64_t i = 0; i < n_res && !in; i++) in = res[i] == id;
                if (in) {
                    (*hits)++;
                    continue;
                }
                (*misses)++;
                *bytes += eb;
                if (n_res < slots) {
                    res[n_res++] = id;
                    continue;
                }
                int64_t victim = -1;
                long vfar = 0;
                double vscore = 0;
                for (int64_t i = 0; i < n_res; i++) {
                    const int x = res[i];
                    bool now = false; /* requested by this step: pinned */
                    for (int64_t r = 0; r < K; r++) now |= REQ(s, r) == x;
                    if (now) continue;
                    const long far = upcoming[x] - s > horizon ? horizon + 1 : upcoming[x] - s;
                    const double score = e0_lrfu_decay(crf[x], (uint64_t)(clock - crf_at[x]));
                    if (victim < 0 || far > vfar || (far == vfar && (score < vscore || (score == vscore && used[x] < used[res[victim]]))))
                        victim = i, vfar = far, vscore = score;
                }
                res[victim] = id; /* a victim exists: slots >= K */
            }
            for (int64_t k = 0; k < K; k++) upcoming[REQ(s, k)] = next[(size_t)s * (size_t)K + (size_t)k];
        }
#undef REQ
        if (layer_misses) layer_misses[l] = *misses - misses0;
    }
    free(next);
    free(upcoming);
    free(crf);
    free(crf_at);
    free(used);
    free(res);
}

static void belady_split(const e0_model *m, const int *reqs, long n_tok, const int64_t *lslots, uint64_t *hits,
                         uint64_t *misses, uint64_t *bytes, uint64_t *layer_misses) {
    lookahead(m, reqs, n_tok, lslots, n_tok, hits, misses, bytes, layer_misses);
}

/* --split-bound: how much per-layer slot counts (one total, L x slots) could buy. For Belady and
 * the engine's policy `ev`, the misses of every layer at every count from K to min(X, 3 x slots)
 * (curve [count - K][L]), then counts given greedily, one slot at a time, to the layer whose
 * curve drops most. Computed on the trace itself: an upper bound (an oracle split), not a policy
 * any engine could run online. Prints rows "<name>-split". */
static void split_bound(const e0_model *m, const int *reqs, long n_tok, int64_t slots, int ev, uint64_t bel_bytes) {
    const int64_t L = m->hp.n_layer, K = m->hp.n_expert_used, X = m->hp.n_expert;
    const int64_t smax = 3 * slots < X ? 3 * slots : X, nc = smax - K + 1;
    uint64_t *curve = malloc((size_t)nc * (size_t)L * sizeof *curve);
    int64_t *ls = malloc((size_t)L * sizeof *ls), *alloc = malloc((size_t)L * sizeof *alloc);
    e0_expert_ptrs *ptr = malloc((size_t)K * sizeof *ptr);
    if (!curve || !ls || !alloc || !ptr) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int pass = 0; pass < 2; pass++) { /* 0: belady, 1: the policy */
        double t0 = e0_now();
        for (int64_t c = 0; c < nc; c++) {
            uint64_t *cm = curve + (size_t)c * (size_t)L;
            if (pass == 0) {
                uint64_t h, mi, b;
                for (int64_t l = 0; l < L; l++) ls[l] = K + c;
                belady_split(m, reqs, n_tok, ls, &h, &mi, &b, cm);
                continue;
            }
            e0_err e = {0};
            e0_experts *x = e0_experts_new(m, &(e0_experts_params){.slots = K + c, .evict = ev}, &e);
            if (!x) {
                fprintf(stderr, "%s\n", e.msg);
                exit(1);
            }
            for (int64_t l = 0; l < L; l++) { /* layers are independent: one after the other */
                uint64_t m0 = e0_experts_get_stats(x)->misses;
                for (long s = 0; s < n_tok; s++) {
                    if (e0_experts_acquire(x, (int)l, reqs + ((size_t)s * (size_t)L + (size_t)l) * (size_t)K, (int)K, ptr, &e) < 0) {
                        fprintf(stderr, "%s\n", e.msg);
                        exit(1);
                    }
                    e0_experts_release(x, (int)l);
                }
                cm[l] = e0_experts_get_stats(x)->misses - m0;
            }
            e0_experts_free(x);
        }
        for (int64_t l = 0; l < L; l++) alloc[l] = K;
        for (int64_t left = L * (slots - K); left > 0; left--) {
            int64_t best = -1;
            uint64_t gain = 0;
            for (int64_t l = 0; l < L; l++) {
                if (alloc[l] >= smax) continue;
                uint64_t a = curve[(size_t)(alloc[l] - K) * (size_t)L + (size_t)l];
                uint64_t b = curve[(size_t)(alloc[l] + 1 - K) * (size_t)L + (size_t)l];
                uint64_t g = a > b ? a - b : 0;
                if (best < 0 || g > gain) best = l, gain = g;
            }
            if (best < 0) break;
            alloc[best]++;
        }
        uint64_t misses = 0, bytes = 0, req = (uint64_t)n_tok * (uint64_t)L * (uint64_t)K;
        int64_t lo = smax, hi = 0;
        for (int64_t l = 0; l < L; l++) {
            uint64_t mi = curve[(size_t)(alloc[l] - K) * (size_t)L + (size_t)l];
            misses += mi;
            bytes += mi * e0_expert_bytes(m, (int)l);
            lo = alloc[l] < lo ? alloc[l] : lo;
            hi = alloc[l] > hi ? alloc[l] : hi;
        }
        char name[32];
        snprintf(name, sizeof name, "%s-split", pass ? e0_evict_name(ev) : "belady");
        printf("%-12s %6lld %9.4f %10llu %10llu %10llu %12.2f %12.4f %9.3f %8.2f  (per-layer slots %lld..%lld)\n", name,
               (long long)slots, (double)(req - misses) / (double)req, (unsigned long long)(req - misses),
               (unsigned long long)req, (unsigned long long)misses, (double)bytes / 1e6, (double)bytes / 1e6 / (double)n_tok,
               bel_bytes ? (double)bytes / (double)bel_bytes : 0, e0_now() - t0, (long long)lo, (long long)hi);
    }
    free(curve);
    free(ls);
    free(alloc);
    free(ptr);
}

/* A list "A,B,.." of 1..max decimal counts from lo to hi into out: how many, or -1 (anything
 * else: a sign, a space, an empty item, a trailing ','). */
static int parse_counts(const char *s, long lo, long hi, long *out, int max) {
    int n = 0;
    do {
        char *end;
        if (*s < '0' || *s > '9' || n == max) return -1;
        const long v = strtol(s, &end, 10);
        if (v < lo || v > hi || (*end && (*end != ',' || !end[1]))) return -1;
        out[n++] = v;
        s = *end ? end + 1 : end;
    } while (*s);
    return n;
}

int main(int argc, char **argv) {
    const bool help = argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    if (argc < 3) {
        fprintf(help ? stdout : stderr,
                "usage: %s MODEL.gguf TRACE.csv [--slots A,B,..] [--tokens N] [--predict P] [--seed N] "
                "[--protect on|off] [--split-bound] [--extra-layers X] [--horizon H,..]\n"
                "Replays a routing trace's decode requests through the expert cache: hit rate and bytes read per\n"
                "token of the engine's policies and of Belady's optimum, per slot count.\n"
                "  --slots A,B,..     expert slots per layer (default: k, 2k, 4k, n_expert/2)\n"
                "  --tokens N         tokens to replay (default: the trace's; it cycles)\n"
                "  --predict P        predicted routing with a predictor right with probability P (--seed N)\n"
                "  --protect on|off   prediction-aware eviction (default on)\n"
                "  --split-bound      the best per-layer slot counts found on the trace itself (an oracle's bound)\n"
                "  --extra-layers X   X layers with one slot more, as the engine's budget rule spreads them\n"
                "  --horizon H,..     rows horizon-H: an oracle knowing the next H steps' routing (0: lrfu; all: Belady)\n",
                argv[0]);
        return help ? 0 : 1;
    }
    const char *slots_arg = NULL;
    long n_tok = 0;
    double predict = -1;
    uint64_t seed = 1;
    bool protect = true, split = false;
    long extra = 0;
    long horizons[32];
    int n_horizons = 0;
    for (int i = 3; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--slots") && i + 1 < argc) slots_arg = argv[++i];
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) {
            n_tok = strtol(argv[++i], &end, 10);
            if (*end || n_tok < 1 || n_tok > 100000000) {
                fprintf(stderr, "--tokens: expected a count from 1 to 100000000\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--predict") && i + 1 < argc) {
            predict = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(predict >= 0 && predict <= 1)) {
                fprintf(stderr, "--predict: expected a probability from 0 to 1\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 1) {
                fprintf(stderr, "--seed: expected a positive integer\n");
                return 1;
            }
            seed = (uint64_t)v;
        } else if (!strcmp(argv[i], "--extra-layers") && i + 1 < argc) {
            extra = strtol(argv[++i], &end, 10);
            if (*end || extra < 0 || extra > 100000) {
                fprintf(stderr, "--extra-layers: expected a count of layers\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--horizon") && i + 1 < argc) {
            if ((n_horizons = parse_counts(argv[++i], 0, 100000000, horizons, 32)) < 0) {
                fprintf(stderr, "--horizon: expected up to 32 step counts from 0 to 100000000, separated by ','\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--split-bound")) {
            split = true;
        } else if (!strcmp(argv[i], "--protect") && i + 1 < argc && (!strcmp(argv[i + 1], "on") || !strcmp(argv[i + 1], "off"))) {
            protect = !strcmp(argv[++i], "on");
        } else {
            fprintf(stderr, "unknown or incomplete argument '%s'\n", argv[i]);
            return 1;
        }
    }
    e0_err e = {0};
    e0_model *m = e0_model_load(argv[1], &(e0_model_params){.experts_resident = false}, true, &e);
    if (!m || !e0_model_is_moe(m)) {
        fprintf(stderr, "%s\n", m ? "not a MoE model" : e.msg);
        return 1;
    }
    const int64_t X = m->hp.n_expert, K = m->hp.n_expert_used, L = m->hp.n_layer;
    e0_trace *t = e0_trace_load(argv[2], &e);
    if (!t || e0_trace_check_model(t, X, K, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    if (!n_tok) n_tok = t->n_step;
    if (extra && (extra >= L - m->hp.n_layer_dense_lead || split)) {
        fprintf(stderr, "--extra-layers: at most %lld (the layers with experts less one), and not with --split-bound\n",
                (long long)(L - m->hp.n_layer_dense_lead - 1));
        return 1;
    }
    long slot_values[32] = {(long)K, (long)(2 * K), (long)(4 * K), (long)(X / 2)};
    int n_slots = 4;
    if (slots_arg && (n_slots = parse_counts(slots_arg, (long)K, (long)X, slot_values, 32)) < 0) {
        fprintf(stderr, "--slots: expected up to 32 counts from %lld (experts per token) to %lld, separated by ','\n",
                (long long)K, (long long)X);
        return 1;
    }
    int *guess = predict >= 0 ? build_guesses(t, m, n_tok, predict, seed) : NULL;
    int *reqs = predict < 0 || guess ? build_requests(t, m, n_tok, guess) : NULL;
    if (!reqs) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("# %s: E=%d k=%d, %d trace layers over %lld model layers, %ld tokens (trace steps %d, cycled), "
           "%lld experts per token",
           t->name, t->n_expert, t->k, t->n_layer, (long long)L, n_tok, t->n_step, (long long)K);
    if (predict >= 0) printf("; predicted routing, replay_predict=%g seed %llu, protect_predicted=%s", predict,
                             (unsigned long long)seed, protect ? "on" : "off");
    if (extra) printf("; one slot more in %ld layers", extra);
    printf("\n%-12s %6s %9s %10s %10s %10s %12s %12s %9s %8s\n", "policy", "slots", "hit_rate", "hits", "requests", "misses",
           "MB_read", "MB_per_token", "vs_belady", "seconds");
    e0_expert_ptrs *ptr = malloc((size_t)K * sizeof *ptr);
    int64_t *lslots = malloc((size_t)L * sizeof *lslots);
    for (int si = 0; si < n_slots && ptr && lslots; si++) {
        int64_t slots = slot_values[si];
        if (slots < K || slots > X || (extra && slots == X)) continue;
        const e0_experts_params lp = {.slots = slots, .extra_layers = extra};
        for (int64_t l = 0; l < L; l++) lslots[l] = e0_experts_layer_slots(m, &lp, (int)l);
        uint64_t bh, bm, bb;
        double t0 = e0_now();
        belady_split(m, reqs, n_tok, lslots, &bh, &bm, &bb, NULL);
        printf("%-12s %6lld %9.4f %10llu %10llu %10llu %12.2f %12.4f %9.3f %8.2f\n", "belady", (long long)slots,
               bh + bm ? (double)bh / (double)(bh + bm) : 0, (unsigned long long)bh, (unsigned long long)(bh + bm),
               (unsigned long long)bm, (double)bb / 1e6, (double)bb / 1e6 / (double)n_tok, 1.0, e0_now() - t0);
        for (int ev = 0; ev < E0_EVICT_COUNT; ev++) {
            e0_experts *x = e0_experts_new(
                m, &(e0_experts_params){.slots = slots, .extra_layers = extra, .evict = ev, .protect_predicted = protect}, &e);
            if (!x) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            t0 = e0_now();
            for (long s = 0; s < n_tok; s++)
                for (int64_t l = 0; l < L; l++) {
                    size_t at = ((size_t)s * (size_t)L + (size_t)l) * (size_t)K;
                    if (guess && l + 1 < L) e0_experts_prefetch(x, (int)l + 1, guess + at + (size_t)K, (int)K);
                    if (e0_experts_acquire(x, (int)l, reqs + at, (int)K, ptr, &e) < 0) {
                        fprintf(stderr, "%s\n", e.msg);
                        return 1;
                    }
                    e0_experts_release(x, (int)l);
                }
            const e0_experts_stats *st = e0_experts_get_stats(x);
            printf("%-12s %6lld %9.4f %10llu %10llu %10llu %12.2f %12.4f %9.3f %8.2f\n", e0_evict_name(ev), (long long)slots,
                   st->requests ? (double)st->hits / (double)st->requests : 0, (unsigned long long)st->hits,
                   (unsigned long long)st->requests, (unsigned long long)st->misses, (double)st->bytes_read / 1e6,
                   (double)st->bytes_read / 1e6 / (double)n_tok, bb ? (double)st->bytes_read / (double)bb : 0,
                   e0_now() - t0);
            e0_experts_free(x);
        }
        for (int hi = 0; hi < n_horizons; hi++) {
            uint64_t hh, hm, hb;
            char name[32];
            t0 = e0_now();
            lookahead(m, reqs, n_tok, lslots, horizons[hi], &hh, &hm, &hb, NULL);
            snprintf(name, sizeof name, "horizon-%ld", horizons[hi]);
            printf("%-12s %6lld %9.4f %10llu %10llu %10llu %12.2f %12.4f %9.3f %8.2f\n", name, (long long)slots,
                   hh + hm ? (double)hh / (double)(hh + hm) : 0, (unsigned long long)hh, (unsigned long long)(hh + hm),
                   (unsigned long long)hm, (double)hb / 1e6, (double)hb / 1e6 / (double)n_tok, bb ? (double)hb / (double)bb : 0,
                   e0_now() - t0);
        }
        if (split && !guess) split_bound(m, reqs, n_tok, slots, E0_EVICT_LRFU, bb);
    }
    free(ptr);
    free(lslots);
    free(reqs);
    free(guess);
    e0_trace_free(t);
    e0_model_free(m);
    return 0;
}
