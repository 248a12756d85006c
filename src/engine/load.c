/* load.c — resolve the options, load the model and its expert cache (see load.h). */
#include "engine/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/trace.h"
#include "measure/sysinfo.h"
#include "quant/quant.h"

#define DEFAULT_PREFILL_AHEAD 3000

static uint64_t meminfo_available(void) {
    char *t = e0_read_text("/proc/meminfo", 1 << 16, NULL);
    uint64_t v = 0;
    if (t && e0_parse_kb_field(t, "MemAvailable:", &v) != 0) v = 0;
    free(t);
    return v;
}

/* Page cache charged to the cgroup (reclaimable, so not "used" for the budget): memory.stat's
 * "cache" (v1) or "file" (v2). */
static uint64_t cgroup_cache(const json_t *cg) {
    const char *path = json_string_value(json_object_get(cg, "path"));
    json_int_t version = json_integer_value(json_object_get(cg, "version"));
    if (!path) return 0;
    char file[1024];
    snprintf(file, sizeof file, "/sys/fs/cgroup%s%s/memory.stat", version == 1 ? "/memory" : "", path);
    char *t = e0_read_text(file, 1 << 20, NULL);
    uint64_t v = 0;
    const char *key = version == 1 ? "cache " : "file ";
    for (const char *line = t; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (!strncmp(line, key, strlen(key))) {
            v = strtoull(line + strlen(key), NULL, 10);
            break;
        }
    free(t);
    return v;
}

/* Room in this process's memory cgroup: the limit minus what is used other than page cache;
 * 0 when it has no limit. */
static uint64_t cgroup_room(void) {
    char *t = e0_read_text("/proc/self/cgroup", 1 << 16, NULL);
    if (!t) return 0;
    json_t *j = e0_cgroup_memory_json_at(t, "/sys/fs/cgroup");
    free(t);
    uint64_t room = 0;
    json_t *lim = json_object_get(j, "limit_bytes"), *use = json_object_get(j, "usage_bytes");
    if (json_is_integer(lim) && json_integer_value(lim) > 0) {
        uint64_t l = (uint64_t)json_integer_value(lim), u = json_is_integer(use) ? (uint64_t)json_integer_value(use) : 0;
        uint64_t cache = cgroup_cache(j);
        u = u > cache ? u - cache : 0;
        room = l > u ? l - u : 1;
    }
    json_decref(j);
    return room;
}

/* Room for the tokenizer the front end builds from this file's tokenizer.* arrays after e0_open
 * (the text layer; its tables are in the ledger as E0_MEM_OTHER): an upper bound, 2 x the token
 * texts + 48 bytes per array element + 16 KiB, about twice what it measured on the shared models
 * (26 KB of 95 KB for a 512-token vocabulary, 2.0 MB of 3.8 MB for a 32000-token BPE). */
static uint64_t tokenizer_reserve(const gguf_file *f) {
    uint64_t text = 0, elements = 0;
    for (uint64_t k = 0; k < f->n_kv; k++) {
        const gguf_kv *kv = &f->kv[k];
        if (strncmp(kv->key, "tokenizer.", 10) || kv->type != GGUF_ARR) continue;
        elements += kv->v.arr.n;
        if (kv->v.arr.type == GGUF_STR)
            for (uint64_t j = 0; j < kv->v.arr.n; j++) text += ((const gguf_string *)kv->v.arr.data)[j].len;
    }
    return 2 * text + 48 * elements + (16 << 10);
}

/* Steps 1-3 of e0_open: the model's needs, the budget, residency and slots (and the trace for
 * replay, in s->trace); *cpl = the context parameters to build with (a default prefill chunk may
 * have been shrunk to fit the budget). */
static int plan(const char *path, const e0_options *opt, const e0_ctx_params *cp, e0_session *s, e0_ctx_params *cpl_out,
                e0_err *e) {
    memset(s, 0, sizeof *s);
    s->opt = *opt;
    e0_options *o = &s->opt;
    if (e0_options_check_replay(o, e) < 0) return -1;
    /* 1. what the model needs (metadata only) */
    e0_model *probe = e0_model_load(path, NULL, false, e);
    if (!probe) return -1;
    const e0_hparams hp = probe->hp;
    if (e0_options_check_model(o, hp.n_layer, e) < 0) return e0_model_free(probe), -1;
    if (o->routing == E0_ROUTING_REPLAY) {
        if (hp.n_expert <= 0)
            return e0_model_free(probe), e0_fail(e, "--model-option routing=replay: %s has no routed experts", path);
        if (!(s->trace = e0_trace_load(o->routing_trace, e)) ||
            e0_trace_check_model(s->trace, hp.n_expert, hp.n_expert_used, e) < 0)
            return e0_model_free(probe), -1; /* e0_open frees the trace */
    }
    /* routed experts: the expert stacks the architecture table bound; dense: everything else */
    uint64_t dense = 0, experts = probe->expert_file_bytes, max_expert = 0;
    for (uint64_t i = 0; i < probe->gguf->n_tensors; i++) dense += probe->gguf->tensors[i].nbytes;
    dense -= experts;
    dense += 64 * probe->gguf->n_tensors; /* each tensor is 64-byte aligned in the dense buffer: an upper bound */
    dense += tokenizer_reserve(probe->gguf); /* counted with the dense part: it is resident too */
    for (int64_t il = 0; il < hp.n_layer && hp.n_expert; il++) {
        uint64_t b = e0_expert_bytes(probe, (int)il);
        if (b > max_expert) max_expert = b;
    }
    /* the KV cache in its types (checked here, before anything is loaded) */
    uint32_t type_k = cp ? cp->type_k : E0_TYPE_F32, type_v = cp ? cp->type_v : E0_TYPE_F32;
    if (e0_kv_check(&hp, type_k, type_v, e) < 0) return e0_model_free(probe), -1;
    /* the context's buffers, exactly as e0_ctx_new will allocate them: KV cache + scratch */
    e0_ctx_params cpl = cp ? *cp : (e0_ctx_params){0};
    *cpl_out = cpl;
    uint64_t kv = e0_ctx_memory(probe, &cpl);

    /* 2. the budget */
    if (o->memory_budget) {
        s->budget = o->memory_budget;
        s->budget_source = "memory_budget option";
    } else {
        uint64_t avail = meminfo_available(), room = cgroup_room();
        s->budget_source = "80% of MemAvailable";
        if (room && (room < avail || !avail)) {
            avail = room;
            s->budget_source = "80% of the memory cgroup's limit less its non-cache usage";
        }
        s->budget = avail / 10 * 8;
    }

    /* 3. residency and slots */
    bool moe = hp.n_expert > 0;
    if (!moe) {
        if (o->experts == E0_EXPERTS_STREAM || o->expert_slots)
            return e0_model_free(probe), e0_fail(e, "--model-option: %s has no routed experts to stream", path);
        s->streamed = false;
    } else if (o->experts == E0_EXPERTS_RESIDENT) {
        if (o->expert_slots) return e0_model_free(probe), e0_fail(e, "--model-option: expert_slots contradicts experts=resident");
        s->streamed = false;
    } else if (o->experts == E0_EXPERTS_STREAM || o->expert_slots) {
        s->streamed = true;
    } else {
        s->streamed = dense + experts + kv > s->budget;
    }
    /* a streamed model keeps its embedding in the file too (one row read per token, model.c),
     * unless the output reuses it */
    if (s->streamed && !probe->tied_output) dense -= probe->tok_embd.t->nbytes;
    /* streamed experts are read O_DIRECT by default: under a memory cap the page cache holds
     * little of a file this size, and reading through it was measured 14-36% slower (docs/perf.md,
     * session 14); where the file system refuses O_DIRECT the cache falls back to cached reads */
    if (o->expert_read < 0) o->expert_read = s->streamed ? E0_READ_DIRECT : E0_READ_CACHED;
    if (s->streamed) {
        if (o->expert_slots) {
            if (o->expert_slots < 1 || o->expert_slots > hp.n_expert)
                return e0_model_free(probe), e0_fail(e, "--model-option expert_slots=%lld: must be between 1 and %lld (the experts of a layer)",
                               (long long)o->expert_slots, (long long)hp.n_expert);
        } else {
            /* the smallest cache, counted as e0_experts_new allocates it (slots with their padding):
             * a slot for each expert a token uses, or, where even that does not fit, fewer (down to
             * one: a layer's experts then take turns in the slots, and a token reads most of its experts) */
            e0_experts_params min_xp = {.slots = hp.n_expert_used, .read_mode = o->expert_read,
                                        .n_io_threads = (int)o->io_threads};
            uint64_t need = dense + kv + e0_experts_memory(probe, &min_xp);
            /* a default prefill chunk whose scratch does not fit beside the smallest cache shrinks
             * (results do not depend on the chunk size; a given -b is kept) */
            int batch = cpl.n_batch > 0 ? cpl.n_batch : E0_CTX_DEFAULT_BATCH;
            while (s->budget < need && !(cp && cp->n_batch > 0) && batch > E0_CTX_MIN_AUTO_BATCH) {
                cpl.n_batch = batch = batch / 2 > E0_CTX_MIN_AUTO_BATCH ? batch / 2 : E0_CTX_MIN_AUTO_BATCH;
                kv = e0_ctx_memory(probe, &cpl);
                need = dense + kv + e0_experts_memory(probe, &min_xp);
            }
            /* then fewer slots than a token's experts (decode keeps its slots longer than prefill
             * its chunk: a chat's steps outnumber its prompts) */
            while (s->budget < need && min_xp.slots > 1) {
                min_xp.slots--;
                need = dense + kv + e0_experts_memory(probe, &min_xp);
            }
            /* Below a token's experts every token reads most of its experts anyway, while a chunk
             * reads each expert it uses once: one slot, and the longest default chunk that fits
             * with it (the slots below then take what is left) */
            if (min_xp.slots < hp.n_expert_used && s->budget >= need && !(cp && cp->n_batch > 0)) {
                min_xp.slots = 1;
                for (batch = E0_CTX_DEFAULT_BATCH;; batch /= 2) {
                    cpl.n_batch = batch > E0_CTX_MIN_AUTO_BATCH ? batch : E0_CTX_MIN_AUTO_BATCH;
                    kv = e0_ctx_memory(probe, &cpl);
                    need = dense + kv + e0_experts_memory(probe, &min_xp);
                    if (need <= s->budget || batch <= E0_CTX_MIN_AUTO_BATCH) break;
                }
            }
            if (s->budget < need) {
                char have_s[32], need_s[32];
                e0_size_text(s->budget, have_s);
                e0_size_text(need, need_s);
                if (!strcmp(have_s, need_s)) { /* too close to tell apart when rounded */
                    snprintf(have_s, sizeof have_s, "%llu bytes", (unsigned long long)s->budget);
                    snprintf(need_s, sizeof need_s, "%llu bytes", (unsigned long long)need);
                }
                return e0_model_free(probe), e0_fail(e, "memory budget %s (%s) is too small for %s: it needs at least %s "
                                  "(dense weights, KV cache and scratch buffers, %lld expert slots per layer)",
                               have_s, s->budget_source, path, need_s, (long long)min_xp.slots);
            }
            uint64_t per_slot = (uint64_t)hp.n_layer * max_expert, room = s->budget - dense - kv;
            int64_t slots = (int64_t)(room / per_slot);
            o->expert_slots = slots < min_xp.slots ? min_xp.slots : slots > hp.n_expert ? hp.n_expert : slots;
            /* the exact cache size (slot padding) must fit too */
            e0_experts_params xp = {.slots = o->expert_slots, .read_mode = o->expert_read,
                                    .n_io_threads = (int)o->io_threads};
            while (xp.slots > min_xp.slots && e0_experts_memory(probe, &xp) > room) xp.slots--;
            o->expert_slots = xp.slots;
            /* what is left buys one more slot in as many layers as it can (a model with large
             * experts, where one slot more in every layer is far out of reach, gains most) */
            if (xp.slots < hp.n_expert) {
                for (xp.extra_layers = hp.n_layer - hp.n_layer_dense_lead - 1;
                     xp.extra_layers > 0 && e0_experts_memory(probe, &xp) > room; xp.extra_layers--) {}
                s->extra_slot_layers = xp.extra_layers;
            }
        }
    }
    e0_model_free(probe);
    if (o->routing == E0_ROUTING_AUTO) o->routing = s->streamed ? E0_ROUTING_PREDICTED : E0_ROUTING_ACTUAL;
    if (!moe && o->routing == E0_ROUTING_PREDICTED) return e0_fail(e, "--model-option routing=predicted: %s has no routed experts", path);
    if (o->evict < 0) o->evict = E0_EVICT_LRFU; /* the fewest bytes read on the shared traces: docs/perf.md */
    if (o->protect_predicted == E0_AUTO) o->protect_predicted = E0_ON;
    if (o->predict_from_layer < 0) o->predict_from_layer = 1;
    if (o->predict_ahead <= 0) o->predict_ahead = 1; /* 2 measured worse: see docs/perf.md */
    if (o->prefill_ahead_min_tokens < 0) o->prefill_ahead_min_tokens = DEFAULT_PREFILL_AHEAD;
    if (o->prefetch == E0_AUTO) o->prefetch = E0_OFF;
    if (o->experts == E0_EXPERTS_AUTO) o->experts = s->streamed ? E0_EXPERTS_STREAM : E0_EXPERTS_RESIDENT;
    *cpl_out = cpl;
    return 0;
}

int e0_plan(const char *path, const e0_options *opt, const e0_ctx_params *cp, e0_session *s, e0_err *e) {
    e0_ctx_params cpl;
    int rc = plan(path, opt, cp, s, &cpl, e);
    e0_trace_free(s->trace); /* the plan needs no trace afterwards */
    s->trace = NULL;
    return rc;
}

static int open_session(const char *path, const e0_options *opt, const e0_ctx_params *cp, const e0_model_params *mp,
                        e0_session *s, e0_err *e) {
    e0_ctx_params cpl;
    if (plan(path, opt, cp, s, &cpl, e) < 0) return -1;
    e0_options *o = &s->opt;

    /* 4. load */
    e0_model_params p = mp ? *mp : (e0_model_params){0};
    p.experts_resident = !s->streamed;
    p.embd_from_file = s->streamed;
    p.repack = o->repack != E0_OFF;
    if (!(s->m = e0_model_load(path, &p, true, e))) return -1;
    if (s->streamed) {
        e0_experts_params xp = {.slots = o->expert_slots, .extra_layers = s->extra_slot_layers,
                                .read_mode = o->expert_read, .evict = o->evict,
                                .protect_predicted = o->protect_predicted == E0_ON, .n_io_threads = (int)o->io_threads};
        if (!(s->xc = e0_experts_new(s->m, &xp, e))) return e0_close(s), -1;
    }
    if (!(s->c = e0_ctx_new(s->m, &cpl, e))) return e0_close(s), -1;
    e0_session_setup_ctx(s, s->c, 0, 1);
    return 0;
}

void e0_session_setup_ctx(const e0_session *s, e0_ctx *c, int i, int n) {
    const e0_options *o = &s->opt;
    e0_ctx_set_experts(c, s->xc);
    e0_ctx_set_prefill_read(c, o->prefill_read != E0_OFF, (int)o->prefill_ahead_min_tokens);
    /* replay with a predictor computes with its guesses (routing=predicted), unless prefetch=on
     * asks for what it means with actual routing: compute with the trace's experts and only read
     * the guesses ahead */
    bool replay = o->routing == E0_ROUTING_REPLAY,
         replay_predicted = replay && o->replay_predict >= 0 && o->prefetch != E0_ON;
    e0_ctx_set_routing(c, o->routing == E0_ROUTING_PREDICTED || replay_predicted, (int)o->predict_from_layer,
                       (int)o->predict_ahead, o->prefetch == E0_ON);
    if (replay)
        e0_ctx_set_replay(c, s->trace, o->replay_predict, (uint64_t)(o->replay_seed ? o->replay_seed : 1) + (uint64_t)i,
                          e0_replay_first_step(s->trace, i, n));
}

int e0_open(const char *path, const e0_options *opt, const e0_ctx_params *cp, const e0_model_params *mp,
            e0_session *s, e0_err *e) {
    if (open_session(path, opt, cp, mp, s, e) == 0) return 0;
    e0_trace_free(s->trace); /* NULL when a failing step already closed the session */
    s->trace = NULL;
    return -1;
}

void e0_close(e0_session *s) {
    e0_ctx_free(s->c);
    e0_experts_free(s->xc);
    e0_model_free(s->m);
    e0_trace_free(s->trace);
    memset(s, 0, sizeof *s);
}

const char *e0_session_routing_name(const e0_session *s) {
    if (!s->m || s->m->hp.n_expert <= 0) return "none (dense model)";
    return s->opt.routing == E0_ROUTING_REPLAY ? "replay" : s->opt.routing == E0_ROUTING_PREDICTED ? "predicted" : "actual";
}

const char *e0_session_slots_text(const e0_session *s, char *buf, size_t n) {
    const long long N = (long long)s->opt.expert_slots, X = (long long)s->extra_slot_layers;
    if (X > 0) snprintf(buf, n, "%lld slot%s per layer, %lld in %lld layer%s", N, N == 1 ? "" : "s", N + 1, X, X == 1 ? "" : "s");
    else snprintf(buf, n, "%lld slot%s per layer", N, N == 1 ? "" : "s");
    return buf;
}

const char *e0_session_routing_label(const e0_session *s, char *buf, size_t n) {
    if (!s->trace) snprintf(buf, n, "%s", e0_session_routing_name(s));
    else if (s->opt.replay_predict >= 0 && s->opt.prefetch == E0_ON)
        snprintf(buf, n, "replay of %s, exact, guesses at replay_predict=%g read ahead (prefetch)", s->trace->name,
                 s->opt.replay_predict);
    else if (s->opt.replay_predict >= 0)
        snprintf(buf, n, "replay of %s, predicted at replay_predict=%g", s->trace->name, s->opt.replay_predict);
    else snprintf(buf, n, "replay of %s", s->trace->name);
    return buf;
}

json_t *e0_session_config_json(const e0_session *s) {
    const e0_options *o = &s->opt;
    json_t *j = json_object();
    json_object_set_new(j, "threads", json_integer(e0_ctx_n_threads(s->c)));
    json_object_set_new(j, "prefill_threads", json_integer(e0_ctx_n_threads_prefill(s->c)));
    json_object_set_new(j, "context", json_integer(e0_ctx_n_ctx(s->c)));
    json_object_set_new(j, "batch", json_integer(e0_ctx_n_batch(s->c)));
    json_object_set_new(j, "kv_type_k", json_string(e0_kv_type_name(e0_ctx_type_k(s->c))));
    json_object_set_new(j, "kv_type_v", json_string(e0_kv_type_name(e0_ctx_type_v(s->c))));
    json_object_set_new(j, "kv_bytes_per_token",
                        json_integer((json_int_t)e0_kv_bytes_per_pos(&s->m->hp, e0_ctx_type_k(s->c), e0_ctx_type_v(s->c))));
    if (s->m->hp.n_swa > 0) /* gpt-oss: the sliding-window layers' KV, whatever the context */
        json_object_set_new(j, "kv_swa_bytes",
                            json_integer((json_int_t)e0_kv_bytes_swa(&s->m->hp, e0_ctx_type_k(s->c), e0_ctx_type_v(s->c))));
    if (s->m->hp.n_swa > 0) /* ... as this context allocates it: rings of the window + a prefill chunk */
        json_object_set_new(j, "kv_swa_ring_bytes",
                            json_integer((json_int_t)e0_kv_bytes_swa_ring(&s->m->hp, e0_ctx_type_k(s->c), e0_ctx_type_v(s->c),
                                                                          e0_ctx_n_ctx(s->c), e0_ctx_n_batch(s->c))));
    bool moe = s->m->hp.n_expert > 0;
    json_object_set_new(j, "experts", json_string(!moe ? "none (dense model)" : s->streamed ? "stream" : "resident"));
    json_object_set_new(j, "token_embd", json_string(s->m->embd_from_file ? "file (one row read per token)" : "resident"));
    json_object_set_new(j, "routing", json_string(e0_session_routing_name(s)));
    json_object_set_new(j, "repack", json_string(o->repack == E0_OFF                         ? "off"
                                                 : e0_repack_type(E0_TYPE_Q4_K) != E0_TYPE_Q4_K ? "auto (q4_K, q6_K repacked)"
                                                                                                 : "auto (none: SIMD level not avx2)"));
    if (s->trace) { /* replay: a measurement mode, labelled so that it never passes for a real run */
        json_object_set_new(j, "routing_trace", json_string(s->trace->name));
        json_object_set_new(j, "replay_predict", o->replay_predict >= 0 ? json_real(o->replay_predict) : json_string("none"));
        json_object_set_new(j, "replay_seed", json_integer(o->replay_seed ? o->replay_seed : 1));
        char label[512];
        json_object_set_new(j, "routing_label", json_string(e0_session_routing_label(s, label, sizeof label)));
    }
    if (moe) {
        json_object_set_new(j, "expert_slots", s->streamed ? json_integer(o->expert_slots) : json_string("all (resident)"));
        if (s->streamed) json_object_set_new(j, "expert_slots_extra_layers", json_integer(s->extra_slot_layers));
        const char *why = NULL;
        int mode = s->xc ? e0_experts_read_mode(s->xc, &why) : o->expert_read;
        json_object_set_new(j, "expert_read", json_string(!s->streamed ? "n/a (resident)" : mode == E0_READ_DIRECT ? "direct" : "cached"));
        if (why) json_object_set_new(j, "expert_read_note", json_string(why));
        json_object_set_new(j, "evict", json_string(e0_evict_name(o->evict) ? e0_evict_name(o->evict) : "?"));
        json_object_set_new(j, "protect_predicted", json_string(o->protect_predicted == E0_OFF ? "off" : "on"));
        json_object_set_new(j, "predict_from_layer", json_integer(o->predict_from_layer));
        json_object_set_new(j, "predict_ahead", json_integer(o->predict_ahead));
        json_object_set_new(j, "prefetch", json_string(o->prefetch == E0_ON ? "on" : "off"));
        json_object_set_new(j, "prefill_read", json_string(o->prefill_read == E0_OFF ? "off" : "auto"));
        json_object_set_new(j, "prefill_ahead_min_tokens", json_integer(o->prefill_ahead_min_tokens));
        json_object_set_new(j, "io_threads", json_integer(o->io_threads ? o->io_threads : E0_EXPERTS_DEFAULT_IO_THREADS));
    }
    /* The budget derived from free memory changes from run to run: only a given one is part of
     * the configuration (the derived value is reported by e0_session_budget_json). */
    json_object_set_new(j, "memory_budget", o->memory_budget ? json_integer((json_int_t)o->memory_budget) : json_string("auto"));
    return j;
}

json_t *e0_session_budget_json(const e0_session *s) {
    return json_pack("{s:I, s:s}", "bytes", (json_int_t)s->budget, "source", s->budget_source);
}
