/* options.c — parsing `--model-option key=value` (see options.h). */
#include "engine/options.h"

#include <stdio.h>
#include <string.h>

#include "engine/experts.h"

void e0_options_init(e0_options *o) {
    memset(o, 0, sizeof *o);
    o->expert_read = -1;
    o->predict_from_layer = -1;
    o->prefill_ahead_min_tokens = -1;
    o->evict = -1;
    o->replay_predict = -1;
}

const char *e0_options_help(void) {
    return "  --model-option experts=auto|resident|stream   keep every routed expert in memory, or stream them\n"
           "  --model-option expert_slots=N                 expert slots per layer when streaming (1 .. experts)\n"
           "  --model-option memory_budget=SIZE             e.g. 3GiB: decides residency and the default slots\n"
           "  --model-option expert_read=cached|direct      page-cache reads or O_DIRECT (default when streaming;\n"
           "                                                cached where the file system refuses O_DIRECT)\n"
           "  --model-option routing=actual|predicted|replay  exact routing, predicted experts read ahead, or\n"
           "                                                replayed from a trace (measurement only, see below)\n"
           "  --model-option routing_trace=FILE             routing=replay: the trace (docs/design.md, trace format)\n"
           "  --model-option replay_predict=P               routing=replay: a predictor right with probability P (0..1),\n"
           "                                                computed with (predicted routing), or with prefetch=on only\n"
           "                                                read ahead while the trace's experts are computed (exact)\n"
           "  --model-option replay_seed=N                  routing=replay: seed of the predictor's wrong guesses\n"
           "  --model-option predict_from_layer=K           predicted routing from layer K on\n"
           "  --model-option predict_ahead=D                layers predicted and read ahead (default 1)\n"
           "  --model-option prefetch=on|off                actual routing: read predicted experts ahead\n"
           "  --model-option prefill_read=auto|off          overlap the next layer's reads in long prefills\n"
           "  --model-option prefill_ahead_min_tokens=N     chunk size from which prefill_read=auto overlaps\n"
           "  --model-option evict=lru|lfu|lrfu|pin         expert cache eviction policy (default lrfu)\n"
           "  --model-option protect_predicted=on|off       never evict an expert predicted for the next step\n"
           "  --model-option io_threads=N                   expert reader threads\n"
           "  --model-option repack=auto|off                q4_K / q6_K weights repacked at load for the AVX2\n"
           "                                                kernels (auto; faster; q4_K's last bits differ from off)\n";
}

/* value must be one of names[]; index into *out */
static int pick(const char *key, const char *v, const char *const *names, const int *values, int n, int *out, e0_err *e) {
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        if (!strcmp(v, names[i])) {
            *out = values[i];
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    return e0_fail(e, "--model-option %s: bad value '%s' (expected one of: %s)", key, v, list);
}

int e0_options_parse(e0_options *o, const char *kv, e0_err *e) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return e0_fail(e, "--model-option: expected key=value, got '%s'", kv);
    char key[64];
    size_t klen = (size_t)(eq - kv);
    if (klen >= sizeof key) return e0_fail(e, "--model-option: unknown key '%.*s'", (int)klen, kv);
    memcpy(key, kv, klen);
    key[klen] = 0;
    const char *v = eq + 1;
    char what[96];
    snprintf(what, sizeof what, "--model-option %s", key);
    int64_t n;
    if (!strcmp(key, "experts")) {
        static const char *const names[] = {"auto", "resident", "stream"};
        static const int values[] = {E0_EXPERTS_AUTO, E0_EXPERTS_RESIDENT, E0_EXPERTS_STREAM};
        return pick(key, v, names, values, 3, &o->experts, e);
    }
    if (!strcmp(key, "routing")) {
        static const char *const names[] = {"actual", "predicted", "replay"};
        static const int values[] = {E0_ROUTING_ACTUAL, E0_ROUTING_PREDICTED, E0_ROUTING_REPLAY};
        return pick(key, v, names, values, 3, &o->routing, e);
    }
    if (!strcmp(key, "routing_trace")) {
        size_t n = strlen(v);
        if (n == 0) return e0_fail(e, "%s: give a file", what);
        if (n >= sizeof o->routing_trace)
            return e0_fail(e, "%s: path longer than %zu bytes", what, sizeof o->routing_trace - 1);
        memcpy(o->routing_trace, v, n + 1);
        return 0;
    }
    if (!strcmp(key, "replay_predict")) {
        double p;
        if (e0_parse_f64(v, 0, 1, &p, what, e) < 0) return -1;
        o->replay_predict = p;
        return 0;
    }
    if (!strcmp(key, "replay_seed")) {
        if (e0_parse_i64(v, 1, INT64_MAX, &n, what, e) < 0) return -1;
        o->replay_seed = n;
        return 0;
    }
    if (!strcmp(key, "expert_read")) {
        static const char *const names[] = {"cached", "direct"};
        static const int values[] = {E0_READ_CACHED, E0_READ_DIRECT};
        return pick(key, v, names, values, 2, &o->expert_read, e);
    }
    if (!strcmp(key, "evict")) {
        static const char *const names[] = {"lru", "lfu", "lrfu", "pin"};
        static const int values[] = {E0_EVICT_LRU, E0_EVICT_LFU, E0_EVICT_LRFU, E0_EVICT_PIN};
        return pick(key, v, names, values, 4, &o->evict, e);
    }
    if (!strcmp(key, "protect_predicted")) {
        static const char *const names[] = {"on", "off"};
        static const int values[] = {E0_ON, E0_OFF};
        return pick(key, v, names, values, 2, &o->protect_predicted, e);
    }
    if (!strcmp(key, "prefetch") || !strcmp(key, "prefill_read")) {
        static const char *const names[] = {"on", "off", "auto"};
        static const int values[] = {E0_ON, E0_OFF, E0_AUTO};
        int *dst = !strcmp(key, "prefetch") ? &o->prefetch : &o->prefill_read;
        if (pick(key, v, names, values, 3, dst, e) < 0) return -1;
        if (dst == &o->prefill_read && *dst == E0_ON) *dst = E0_AUTO;
        return 0;
    }
    if (!strcmp(key, "repack")) {
        static const char *const names[] = {"auto", "off"};
        static const int values[] = {E0_AUTO, E0_OFF};
        return pick(key, v, names, values, 2, &o->repack, e);
    }
    if (!strcmp(key, "expert_slots")) {
        if (e0_parse_i64(v, 1, 1 << 20, &n, what, e) < 0) return -1;
        o->expert_slots = n;
        return 0;
    }
    if (!strcmp(key, "predict_from_layer")) {
        if (e0_parse_i64(v, 0, 1 << 20, &n, what, e) < 0) return -1;
        o->predict_from_layer = n;
        return 0;
    }
    if (!strcmp(key, "predict_ahead")) {
        if (e0_parse_i64(v, 1, 8, &n, what, e) < 0) return -1;
        o->predict_ahead = n;
        return 0;
    }
    if (!strcmp(key, "prefill_ahead_min_tokens")) {
        if (e0_parse_i64(v, 1, 1 << 30, &n, what, e) < 0) return -1;
        o->prefill_ahead_min_tokens = n;
        return 0;
    }
    if (!strcmp(key, "io_threads")) {
        if (e0_parse_i64(v, 1, E0_EXPERTS_MAX_IO_THREADS, &n, what, e) < 0) return -1;
        o->io_threads = n;
        return 0;
    }
    if (!strcmp(key, "memory_budget")) {
        uint64_t b;
        if (e0_parse_size(v, &b, what, e) < 0) return -1;
        if (b == 0) return e0_fail(e, "%s: must be > 0", what);
        o->memory_budget = b;
        return 0;
    }
    return e0_fail(e, "--model-option: unknown key '%s' (known: experts, expert_slots, memory_budget, expert_read, routing, "
                      "predict_from_layer, predict_ahead, prefetch, prefill_read, prefill_ahead_min_tokens, evict, io_threads, "
                      "routing_trace, replay_predict, replay_seed, protect_predicted, repack)", key);
}

int e0_options_check_model(const e0_options *o, int64_t n_layer, e0_err *e) {
    if (o->predict_from_layer >= n_layer)
        return e0_fail(e, "--model-option predict_from_layer=%lld: the model has %lld layers, give one from 0 to %lld",
                       (long long)o->predict_from_layer, (long long)n_layer, (long long)(n_layer - 1));
    return 0;
}

int e0_options_check_replay(const e0_options *o, e0_err *e) {
    bool replay = o->routing == E0_ROUTING_REPLAY;
    if (replay && !o->routing_trace[0])
        return e0_fail(e, "--model-option routing=replay needs --model-option routing_trace=FILE");
    if (!replay && o->routing_trace[0])
        return e0_fail(e, "--model-option routing_trace=%s: only used with routing=replay", o->routing_trace);
    if (!replay && o->replay_predict >= 0)
        return e0_fail(e, "--model-option replay_predict: only used with routing=replay");
    if (!replay && o->replay_seed)
        return e0_fail(e, "--model-option replay_seed: only used with routing=replay");
    return 0;
}

const char *e0_size_text(uint64_t bytes, char buf[32]) {
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    if (u == 0) snprintf(buf, 32, "%llu bytes", (unsigned long long)bytes);
    else snprintf(buf, 32, v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}
