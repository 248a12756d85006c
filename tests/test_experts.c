/* test_experts.c — the routed-expert cache (experts.c) on the golden MoE models: every pointer
 * acquire returns holds exactly the resident copy's bytes (random expert sets, random layers,
 * several slot counts, cached and O_DIRECT reads, LRU and LFU), pins keep pointers stable,
 * prefetch turns misses into hits, the counters add up, eviction follows the policy, and the
 * error paths (bad slots, too many experts, bad ids, a file truncated after load) are clear; the
 * large buffers slots live in start on 2 MiB and ask for transparent huge pages. */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/experts.h"
#include "quant/quant.h"
#include "t.h"

static const char *const models[] = {"llama-moe.gguf", "qwen3moe.gguf", "qwen2moe.gguf", "stories260K-moe4.gguf"};
#define N_MODELS (int)(sizeof models / sizeof models[0])

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

typedef struct pair {
    e0_model *res, *str; /* experts resident (the reference) / streamed */
} pair;

static int load_pair(const char *name, pair *p) {
    char path[512];
    snprintf(path, sizeof path, "%s/golden/%s", t_shared(), name);
    e0_err e = {0};
    p->res = e0_model_load(path, &(e0_model_params){.experts_resident = true}, true, &e);
    CHECKF(p->res, "%s", e.msg);
    p->str = e0_model_load(path, &(e0_model_params){.experts_resident = false}, true, &e);
    CHECKF(p->str, "%s", e.msg);
    if (p->str) CHECK(p->str->expert_buf == NULL);
    return p->res && p->str ? 0 : -1;
}

static void free_pair(pair *p) {
    e0_model_free(p->res);
    e0_model_free(p->str);
}

/* Do the three matrices at ptr equal the resident copy of expert id of layer il? */
static bool same_bytes(const e0_model *res, int il, int id, const e0_expert_ptrs *ptr) {
    const e0_layer *L = &res->layers[il];
    return !memcmp(ptr->gate, e0_expert_matrix(&L->gate_exps, id), L->gate_exps.matrix_bytes) &&
           !memcmp(ptr->up, e0_expert_matrix(&L->up_exps, id), L->up_exps.matrix_bytes) &&
           !memcmp(ptr->down, e0_expert_matrix(&L->down_exps, id), L->down_exps.matrix_bytes);
}

static void random_distinct(int *ids, int n, int n_expert) {
    for (int i = 0; i < n; i++) {
        int again;
        do {
            ids[i] = (int)rnd((uint32_t)n_expert);
            again = 0;
            for (int j = 0; j < i; j++) again |= ids[j] == ids[i];
        } while (again);
    }
}

/* Many steps of random acquires (sometimes two per layer before release, sometimes a prefetch
 * first) against one cache configuration; checks bytes, pointer stability and the counters. */
static void exercise(const pair *p, int64_t slots, int read_mode, int evict, int n_io_threads, int steps) {
    const e0_hparams *hp = &p->str->hp;
    e0_err e = {0};
    e0_experts_params params = {.slots = slots, .read_mode = read_mode, .evict = evict, .n_io_threads = n_io_threads};
    size_t mem0 = e0_mem_current(E0_MEM_EXPERTS) + e0_mem_current(E0_MEM_STAGING);
    e0_experts *x = e0_experts_new(p->str, &params, &e);
    CHECKF(x, "%s", e.msg);
    if (!x) return;
    size_t mem = e0_mem_current(E0_MEM_EXPERTS) + e0_mem_current(E0_MEM_STAGING) - mem0;
    CHECKF(mem == e0_experts_memory(p->str, &params), "ledger %zu, predicted %llu", mem,
           (unsigned long long)e0_experts_memory(p->str, &params));
    CHECK(mem >= (size_t)slots * hp->n_layer * e0_expert_bytes(p->str, 0));
    const char *why;
    int mode = e0_experts_read_mode(x, &why);
    CHECK(mode == read_mode || (mode == E0_READ_CACHED && why && *why));
    int n_expert = (int)hp->n_expert, k = (int)hp->n_expert_used;
    int ids[64], ids2[64];
    uint64_t want_bytes = 0;
    bool seen[64][64] = {{false}};
    uint64_t distinct = 0;
    for (int step = 0; step < steps; step++) {
        int il = (int)rnd((uint32_t)hp->n_layer);
        uint64_t eb = e0_expert_bytes(p->str, il);
        e0_experts_stats before = *e0_experts_get_stats(x);
        if (rnd(4) == 0) { /* prefetch some ids first */
            int np = 1 + (int)rnd((uint32_t)n_expert);
            random_distinct(ids2, np, n_expert);
            e0_experts_prefetch(x, il, ids2, np);
        }
        int max_n = slots < k ? (int)slots : k;
        int n = 1 + (int)rnd((uint32_t)max_n);
        random_distinct(ids, n, n_expert);
        if (n > 1 && rnd(3) == 0) ids[n - 1] = ids[0]; /* a repeated id */
        e0_expert_ptrs ptr[64], ptr2[64];
        int rc = e0_experts_acquire(x, il, ids, n, ptr, &e);
        CHECKF(rc == 0, "%s", e.msg);
        if (rc) break;
        for (int i = 0; i < n; i++) {
            CHECKF(same_bytes(p->res, il, ids[i], &ptr[i]), "layer %d expert %d", il, ids[i]);
            if (!seen[il][ids[i]]) distinct++;
            seen[il][ids[i]] = true;
        }
        /* A second acquire in the same layer while the first is pinned, if it fits. */
        int free_slots = (int)slots - n;
        if (free_slots > 0 && rnd(2) == 0) {
            int n2 = 1 + (int)rnd((uint32_t)(free_slots < k ? free_slots : k));
            random_distinct(ids2, n2, n_expert);
            rc = e0_experts_acquire(x, il, ids2, n2, ptr2, &e);
            CHECKF(rc == 0, "%s", e.msg);
            for (int i = 0; rc == 0 && i < n2; i++) {
                CHECKF(same_bytes(p->res, il, ids2[i], &ptr2[i]), "layer %d expert %d", il, ids2[i]);
                if (!seen[il][ids2[i]]) distinct++;
                seen[il][ids2[i]] = true;
            }
            e0_expert_ptrs again[64];
            rc = e0_experts_acquire(x, il, ids, n, again, &e); /* still pinned: same pointers */
            CHECKF(rc == 0, "%s", e.msg);
            for (int i = 0; rc == 0 && i < n; i++)
                CHECK(again[i].gate == ptr[i].gate && again[i].up == ptr[i].up && again[i].down == ptr[i].down);
            for (int i = 0; i < n; i++) CHECKF(same_bytes(p->res, il, ids[i], &ptr[i]), "pinned expert %d changed", ids[i]);
        }
        e0_experts_release(x, il);
        const e0_experts_stats *st = e0_experts_get_stats(x);
        want_bytes += (st->misses - before.misses + st->prefetched - before.prefetched) * eb;
    }
    const e0_experts_stats *st = e0_experts_get_stats(x);
    CHECKF(st->hits + st->misses == st->requests, "hits %llu misses %llu requests %llu", (unsigned long long)st->hits,
           (unsigned long long)st->misses, (unsigned long long)st->requests);
    CHECK(st->bytes_read == want_bytes);
    CHECK(st->reads == 3 * (st->misses + st->prefetched));
    CHECK(st->prefetch_hits <= st->hits && st->prefetch_hits <= st->prefetched);
    if (mode == E0_READ_CACHED) CHECK(st->bytes_device == st->bytes_read);
    else CHECK(st->bytes_device >= st->bytes_read);
    if (slots == hp->n_expert) { /* nothing is ever evicted: each expert is read at most once */
        CHECK(st->evictions == 0);
        CHECKF(st->misses + st->prefetched <= (uint64_t)hp->n_layer * (uint64_t)n_expert, "%llu reads",
               (unsigned long long)(st->misses + st->prefetched));
        CHECK(st->misses <= distinct);
    }
    e0_experts_free(x);
}

static void test_random_sets(void) {
    unsigned unaligned_models = 0;
    for (int mi = 0; mi < N_MODELS; mi++) {
        pair p;
        if (load_pair(models[mi], &p) == 0) {
            const e0_hparams *hp = &p.str->hp;
            CHECK(hp->n_expert <= 64 && hp->n_layer <= 64);
            if (hp->n_expert > 64 || hp->n_layer > 64) {
                free_pair(&p);
                continue;
            }
            int64_t k = hp->n_expert_used, X = hp->n_expert;
            int64_t slot_values[] = {k, k + 1 < X ? k + 1 : X, (k + X) / 2, X};
            int io_threads[4] = {1, 0, 3, 16}; /* 0 = the default */
            for (int si = 0; si < 4; si++)
                for (int mode = 0; mode < 2; mode++)
                    for (int ev = 0; ev < E0_EVICT_COUNT; ev++) exercise(&p, slot_values[si], mode, ev, io_threads[(si + mode) % 4], 150);
            /* matrices that are not whole pages: O_DIRECT reads start and end inside pages and
             * each expert sits at its own offset within its region (checked below: some model) */
            for (int il = 0; il < hp->n_layer; il++)
                for (int q = 0; q < 3; q++) {
                    const e0_layer *L = &p.str->layers[il];
                    const e0_weight *w = q == 0 ? &L->gate_exps : q == 1 ? &L->up_exps : &L->down_exps;
                    if (w->matrix_bytes % 4096) unaligned_models |= 1u << mi;
                }
            uint64_t eb = 0;
            for (int il = 0; il < hp->n_layer; il++) {
                const e0_layer *L = &p.str->layers[il];
                eb = L->gate_exps.matrix_bytes + L->up_exps.matrix_bytes + L->down_exps.matrix_bytes;
                CHECK(e0_expert_bytes(p.str, il) == eb);
            }
            CHECK(e0_expert_bytes(p.str, -1) == 0 && e0_expert_bytes(p.str, (int)hp->n_layer) == 0);
        }
        free_pair(&p);
    }
    CHECKF(unaligned_models, "no model has expert matrices that are not whole pages");
}

static e0_experts *new_cache(const e0_model *m, int64_t slots, int mode, int evict) {
    e0_err e = {0};
    e0_experts *x = e0_experts_new(m, &(e0_experts_params){.slots = slots, .read_mode = mode, .evict = evict}, &e);
    CHECKF(x, "%s", e.msg);
    return x;
}

static int acquire1(e0_experts *x, int il, int id) {
    e0_expert_ptrs ptr;
    e0_err e = {0};
    int rc = e0_experts_acquire(x, il, &id, 1, &ptr, &e);
    CHECKF(rc == 0, "%s", e.msg);
    e0_experts_release(x, il);
    return rc;
}

/* Two slots: LRU evicts the least recently used, LFU the least often used. */
static void test_eviction_order(void) {
    pair p;
    if (load_pair("qwen3moe.gguf", &p) == 0) {
        for (int ev = 0; ev < 2; ev++) {
            e0_experts *x = new_cache(p.str, 2, E0_READ_CACHED, ev);
            if (!x) continue;
            acquire1(x, 0, 0);
            acquire1(x, 0, 0);
            acquire1(x, 0, 0);
            acquire1(x, 0, 1); /* 1 is the most recent, 0 the most frequent */
            acquire1(x, 0, 2);
            bool r0 = e0_experts_resident(x, 0, 0), r1 = e0_experts_resident(x, 0, 1);
            CHECK(e0_experts_resident(x, 0, 2));
            if (ev == E0_EVICT_LRU) CHECKF(!r0 && r1, "LRU kept %d %d", r0, r1);
            else CHECKF(r0 && !r1, "LFU kept %d %d", r0, r1);
            const e0_experts_stats *st = e0_experts_get_stats(x);
            CHECK(st->evictions == 1 && st->misses == 3 && st->hits == 2 && st->requests == 5);
            CHECK(!e0_experts_resident(x, 1, 0)); /* layers are separate */
            e0_experts_reset_stats(x);
            CHECK(e0_experts_get_stats(x)->requests == 0);
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

/* Every policy against a reference written from its definition (experts.h): one expert per
 * acquire (so no two residents share a last use), skewed random ids on one layer; after each
 * acquire the resident set must be the reference's. */
static void test_policy_reference(void) {
    pair p;
    if (load_pair("qwen3moe.gguf", &p) == 0) {
        const int X = (int)p.str->hp.n_expert;
        CHECK(X <= 64);
        for (int ev = 0; ev < E0_EVICT_COUNT && X <= 64; ev++)
            for (int S = 2; S <= 5; S += 3) {
                e0_experts *x = new_cache(p.str, S, E0_READ_CACHED, ev);
                if (!x) continue;
                bool res[64] = {0};
                uint32_t freq[64] = {0};
                uint64_t last[64] = {0}, crf_at[64] = {0}, requests = 0;
                double crf[64] = {0};
                int n_res = 0, bad = -1;
                for (uint64_t clock = 1; clock <= 400 && bad < 0; clock++) {
                    int id = rnd(3) ? (int)rnd((uint32_t)(X / 3 + 1)) : (int)rnd((uint32_t)X); /* skewed */
                    /* the use is counted first (hit or miss), as acquire does */
                    crf[id] = crf[id] * exp2(-E0_LRFU_LAMBDA * (double)(clock - crf_at[id])) + 1;
                    crf_at[id] = clock;
                    freq[id]++;
                    if (++requests >= 4 * (uint64_t)X) {
                        for (int i = 0; i < X; i++) freq[i] >>= 1;
                        requests = 0;
                    }
                    if (!res[id] && n_res == S) {
                        int victim = -1;
                        bool vpin = false;
                        for (int i = 0; i < X; i++) {
                            if (!res[i]) continue;
                            int above = 0;
                            for (int j = 0; j < X; j++) above += freq[j] > freq[i];
                            bool pin = ev == E0_EVICT_PIN && freq[i] && above < S * 3 / 4;
                            bool better = victim < 0;
                            if (!better && ev == E0_EVICT_LFU && freq[i] != freq[victim]) better = freq[i] < freq[victim];
                            else if (!better && ev == E0_EVICT_LRFU) {
                                double si = crf[i] * exp2(-E0_LRFU_LAMBDA * (double)(clock - crf_at[i]));
                                double sv = crf[victim] * exp2(-E0_LRFU_LAMBDA * (double)(clock - crf_at[victim]));
                                better = si != sv ? si < sv : last[i] < last[victim];
                            } else if (!better && ev == E0_EVICT_PIN && pin != vpin) better = vpin;
                            else if (!better) better = last[i] < last[victim];
                            if (better) victim = i, vpin = pin;
                        }
                        res[victim] = false;
                        n_res--;
                    }
                    if (!res[id]) res[id] = true, n_res++;
                    last[id] = clock;
                    if (acquire1(x, 0, id) < 0) break;
                    for (int i = 0; i < X && bad < 0; i++)
                        if (e0_experts_resident(x, 0, i) != res[i]) bad = i;
                    CHECKF(bad < 0, "%s, %d slots, step %llu: expert %d resident %d, reference %d", e0_evict_name(ev), S,
                           (unsigned long long)clock, bad, bad >= 0 && e0_experts_resident(x, 0, bad), bad >= 0 && res[bad]);
                }
                e0_experts_free(x);
            }
    }
    free_pair(&p);
}

/* Wait (up to 10 s) until a prefetched expert is read. */
static bool wait_resident(const e0_experts *x, int il, int id) {
    for (int i = 0; i < 10000; i++) {
        if (e0_experts_resident(x, il, id)) return true;
        usleep(1000);
    }
    return false;
}

/* Prediction-aware eviction: a prefetch never evicts an expert the layer's latest prefetch named
 * (with LFU, unused prefetched experts have the lowest counts, so without the protection a
 * prefetched expert evicts another one just predicted); an acquire takes them only when nothing
 * else is left, and the next prediction replaces the protected set. */
static void test_protect_predicted(void) {
    pair p;
    if (load_pair("qwen3moe.gguf", &p) == 0) {
        for (int protect = 0; protect < 2; protect++) {
            e0_err e = {0};
            e0_experts *x = e0_experts_new(
                p.str, &(e0_experts_params){.slots = 4, .evict = E0_EVICT_LFU, .protect_predicted = protect}, &e);
            CHECKF(x, "%s", e.msg);
            if (!x) continue;
            for (int r = 0; r < 3; r++) acquire1(x, 0, 0), acquire1(x, 0, 1); /* 0 and 1: counts 3 */
            int pred[3] = {4, 5, 6};
            e0_experts_prefetch(x, 0, pred, 2); /* the 2 empty slots */
            CHECK(wait_resident(x, 0, 4) && wait_resident(x, 0, 5));
            e0_experts_prefetch(x, 0, pred, 3); /* 4, 5 resident; 6 needs a victim */
            CHECK(wait_resident(x, 0, 6));
            bool kept = e0_experts_resident(x, 0, 4) && e0_experts_resident(x, 0, 5);
            if (!protect) {
                CHECKF(!kept, "without protection LFU evicts the prefetched 4 or 5 (count 0)");
                e0_experts_free(x);
                continue;
            }
            CHECKF(kept && !e0_experts_resident(x, 0, 0) && e0_experts_resident(x, 0, 1), "the unpredicted 0 goes");
            acquire1(x, 0, 7); /* evicts 1, the only unpredicted one */
            CHECK(!e0_experts_resident(x, 0, 1) && e0_experts_resident(x, 0, 7));
            CHECK(e0_experts_resident(x, 0, 4) && e0_experts_resident(x, 0, 5) && e0_experts_resident(x, 0, 6));
            /* two misses at once: 7 goes first, then (nothing else left) one predicted expert */
            int two[2] = {8, 9};
            e0_expert_ptrs ptr[2];
            CHECKF(e0_experts_acquire(x, 0, two, 2, ptr, &e) == 0, "%s", e.msg);
            e0_experts_release(x, 0);
            int left = e0_experts_resident(x, 0, 4) + e0_experts_resident(x, 0, 5) + e0_experts_resident(x, 0, 6);
            CHECK(left == 2 && !e0_experts_resident(x, 0, 7) && e0_experts_resident(x, 0, 8) && e0_experts_resident(x, 0, 9));
            /* a new prediction replaces the old one: a leftover of 4..6 (count 0) goes, not 8 or 9 */
            int pred2[1] = {2};
            e0_experts_prefetch(x, 0, pred2, 1);
            CHECK(wait_resident(x, 0, 2));
            left = e0_experts_resident(x, 0, 4) + e0_experts_resident(x, 0, 5) + e0_experts_resident(x, 0, 6);
            CHECK(left == 1 && e0_experts_resident(x, 0, 8) && e0_experts_resident(x, 0, 9));
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

/* A prefetch marks every named expert it already holds before reading the missing ones: naming a
 * missing expert before a resident one (a batch's ranked union) does not evict the resident one
 * to read it back. With LRU, 0 is the victim after 0, 1; prefetch {2, 0} keeps 0, evicts 1 and
 * reads once. */
static void test_prefetch_keeps_named(void) {
    pair p;
    if (load_pair("qwen3moe.gguf", &p) == 0) {
        e0_err e = {0};
        e0_experts *x = e0_experts_new(p.str, &(e0_experts_params){.slots = 2, .evict = E0_EVICT_LRU, .protect_predicted = 1}, &e);
        CHECKF(x, "%s", e.msg);
        if (x) {
            acquire1(x, 0, 0), acquire1(x, 0, 1);
            const uint64_t before = e0_experts_get_stats(x)->prefetched;
            int named[2] = {2, 0};
            e0_experts_prefetch(x, 0, named, 2);
            CHECK(wait_resident(x, 0, 2) && wait_resident(x, 0, 0) && !e0_experts_resident(x, 0, 1));
            CHECKF(e0_experts_get_stats(x)->prefetched - before == 1, "%llu reads for one missing expert",
                   (unsigned long long)(e0_experts_get_stats(x)->prefetched - before));
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

/* Prefetch then acquire: hits, no second read (also when acquire comes while the read is in flight). */
static void test_prefetch(void) {
    pair p;
    if (load_pair("qwen3moe.gguf", &p) == 0) {
        const e0_hparams *hp = &p.str->hp;
        int k = (int)hp->n_expert_used;
        for (int mode = 0; mode < 2; mode++) {
            e0_experts *x = new_cache(p.str, hp->n_expert, mode, E0_EVICT_LRU);
            if (!x) continue;
            int ids[16];
            for (int i = 0; i < k; i++) ids[i] = 2 * i + 1;
            e0_experts_prefetch(x, 1, ids, k);
            e0_expert_ptrs ptr[16];
            e0_err e = {0};
            CHECKF(e0_experts_acquire(x, 1, ids, k, ptr, &e) == 0, "%s", e.msg); /* may still be in flight */
            for (int i = 0; i < k; i++) CHECK(same_bytes(p.res, 1, ids[i], &ptr[i]));
            const e0_experts_stats *st = e0_experts_get_stats(x);
            CHECK(st->hits == (uint64_t)k && st->misses == 0 && st->prefetched == (uint64_t)k);
            CHECK(st->prefetch_hits == (uint64_t)k && st->reads == 3 * (uint64_t)k);
            e0_experts_prefetch(x, 1, ids, k); /* already resident: nothing to do */
            CHECK(st->prefetched == (uint64_t)k);
            e0_experts_release(x, 1);
            e0_experts_free(x);
        }
        /* All slots pinned: prefetch reads nothing and the pinned experts stay intact. */
        e0_experts *x = new_cache(p.str, k, E0_READ_CACHED, E0_EVICT_LRU);
        if (x) {
            int ids[16], other[16];
            for (int i = 0; i < k; i++) ids[i] = i, other[i] = k + i;
            e0_expert_ptrs ptr[16];
            e0_err e = {0};
            CHECKF(e0_experts_acquire(x, 0, ids, k, ptr, &e) == 0, "%s", e.msg);
            e0_experts_prefetch(x, 0, other, k);
            CHECK(e0_experts_get_stats(x)->prefetched == 0);
            for (int i = 0; i < k; i++) CHECK(same_bytes(p.res, 0, ids[i], &ptr[i]));
            e0_experts_release(x, 0);
            e0_experts_prefetch(x, 0, other, k); /* now it may evict */
            CHECK(e0_experts_get_stats(x)->prefetched == (uint64_t)k);
            CHECKF(e0_experts_acquire(x, 0, other, k, ptr, &e) == 0, "%s", e.msg);
            for (int i = 0; i < k; i++) CHECK(same_bytes(p.res, 0, other[i], &ptr[i]));
            CHECK(e0_experts_get_stats(x)->misses == (uint64_t)k); /* only the first acquire missed */
            e0_experts_release(x, 0);
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

static void test_errors(void) {
    pair p;
    if (load_pair("llama-moe.gguf", &p) == 0) {
        const e0_hparams *hp = &p.str->hp;
        e0_err e = {0};
        size_t exp0 = e0_mem_current(E0_MEM_EXPERTS), stg0 = e0_mem_current(E0_MEM_STAGING);
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = 0}, &e) && strstr(e.msg, "expert_slots"));
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = hp->n_expert + 1}, &e) && strstr(e.msg, "out of range"));
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = 2, .read_mode = 7}, &e));
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = 2, .evict = 7}, &e));
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = 2, .n_io_threads = 1000}, &e));
        char dense[512];
        snprintf(dense, sizeof dense, "%s/golden/llama-dense.gguf", t_shared());
        e0_model *d = e0_model_load(dense, NULL, true, &e);
        CHECK(d && !e0_experts_new(d, &(e0_experts_params){.slots = 1}, &e) && strstr(e.msg, "no routed experts"));
        e0_model_free(d);

        int k = (int)hp->n_expert_used;
        e0_experts *x = new_cache(p.str, k, E0_READ_DIRECT, E0_EVICT_LRU);
        if (x) {
            CHECK(e0_mem_current(E0_MEM_EXPERTS) > exp0);
            int ids[16];
            e0_expert_ptrs ptr[16];
            for (int i = 0; i <= k; i++) ids[i] = i;
            CHECK(e0_experts_acquire(x, 0, ids, k + 1, ptr, &e) < 0 && strstr(e.msg, "slots"));
            ids[0] = -1;
            CHECK(e0_experts_acquire(x, 0, ids, 1, ptr, &e) < 0 && strstr(e.msg, "out of range"));
            ids[0] = (int)hp->n_expert;
            CHECK(e0_experts_acquire(x, 0, ids, 1, ptr, &e) < 0 && strstr(e.msg, "out of range"));
            ids[0] = 0;
            CHECK(e0_experts_acquire(x, (int)hp->n_layer, ids, 1, ptr, &e) < 0 && strstr(e.msg, "layer"));
            /* Pins add up: k pinned, one more distinct is too many, a pinned one again is fine. */
            for (int i = 0; i < k; i++) ids[i] = i;
            CHECKF(e0_experts_acquire(x, 0, ids, k, ptr, &e) == 0, "%s", e.msg);
            ids[0] = k;
            CHECK(e0_experts_acquire(x, 0, ids, 1, ptr, &e) < 0 && strstr(e.msg, "already pinned"));
            ids[0] = 0;
            CHECKF(e0_experts_acquire(x, 0, ids, 1, ptr, &e) == 0, "%s", e.msg);
            e0_experts_release(x, 0);
            ids[0] = k;
            CHECKF(e0_experts_acquire(x, 0, ids, 1, ptr, &e) == 0, "%s", e.msg);
            CHECK(e0_experts_acquire(x, 0, ids, 0, ptr, &e) == 0);
            e0_experts_release(x, 0);
            e0_experts_free(x);
        }
        CHECK(e0_mem_current(E0_MEM_EXPERTS) == exp0 && e0_mem_current(E0_MEM_STAGING) == stg0);
    }
    free_pair(&p);
}

/* extra_layers: X of the layers have one slot more, spread over the depth; the ledger holds what
 * e0_experts_memory says; each layer takes as many distinct experts as its own slots, no more;
 * what an acquire pinned is held. Out-of-range counts are refused. */
static void test_extra_layers(void) {
    for (int mi = 0; mi < N_MODELS; mi++) {
        pair p;
        if (load_pair(models[mi], &p) < 0) {
            free_pair(&p);
            continue;
        }
        const e0_hparams *hp = &p.str->hp;
        const int L = (int)hp->n_layer, N = (int)hp->n_expert_used;
        e0_err e = {0};
        for (int X = 0; X < L; X++) {
            const e0_experts_params params = {.slots = N, .extra_layers = X};
            size_t mem0 = e0_mem_current(E0_MEM_EXPERTS);
            e0_experts *x = e0_experts_new(p.str, &params, &e);
            CHECKF(x, "%s", e.msg);
            if (!x) break;
            CHECK(e0_mem_current(E0_MEM_EXPERTS) - mem0 == e0_experts_memory(p.str, &params));
            int total = 0, first = -1, last = -1;
            for (int il = 0; il < L; il++) {
                const int ns = e0_experts_slots(x, il);
                CHECK(ns == e0_experts_layer_slots(p.str, &params, il) && (ns == N || ns == N + 1));
                total += ns;
                if (ns == N + 1) last = il, first = first < 0 ? il : first;
                int ids[64];
                e0_expert_ptrs ptr[64];
                for (int i = 0; i <= ns; i++) ids[i] = i;
                CHECKF(e0_experts_acquire(x, il, ids, ns, ptr, &e) == 0, "%s layer %d, %d slots: %s", models[mi], il, ns, e.msg);
                for (int i = 0; i < ns; i++) CHECK(e0_experts_held(x, il, i) && same_bytes(p.res, il, i, &ptr[i]));
                CHECK(!e0_experts_held(x, il, ns));
                CHECK(e0_experts_acquire(x, il, ids + ns, 1, ptr, &e) < 0 && strstr(e.msg, "slots"));
                e0_experts_release(x, il);
            }
            CHECKF(total == N * L + X, "%s, %d extra: %d slots in all", models[mi], X, total);
            if (X >= 2) CHECKF(first < L / 2 && last >= L / 2, "%s, %d extra: layers %d..%d", models[mi], X, first, last);
            CHECK(e0_experts_slots(x, -1) == 0 && e0_experts_slots(x, L) == 0);
            e0_experts_free(x);
        }
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = N, .extra_layers = L}, &e) && strstr(e.msg, "extra slot"));
        CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = N, .extra_layers = -1}, &e) && strstr(e.msg, "extra slot"));
        if (L > 1)
            CHECK(!e0_experts_new(p.str, &(e0_experts_params){.slots = hp->n_expert, .extra_layers = 1}, &e) &&
                  strstr(e.msg, "extra slot"));
        free_pair(&p);
    }
}

/* A file system that refuses O_DIRECT: the cache says why and reads through the page cache. */
static void test_direct_fallback(void) {
    pair p;
    if (load_pair("qwen2moe.gguf", &p) == 0) {
        size_t stg0 = e0_mem_current(E0_MEM_STAGING);
        e0_experts_test_refuse_direct(true);
        e0_experts *x = new_cache(p.str, p.str->hp.n_expert_used, E0_READ_DIRECT, E0_EVICT_LRU);
        e0_experts_test_refuse_direct(false);
        if (x) {
            const char *why = NULL;
            CHECK(e0_experts_read_mode(x, &why) == E0_READ_CACHED);
            CHECKF(why && strstr(why, "O_DIRECT") && strstr(why, "Invalid argument"), "why: %s", why ? why : "(null)");
            CHECK(e0_mem_current(E0_MEM_STAGING) == stg0);
            int ids[2] = {1, 3};
            e0_expert_ptrs ptr[2];
            e0_err e = {0};
            CHECKF(e0_experts_acquire(x, 1, ids, 2, ptr, &e) == 0, "%s", e.msg);
            CHECK(same_bytes(p.res, 1, 1, &ptr[0]) && same_bytes(p.res, 1, 3, &ptr[1]));
            e0_experts_free(x);
        }
        x = new_cache(p.str, p.str->hp.n_expert_used, E0_READ_DIRECT, E0_EVICT_LRU);
        if (x) {
            const char *why = "x";
            int mode = e0_experts_read_mode(x, &why);
            if (mode == E0_READ_DIRECT) CHECK(why == NULL);
            else printf("  note: O_DIRECT not available here: %s\n", why);
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

/* acquire in two steps (acquire_begin, then take_ready in turns): an expert already resident
 * comes in the first turn, every expert begun comes exactly once with its exact bytes, the
 * counters are those of one acquire, and the errors: an id not begun, too many experts (nothing
 * pinned), a read error (every pin of the layer released). */
static void test_take_ready(void) {
    pair p;
    if (load_pair(models[1], &p) == 0) {
        const e0_hparams *hp = &p.str->hp;
        const int X = (int)hp->n_expert, k = (int)hp->n_expert_used, il = (int)hp->n_layer - 1;
        CHECK(k >= 2 && X >= k + 2);
        e0_err e = {0};
        for (int mode = 0; mode < 2; mode++) {
            e0_experts *x = new_cache(p.str, k + 1, mode, E0_EVICT_LRU);
            if (!x) continue;
            for (int round = 0; round < 20; round++) {
                int held = (int)rnd((uint32_t)X);
                CHECK(acquire1(x, il, held) == 0);
                e0_experts_release(x, il);
                int ids[64], taken[64] = {0}, n = k;
                random_distinct(ids, n, X);
                ids[(int)rnd((uint32_t)n)] = held; /* one of them is resident */
                for (int i = 0; i < n; i++)
                    for (int j = 0; j < i; j++)
                        if (ids[i] == ids[j]) ids[i] = -1;
                int m = 0; /* drop the duplicates the substitution made */
                for (int i = 0; i < n; i++)
                    if (ids[i] >= 0) ids[m++] = ids[i];
                n = m;
                e0_experts_stats before = *e0_experts_get_stats(x);
                CHECKF(e0_experts_acquire_begin(x, il, ids, n, &e) == 0, "%s", e.msg);
                int order[64];
                memcpy(order, ids, sizeof ids);
                for (int done = 0, turn = 0; done < n; turn++) {
                    e0_expert_ptrs ptr[64];
                    int r = e0_experts_take_ready(x, il, order + done, n - done, ptr, &e);
                    CHECKF(r >= 1 && r <= n - done, "turn %d: %d (%s)", turn, r, r < 0 ? e.msg : "");
                    if (r < 1) break;
                    for (int i = 0; i < r; i++) {
                        int id = order[done + i];
                        CHECKF(same_bytes(p.res, il, id, &ptr[i]), "expert %d", id);
                        CHECK(e0_experts_resident(x, il, id));
                        if (turn == 0 && id == held) taken[0] = 1;
                    }
                    if (turn == 0) CHECKF(taken[0], "the resident expert %d was not in the first turn", held);
                    done += r;
                }
                for (int i = 0; i < n; i++) { /* each exactly once */
                    int c = 0;
                    for (int j = 0; j < n; j++) c += order[j] == ids[i];
                    CHECK(c == 1);
                }
                const e0_experts_stats *st = e0_experts_get_stats(x);
                CHECK(st->requests - before.requests == (uint64_t)n);
                CHECK(st->hits - before.hits >= 1 && st->hits + st->misses == st->requests);
                e0_expert_ptrs one;
                int other = (ids[0] + 1) % X;
                while (e0_experts_held(x, il, other)) other = (other + 1) % X;
                int rc = e0_experts_take_ready(x, il, &other, 1, &one, &e);
                CHECKF(rc < 0 && strstr(e.msg, "was not acquired"), "got %d: %s", rc, rc < 0 ? e.msg : "");
                e0_experts_release(x, il);
            }
            /* Too many distinct experts: an error, and nothing pinned. */
            int many[64];
            for (int i = 0; i < k + 2; i++) many[i] = i;
            CHECK(e0_experts_acquire_begin(x, il, many, k + 2, &e) < 0 && strstr(e.msg, "only"));
            CHECKF(e0_experts_acquire_begin(x, il, many + 1, k + 1, &e) == 0, "%s", e.msg);
            e0_experts_release(x, il);
            CHECK(e0_experts_acquire_begin(x, il, many, 1, &e) == 0);
            CHECK(e0_experts_take_ready(x, il, many, 0, NULL, &e) == 0);
            e0_experts_release(x, il);
            e0_experts_free(x);
        }
    }
    free_pair(&p);
}

/* A copy of a golden file, truncated after the model was loaded: acquire of an expert past the
 * new end fails with a clear message (also after a prefetch of it), experts before it still read. */
static void test_truncated(void) {
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/golden/qwen3moe.gguf", t_shared());
    snprintf(dst, sizeof dst, "%s/test_experts_truncated.gguf", t_build());
    size_t len = 0;
    e0_err e = {0};
    char *data = e0_read_file(src, 64u << 20, &len, &e);
    CHECKF(data, "%s", e.msg);
    if (!data) return;
    for (int mode = 0; mode < 2; mode++) {
        pair p;
        p.res = e0_model_load(src, &(e0_model_params){.experts_resident = true}, true, &e);
        FILE *f = fopen(dst, "wb"); /* a fresh full copy */
        CHECKF(f, "cannot write %s", dst);
        if (!f) break;
        CHECK(fwrite(data, 1, len, f) == len);
        fclose(f);
        p.str = e0_model_load(dst, &(e0_model_params){.experts_resident = false}, true, &e);
        CHECKF(p.res && p.str, "%s", e.msg);
        if (!p.res || !p.str) {
            free_pair(&p);
            continue;
        }
        /* Cut inside expert 5 of the last layer's down matrices. */
        int il = (int)p.str->hp.n_layer - 1;
        const e0_weight *dw = &p.str->layers[il].down_exps;
        uint64_t cut = dw->t->offset + 5 * (uint64_t)dw->matrix_bytes + 100;
        e0_experts *x = new_cache(p.str, p.str->hp.n_expert, mode, E0_EVICT_LRU);
        CHECK(truncate(dst, (off_t)cut) == 0);
        if (x) {
            int id = 5;
            e0_expert_ptrs ptr;
            char want[600];
            snprintf(want, sizeof want, "%s: unexpected end of file reading expert 5 of layer %d", dst, il);
            int rc = e0_experts_acquire(x, il, &id, 1, &ptr, &e);
            CHECKF(rc < 0 && strstr(e.msg, want), "got: %s", rc < 0 ? e.msg : "success");
            e0_experts_prefetch(x, il, &id, 1);
            rc = e0_experts_acquire(x, il, &id, 1, &ptr, &e);
            CHECKF(rc < 0 && strstr(e.msg, want), "after prefetch got: %s", rc < 0 ? e.msg : "success");
            CHECK(!e0_experts_resident(x, il, 5));
            /* The same through acquire_begin / take_ready, which then releases the layer's pins. */
            int two[2] = {0, 5};
            e0_expert_ptrs ptr2[2];
            CHECKF(e0_experts_acquire_begin(x, il, two, 2, &e) == 0, "%s", e.msg);
            for (int done = 0; done < 2;) {
                rc = e0_experts_take_ready(x, il, two + done, 2 - done, ptr2, &e);
                if (rc < 0) break;
                done += rc;
            }
            CHECKF(rc < 0 && strstr(e.msg, "unexpected end of file reading expert"), "take_ready got: %s",
                   rc < 0 ? e.msg : "success");
            rc = e0_experts_take_ready(x, il, two, 1, ptr2, &e);
            CHECKF(rc < 0 && strstr(e.msg, "was not acquired"), "pins left after the error: %d", rc);
            /* An expert wholly before the cut still reads correctly. */
            for (int L = 0; L <= il; L++) {
                const e0_layer *Ls = &p.str->layers[L];
                int ok_id = 0;
                if (Ls->gate_exps.t->offset + Ls->gate_exps.matrix_bytes > cut ||
                    Ls->up_exps.t->offset + Ls->up_exps.matrix_bytes > cut ||
                    Ls->down_exps.t->offset + Ls->down_exps.matrix_bytes > cut)
                    continue;
                rc = e0_experts_acquire(x, L, &ok_id, 1, &ptr, &e);
                CHECKF(rc == 0 && same_bytes(p.res, L, 0, &ptr), "layer %d: %s", L, e.msg);
                e0_experts_release(x, L);
            }
            e0_experts_free(x);
        }
        free_pair(&p);
    }
    free(data);
    unlink(dst);
}

/* The mapping of /proc/self/smaps that holds address a: does its VmFlags line carry flag (" hg":
 * madvise(MADV_HUGEPAGE))? -1 when smaps cannot be read or has no such mapping. */
static int smaps_flag(const void *a, const char *flag) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) { /* a mapping's first line */
            in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            found = strstr(line, flag) != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static void test_huge_buffers(void) {
    const size_t big = ((size_t)9 << 20) + 5, small = 100;
    const size_t mem0 = e0_mem_current(E0_MEM_OTHER);
    uint8_t *b = e0_alloc(E0_MEM_OTHER, big), *s = e0_alloc(E0_MEM_OTHER, small);
    CHECK(b && s);
    if (!b || !s) return;
    CHECKF((uintptr_t)b % ((size_t)2 << 20) == 0, "a %zu-byte buffer at %p: not on a 2 MiB boundary", big, (void *)b);
    CHECKF((uintptr_t)s % 64 == 0, "a %zu-byte buffer at %p: not 64-byte aligned", small, (void *)s);
    CHECK(e0_mem_current(E0_MEM_OTHER) - mem0 == big + small); /* the ledger counts the bytes asked for */
    memset(b, 1, big);
    memset(s, 2, small);
    CHECK(b[big - 1] == 1 && s[small - 1] == 2);
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0 && !getenv("E0_NO_THP")) {
        CHECKF(smaps_flag(b, " hg") == 1, "the %zu-byte buffer's mapping is not advised MADV_HUGEPAGE", big);
        CHECKF(smaps_flag(b + big - 1, " hg") == 0, "%s", "the buffer's partial last 2 MiB page is advised too");
    }
    e0_free(E0_MEM_OTHER, b, big);
    e0_free(E0_MEM_OTHER, s, small);
    CHECK(e0_mem_current(E0_MEM_OTHER) == mem0);
}

int main(void) {
    if (!t_need_shared("golden/llama-moe.gguf", "golden/qwen3moe.gguf", "golden/qwen2moe.gguf",
                       "golden/stories260K-moe4.gguf", "golden/llama-dense.gguf", NULL))
        return T_DONE();
    RUN(test_random_sets);
    RUN(test_eviction_order);
    RUN(test_policy_reference);
    RUN(test_protect_predicted);
    RUN(test_prefetch_keeps_named);
    RUN(test_prefetch);
    RUN(test_errors);
    RUN(test_extra_layers);
    RUN(test_direct_fallback);
    RUN(test_take_ready);
    RUN(test_truncated);
    RUN(test_huge_buffers);
    return T_DONE();
}
