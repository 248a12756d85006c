/* llamacpp_ref.c — llama.cpp as the reference for the differential tests (tests/test_llamacpp.c).
 *
 * Not part of the engine and not built by `make`: `make llamacpp` (tools/llamacpp.sh) compiles it
 * against the pinned llama.cpp (node-llama-cpp's prebuilt libraries and source headers). Each
 * subcommand asks llama.cpp one question, as ../shared/golden/README.md's reference does: the CPU
 * backend, one batched prefill from position 0, F32 KV cache, flash attention off.
 *
 *   logits MODEL --tokens IDS --rows LIST --out F [--route-gaps G] [--kv T] [--kv-v T]: KV cache types (K and V; --kv-v: V only; f32 by default; llama.cpp needs flash attention, which this tool keeps off, for a quantized V)
 *       F: for each row p of LIST, the n_vocab float32 logits after position p. G: for each row,
 *       one float32: the smallest, over the MoE layers, gap between the k-th and (k+1)-th
 *       largest router logits divided by their std (k = experts used; +inf without MoE; gpt-oss:
 *       the logits plus the router bias, which the experts are chosen on).
 *       --routes R: for each row, one line: for every MoE layer L in order "L:e,e,..." (the experts
 *       llama.cpp chose, "ffn_moe_topk-L", ascending), space-separated; what `edge0-infer logits
 *       --routes` writes, so the test sees where the two engines' routing first differs.
 *   greedy MODEL --tokens IDS -n N [--stats F]
 *       N greedy ids (one line). F: per step two float32, the top-1 minus top-2 logit margin over
 *       the row's std, and the router gap (as above) of the position that produced the row.
 *   tokenize VOCAB [--no-special] [--parse-special] [FILE...]
 *       llama_tokenize of each FILE (or stdin), one line of ids per input. --no-special: no
 *       BOS/EOS even if the vocabulary adds them.
 *   quantize IN OUT TYPE [--type-map 'REGEX=TYPE,...'] [--mix] [--imatrix-synth]   (iq* TYPEs: with a synthetic imatrix)
 *       llama_model_quantize: every tensor llama.cpp quantizes becomes TYPE (pure), or its
 *       recipe for TYPE with --mix (q4_k_m ...); --type-map overrides by tensor name (first
 *       match wins; llama.cpp's own fallbacks for rows that do not fit a block still apply).
 *       --imatrix-synth: with the fixed importance matrix of imatrix_synth_value (the i-quants
 *       llama.cpp refuses to write without one: iq3_xxs, iq2_*, iq1_*).
 *   dequantize MODEL TENSOR --out F      (TENSOR '*': every tensor, into DIR/NAME.f32)
 *       ggml's to_float of the tensor's stored blocks, float32.
 *   types MODEL
 *       one "NAME TYPE" line per tensor (ggml's type names), in file order.
 * IDS and LIST are comma- or space-separated. Exit status 0 on success, 1 on any error. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

static const char usage_text[] =
    "usage: llamacpp-ref logits MODEL --tokens IDS --rows LIST --out F [--route-gaps G] [--routes R] [--threads N] [--kv T] [--kv-v T]\n"
    "       llamacpp-ref greedy MODEL --tokens IDS -n N [--stats F] [--threads N]\n"
    "       llamacpp-ref tokenize VOCAB [--no-special] [--parse-special] [FILE...]\n"
    "       llamacpp-ref quantize IN OUT TYPE [--type-map 'REGEX=TYPE,...'] [--mix] [--imatrix-synth]\n"
    "       llamacpp-ref dequantize MODEL TENSOR|'*' --out F|DIR\n"
    "       llamacpp-ref types MODEL\n"
    "(see the header of tools/llamacpp_ref.c)\n";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llamacpp-ref: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMACPP_REF_VERBOSE")) fputs(text, stderr);
}

/* Decimal numbers separated by commas/spaces into *out (malloc'd); -1 on a bad list. */
static int parse_ids(const char *s, int32_t **out, int *n) {
    int cap = 16, count = 0;
    int32_t *v = malloc((size_t)cap * sizeof *v);
    if (!v) return -1;
    while (*s) {
        while (*s == ',' || *s == ' ' || *s == '\n' || *s == '\t') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (errno || end == s || x < 0 || x > INT32_MAX) {
            free(v);
            return -1;
        }
        if (count == cap) {
            int32_t *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!nv) {
                free(v);
                return -1;
            }
            v = nv;
        }
        v[count++] = (int32_t)x;
        s = end;
    }
    *out = v;
    *n = count;
    return 0;
}

static int write_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return fail("%s: %s", path, strerror(errno));
    size_t w = fwrite(x, sizeof *x, n, f);
    if (fclose(f) != 0 || w != n) return fail("%s: write failed", path);
    return 0;
}

/* ---- the model and its context ---- */

/* Router gaps: the eval callback sees every "ffn_moe_logits-L" tensor ([n_expert, n_tokens]) and
 * keeps, per token of the current batch, the smallest (k-th - (k+1)-th) / std over the layers.
 * Where the choice is made on other scores (deepseek2-style routing) their gaps count too: the
 * selection scores with the correction bias ("ffn_moe_probs_biased"), the group-masked ones
 * ("ffn_moe_probs_masked", finite entries only) and, with expert groups, the gap between the
 * n_group_used-th and next best group score (sum of a group's two best) of the scores the groups
 * are chosen on ("ffn_moe_probs" / "ffn_moe_probs_biased"), over twice the scores' std: a group
 * score is the sum of two scores, so rounding moves it up to twice as far as one score. */
typedef struct {
    int k;          /* experts used per token; 0 = not a MoE model */
    int n_groups, n_group_used; /* expert groups (deepseek2); 0 = none */
    int n_tok;      /* tokens in the batch being computed */
    float gap[4096];
    /* gpt-oss: experts are chosen on the router logits + bias, a tensor llama.cpp's graph ends up
     * naming "ffn_moe_probs-L" (softmax-weight gating: the probs are the biased logits) */
    const char *name; /* "ffn_moe_logits", or "ffn_moe_probs" for gpt-oss */
    int n_layer;
    int32_t *sel;     /* [4096][n_layer][k] the chosen experts ("ffn_moe_topk-L"), -1: none; or NULL */
} route_state;

/* (k-th - (k+1)-th largest finite value of r [ne]) / their std; INFINITY when fewer than k+1. */
static float kth_gap(const float *r, int64_t ne, int k) {
    double mean = 0, var = 0;
    int64_t nf = 0;
    for (int64_t e = 0; e < ne; e++)
        if (isfinite(r[e])) mean += r[e], nf++;
    if (nf <= k) return INFINITY;
    mean /= (double)nf;
    for (int64_t e = 0; e < ne; e++)
        if (isfinite(r[e])) var += (r[e] - mean) * (r[e] - mean);
    double sd = sqrt(var / (double)nf);
    /* the k-th and (k+1)-th largest: partial selection of the k+1 largest */
    float top[64];
    int kk = k + 1 > 64 ? 64 : k + 1, nt_ = 0;
    for (int64_t e = 0; e < ne; e++) {
        float x = r[e];
        if (!isfinite(x)) continue;
        int pos = nt_ < kk ? nt_++ : kk;
        if (pos == kk && x <= top[kk - 1]) continue;
        if (pos == kk) pos = kk - 1;
        while (pos > 0 && top[pos - 1] < x) {
            top[pos] = top[pos - 1];
            pos--;
        }
        top[pos] = x;
    }
    return sd > 0 ? (float)((top[kk - 2] - top[kk - 1]) / sd) : 0.0f;
}

/* The group-choice gap of selection scores r [ne] in n_groups groups, in units of 2 std (see above). */
static float group_gap(const float *r, int64_t ne, int n_groups, int n_used) {
    float gs[512];
    int64_t per = ne / n_groups;
    if (n_groups > 512 || per < 1) return INFINITY;
    for (int g = 0; g < n_groups; g++) {
        float b1 = -INFINITY, b2 = -INFINITY;
        for (int64_t x = 0; x < per; x++) {
            float v = r[g * per + x];
            if (v > b1) b2 = b1, b1 = v;
            else if (v > b2) b2 = v;
        }
        gs[g] = per > 1 ? b1 + b2 : b1;
    }
    double mean = 0, var = 0;
    for (int64_t e = 0; e < ne; e++) mean += r[e];
    mean /= (double)ne;
    for (int64_t e = 0; e < ne; e++) var += (r[e] - mean) * (r[e] - mean);
    double sd = sqrt(var / (double)ne);
    /* the n_used-th and (n_used+1)-th best group scores */
    for (int a = 1; a < n_groups; a++)
        for (int b = a; b > 0 && gs[b] > gs[b - 1]; b--) {
            float t = gs[b];
            gs[b] = gs[b - 1];
            gs[b - 1] = t;
        }
    return sd > 0 ? (float)((gs[n_used - 1] - gs[n_used]) / (2 * sd)) : 0.0f;
}

/* "ffn_moe_topk-L" [k, n_tokens] (a view of the argsort: rows nb[1] bytes apart) into sel. */
static bool topk_cb(route_state *rs, struct ggml_tensor *t) {
    int il = atoi(t->name + 13);
    int64_t k = t->ne[0], nt = t->ne[1];
    if (t->type != GGML_TYPE_I32 || k != rs->k || nt > rs->n_tok || il < 0 || il >= rs->n_layer || t->nb[0] != sizeof(int32_t))
        return true;
    size_t nb = ggml_nbytes(t);
    int32_t *buf = malloc(nb);
    if (!buf) return false;
    ggml_backend_tensor_get(t, buf, 0, nb);
    for (int64_t j = 0; j < nt; j++) {
        const int32_t *r = (const int32_t *)((const char *)buf + j * t->nb[1]);
        int32_t *dst = rs->sel + ((size_t)j * (size_t)rs->n_layer + (size_t)il) * (size_t)k;
        for (int64_t i = 0; i < k; i++) { /* ascending */
            int64_t a = i;
            for (; a > 0 && dst[a - 1] > r[i]; a--) dst[a] = dst[a - 1];
            dst[a] = r[i];
        }
    }
    free(buf);
    return true;
}

static bool route_cb(struct ggml_tensor *t, bool ask, void *user) {
    route_state *rs = user;
    if (rs->sel && rs->k > 0 && !strncmp(t->name, "ffn_moe_topk-", 13)) return ask ? true : topk_cb(rs, t);
    /* gpt-oss: only the biased logits ("ffn_moe_probs-L") choose */
    const bool oai = !strcmp(rs->name, "ffn_moe_probs");
    const bool logits = !oai && strncmp(t->name, "ffn_moe_logits", 14) == 0;
    const bool biased = !oai && strncmp(t->name, "ffn_moe_probs_biased", 20) == 0;
    const bool masked = !oai && strncmp(t->name, "ffn_moe_probs_masked", 20) == 0;
    const bool probs = strncmp(t->name, "ffn_moe_probs-", 14) == 0 && (oai || rs->n_groups > 1);
    bool want = rs->k > 0 && (logits || biased || masked || probs) && t->type == GGML_TYPE_F32 && ggml_is_contiguous(t);
    if (ask) return want;
    if (!want) return true;
    int64_t ne = t->ne[0], nt = t->ne[1];
    if (ne <= rs->k || nt > rs->n_tok) return true;
    float *gaps = rs->gap;
    float *buf = malloc((size_t)(ne * nt) * sizeof *buf);
    if (!buf) return false;
    ggml_backend_tensor_get(t, buf, 0, ggml_nbytes(t));
    for (int64_t j = 0; j < nt; j++) {
        const float *r = buf + j * ne;
        float g = probs && !oai ? INFINITY : kth_gap(r, ne, rs->k);
        if ((probs || biased) && rs->n_groups > 1 && rs->n_group_used < rs->n_groups) {
            float gg = group_gap(r, ne, rs->n_groups, rs->n_group_used);
            if (gg < g) g = gg;
        }
        if (g < gaps[j]) gaps[j] = g;
    }
    free(buf);
    return true;
}

typedef struct {
    struct llama_model *model;
    struct llama_context *ctx;
    const struct llama_vocab *vocab;
    int32_t n_vocab;
    route_state route;
} ref_model;

/* BUILD/llamacpp/lib for BUILD/bin/llamacpp-ref, as tools/llamacpp.sh lays them out. */
static int load_backends(void) {
    char exe[PATH_MAX], dir[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return fail("cannot find this program's path (/proc/self/exe)");
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(dir, sizeof dir, "%s/../llamacpp/lib", exe);
    llama_log_set(quiet_log, NULL);
    ggml_backend_load_all_from_path(dir);
    if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) return fail("no CPU backend in %s", dir);
    llama_backend_init();
    return 0;
}

static int open_model(ref_model *m, const char *path, int n_ctx, int n_batch, int threads, enum ggml_type kv, enum ggml_type kv_v) {
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    /* LLAMACPP_REF_NO_REPACK=1: no extra (repacked) weight buffers. The CPU backend's repacked
     * q4_0 / q8_0 / q4_K weights break deepseek2's per-head attn_k_b / attn_v_b products (an
     * abort in ggml-backend.cpp, or wrong values for q4_K), so its tests set it. */
    const char *norepack = getenv("LLAMACPP_REF_NO_REPACK");
    if (norepack && *norepack == '1') mp.use_extra_bufts = false;
    m->model = llama_model_load_from_file(path, mp);
    if (!m->model) return fail("%s: llama.cpp could not load the model (LLAMACPP_REF_VERBOSE=1 to see why)", path);
    m->vocab = llama_model_get_vocab(m->model);
    m->n_vocab = llama_vocab_n_tokens(m->vocab);
    char key[256], val[64];
    char arch[64] = "";
    llama_model_meta_val_str(m->model, "general.architecture", arch, sizeof arch);
    snprintf(key, sizeof key, "%s.expert_used_count", arch);
    m->route.k = llama_model_meta_val_str(m->model, key, val, sizeof val) > 0 ? atoi(val) : 0;
    m->route.name = !strcmp(arch, "gpt-oss") ? "ffn_moe_probs" : "ffn_moe_logits";
    m->route.n_layer = llama_model_n_layer(m->model);
    snprintf(key, sizeof key, "%s.expert_group_count", arch);
    m->route.n_groups = llama_model_meta_val_str(m->model, key, val, sizeof val) > 0 ? atoi(val) : 0;
    snprintf(key, sizeof key, "%s.expert_group_used_count", arch);
    m->route.n_group_used = llama_model_meta_val_str(m->model, key, val, sizeof val) > 0 ? atoi(val) : 0;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)((n_ctx + 255) / 256 * 256);
    cp.n_batch = cp.n_ubatch = (uint32_t)n_batch;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = kv;
    cp.type_v = kv_v;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    cp.cb_eval = route_cb;
    cp.cb_eval_user_data = &m->route;
    m->ctx = llama_init_from_model(m->model, cp);
    if (!m->ctx) return fail("%s: llama.cpp could not create a context", path);
    return 0;
}

static void close_model(ref_model *m) {
    if (m->ctx) llama_free(m->ctx);
    if (m->model) llama_model_free(m->model);
}

/* Decode tokens[0..n) at positions pos0.., logits wanted for every position. */
static int decode(ref_model *m, const int32_t *tokens, int n, int pos0) {
    if (n > (int)(sizeof m->route.gap / sizeof m->route.gap[0])) return fail("at most 4096 tokens per batch");
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        if (tokens[i] >= m->n_vocab) {
            llama_batch_free(b);
            return fail("token %d is not below n_vocab %d", tokens[i], m->n_vocab);
        }
        b.token[i] = tokens[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    m->route.n_tok = n;
    for (int i = 0; i < n; i++) m->route.gap[i] = INFINITY;
    if (m->route.sel)
        for (size_t i = 0; i < (size_t)n * (size_t)m->route.n_layer * (size_t)m->route.k; i++) m->route.sel[i] = -1;
    int rc = llama_decode(m->ctx, b);
    llama_batch_free(b);
    return rc ? fail("llama_decode failed (%d)", rc) : 0;
}

/* --routes: one line per row (see the header); empty lines without MoE layers. */
static int write_routes(const char *path, const route_state *rs, const int32_t *rows, int nr) {
    FILE *f = fopen(path, "w");
    if (!f) return fail("%s: %s", path, strerror(errno));
    for (int j = 0; j < nr; j++) {
        int first = 1;
        for (int l = 0; rs->sel && l < rs->n_layer; l++) {
            const int32_t *e = rs->sel + ((size_t)rows[j] * (size_t)rs->n_layer + (size_t)l) * (size_t)rs->k;
            if (e[0] < 0) continue;
            fprintf(f, "%s%d:", first ? "" : " ", l);
            for (int i = 0; i < rs->k; i++) fprintf(f, "%s%d", i ? "," : "", e[i]);
            first = 0;
        }
        fputc('\n', f);
    }
    if (ferror(f) | (fclose(f) != 0)) return fail("%s: write failed", path);
    return 0;
}

static double row_std(const float *r, int n) {
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) mean += r[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (r[i] - mean) * (r[i] - mean);
    return sqrt(var / n);
}

/* ---- subcommands ---- */

static int opt_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return fail("expected a number from %d to %d, got '%s'", lo, hi, s);
    *out = (int)v;
    return 0;
}

static int cmd_logits(int argc, char **argv) {
    const char *model = argv[0], *tokens_s = NULL, *rows_s = NULL, *out = NULL, *gaps = NULL, *routes = NULL;
    int threads = 1; /* one thread: llama.cpp's spinning workers crawl on a loaded 2-core machine */
    enum ggml_type kv = GGML_TYPE_F32, kv_v = GGML_TYPE_F32;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) return fail("%s: missing value", argv[i]);
        if (!strcmp(argv[i], "--tokens")) tokens_s = argv[i + 1];
        else if (!strcmp(argv[i], "--kv") || !strcmp(argv[i], "--kv-v")) {
            static const struct { const char *name; enum ggml_type t; } kvs[] = {
                {"f32", GGML_TYPE_F32}, {"f16", GGML_TYPE_F16}, {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}};
            size_t k = 0;
            while (k < sizeof kvs / sizeof kvs[0] && strcmp(kvs[k].name, argv[i + 1])) k++;
            if (k == sizeof kvs / sizeof kvs[0]) return fail("%s: one of f32, f16, bf16, q8_0, q4_0", argv[i]);
            if (!strcmp(argv[i], "--kv")) kv = kv_v = kvs[k].t; /* --kv-v after --kv overrides V */
            else kv_v = kvs[k].t;
        }
        else if (!strcmp(argv[i], "--rows")) rows_s = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--route-gaps")) gaps = argv[i + 1];
        else if (!strcmp(argv[i], "--routes")) routes = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) { if (opt_int(argv[i + 1], 1, 256, &threads)) return 1; }
        else return fail("unknown option '%s'", argv[i]);
    }
    if (!tokens_s || !rows_s || !out) return fail("logits needs --tokens, --rows and --out");
    int32_t *tok, *rows;
    int n, nr;
    if (parse_ids(tokens_s, &tok, &n) || n == 0) return fail("--tokens: expected a list of token ids");
    if (parse_ids(rows_s, &rows, &nr) || nr == 0) return fail("--rows: expected a list of positions");
    for (int j = 0; j < nr; j++)
        if (rows[j] >= n) return fail("--rows: position %d is not below %d tokens", rows[j], n);
    ref_model m = {0};
    int rc = open_model(&m, model, n, n, threads, kv, kv_v);
    if (!rc && routes && m.route.k > 0 && !(m.route.sel = malloc((size_t)n * (size_t)m.route.n_layer * (size_t)m.route.k * sizeof(int32_t))))
        rc = fail("out of memory");
    if (!rc) rc = decode(&m, tok, n, 0);
    if (!rc && routes) rc = write_routes(routes, &m.route, rows, nr);
    if (!rc) {
        float *x = malloc((size_t)nr * (size_t)m.n_vocab * sizeof *x), *g = malloc((size_t)nr * sizeof *g);
        for (int j = 0; j < nr && x && g; j++) {
            memcpy(x + (size_t)j * m.n_vocab, llama_get_logits_ith(m.ctx, rows[j]), (size_t)m.n_vocab * sizeof *x);
            g[j] = m.route.gap[rows[j]];
        }
        rc = !x || !g ? fail("out of memory") : write_floats(out, x, (size_t)nr * m.n_vocab);
        if (!rc && gaps) rc = write_floats(gaps, g, (size_t)nr);
        free(x);
        free(g);
    }
    free(m.route.sel);
    close_model(&m);
    free(tok);
    free(rows);
    return rc;
}

static int cmd_greedy(int argc, char **argv) {
    const char *model = argv[0], *tokens_s = NULL, *stats = NULL;
    int threads = 1, steps = -1;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) return fail("%s: missing value", argv[i]);
        if (!strcmp(argv[i], "--tokens")) tokens_s = argv[i + 1];
        else if (!strcmp(argv[i], "--stats")) stats = argv[i + 1];
        else if (!strcmp(argv[i], "-n")) { if (opt_int(argv[i + 1], 1, 100000, &steps)) return 1; }
        else if (!strcmp(argv[i], "--threads")) { if (opt_int(argv[i + 1], 1, 256, &threads)) return 1; }
        else return fail("unknown option '%s'", argv[i]);
    }
    if (!tokens_s || steps < 0) return fail("greedy needs --tokens and -n");
    int32_t *tok;
    int n;
    if (parse_ids(tokens_s, &tok, &n) || n == 0) return fail("--tokens: expected a list of token ids");
    ref_model m = {0};
    float *st = malloc((size_t)steps * 2 * sizeof *st);
    int32_t *ids = malloc((size_t)steps * sizeof *ids);
    int rc = !st || !ids ? fail("out of memory") : open_model(&m, model, n + steps, n, threads, GGML_TYPE_F32, GGML_TYPE_F32) || decode(&m, tok, n, 0);
    int last = n - 1;
    for (int s = 0; !rc && s < steps; s++) {
        const float *r = llama_get_logits_ith(m.ctx, last);
        int best = 0;
        for (int v = 1; v < m.n_vocab; v++)
            if (r[v] > r[best]) best = v;
        float second = -INFINITY;
        for (int v = 0; v < m.n_vocab; v++)
            if (v != best && r[v] > second) second = r[v];
        double sd = row_std(r, m.n_vocab);
        st[2 * s] = sd > 0 ? (float)((r[best] - second) / sd) : 0.0f;
        st[2 * s + 1] = m.route.gap[last];
        ids[s] = best;
        if (s + 1 < steps) {
            rc = decode(&m, &ids[s], 1, n + s);
            last = 0;
        }
    }
    if (!rc) {
        for (int s = 0; s < steps; s++) printf("%s%d", s ? " " : "", ids[s]);
        printf("\n");
        if (stats) rc = write_floats(stats, st, (size_t)steps * 2);
    }
    close_model(&m);
    free(st);
    free(ids);
    free(tok);
    return rc;
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *ns = realloc(s, cap *= 2);
            if (!ns) free(s);
            s = ns;
        }
    }
    if (s) s[n] = 0;
    *len = n;
    return s;
}

static int tokenize_one(const struct llama_vocab *vocab, FILE *in, const char *name, bool add_special, bool parse_special) {
    size_t len;
    char *text = read_all(in, &len);
    if (!text) return fail("%s: cannot read", name);
    if (len > INT32_MAX / 2) return fail("%s: too long", name);
    int cap = (int)len + 16;
    llama_token *ids = malloc((size_t)cap * sizeof *ids);
    int n = ids ? llama_tokenize(vocab, text, (int32_t)len, ids, cap, add_special, parse_special) : INT32_MIN;
    if (n < 0) {
        free(ids);
        free(text);
        return fail("%s: llama_tokenize failed (%d)", name, n);
    }
    for (int i = 0; i < n; i++) printf("%s%d", i ? " " : "", ids[i]);
    printf("\n");
    free(ids);
    free(text);
    return 0;
}

static int cmd_tokenize(int argc, char **argv) {
    bool add_special = true, parse_special = false;
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-special")) add_special = false;
        else if (!strcmp(argv[i], "--parse-special")) parse_special = true;
        else if (argv[i][0] == '-' && argv[i][1]) return fail("unknown option '%s'", argv[i]);
        else {
            first_file = i;
            break;
        }
    }
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[0], mp);
    if (!model) return fail("%s: llama.cpp could not load the vocabulary", argv[0]);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int rc = 0;
    if (first_file == argc) rc = tokenize_one(vocab, stdin, "stdin", add_special, parse_special);
    for (int i = first_file; i < argc && !rc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) rc = fail("%s: %s", argv[i], strerror(errno));
        else {
            rc = tokenize_one(vocab, f, argv[i], add_special, parse_special);
            fclose(f);
        }
    }
    llama_model_free(model);
    return rc;
}

/* A ggml type by its name (q4_K, Q4_K, q8_0 ...), or GGML_TYPE_COUNT. */
static enum ggml_type type_by_name(const char *s) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char *name = ggml_type_name((enum ggml_type)t);
        if (name && ggml_type_size((enum ggml_type)t) && !strcasecmp(name, s)) return (enum ggml_type)t;
    }
    return GGML_TYPE_COUNT;
}

static const struct {
    const char *name;
    enum llama_ftype ftype;
} ftypes[] = {
    {"f32", LLAMA_FTYPE_ALL_F32},        {"f16", LLAMA_FTYPE_MOSTLY_F16},     {"bf16", LLAMA_FTYPE_MOSTLY_BF16},
    {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},   {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},   {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
    {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},   {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},   {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},
    {"q3_k", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"q4_k", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},   {"q2_k_s", LLAMA_FTYPE_MOSTLY_Q2_K_S}, {"q3_k_s", LLAMA_FTYPE_MOSTLY_Q3_K_S},
    {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"q3_k_l", LLAMA_FTYPE_MOSTLY_Q3_K_L}, {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S},
    {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M},
    /* the i-quants, ternary and FP4 file types (llama.cpp's names; mxfp4 = MXFP4_MOE, all MXFP4
     * when pure; pure iq2_s: see cmd_quantize) */
    {"mxfp4", LLAMA_FTYPE_MOSTLY_MXFP4_MOE},
    {"iq3_xxs", LLAMA_FTYPE_MOSTLY_IQ3_XXS}, {"iq3_s", LLAMA_FTYPE_MOSTLY_IQ3_S},     {"iq3_xs", LLAMA_FTYPE_MOSTLY_IQ3_XS},
    {"iq3_m", LLAMA_FTYPE_MOSTLY_IQ3_M},     {"iq2_xxs", LLAMA_FTYPE_MOSTLY_IQ2_XXS}, {"iq2_xs", LLAMA_FTYPE_MOSTLY_IQ2_XS},
    {"iq2_s", LLAMA_FTYPE_MOSTLY_IQ2_S},     {"iq2_m", LLAMA_FTYPE_MOSTLY_IQ2_M},     {"iq1_s", LLAMA_FTYPE_MOSTLY_IQ1_S},
    {"iq1_m", LLAMA_FTYPE_MOSTLY_IQ1_M},     {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL},   {"iq4_xs", LLAMA_FTYPE_MOSTLY_IQ4_XS},
    {"tq1_0", LLAMA_FTYPE_MOSTLY_TQ1_0},     {"tq2_0", LLAMA_FTYPE_MOSTLY_TQ2_0},     {"mxfp4_moe", LLAMA_FTYPE_MOSTLY_MXFP4_MOE},
    {"nvfp4", LLAMA_FTYPE_MOSTLY_NVFP4},     {"q1_0", LLAMA_FTYPE_MOSTLY_Q1_0},       {"q2_0", LLAMA_FTYPE_MOSTLY_Q2_0},
};

/* Synthetic importance matrices: every tensor of IN with 2+ dimensions gets ne0 * ne2 values
 * (entry k: column k % ne0 of expert k / ne0), from one of two fixed patterns:
 *   imatrix_auto_value: for the IQ2 / IQ1 types, which llama.cpp refuses without an importance
 *     matrix (and ggml asserts one for IQ2_XXS, IQ2_XS, IQ1_S on every tensor): values in
 *     [0.5, 1.5) from a fixed hash of k, like per-column activation energies;
 *   imatrix_synth_value (--imatrix-synth): so that the imatrix code paths of ggml's quantizers
 *     (and the recipes' "with imatrix" branches) can be compared with ours;
 *     tests/test_llamacpp.c computes the same values. Entry c of expert e:
 *     0.5 + ((37 c + 11 e) mod 16) / 8. */
static float imatrix_auto_value(int64_t k, int64_t ne0) {
    (void)ne0;
    return 0.5f + (float)(((size_t)k * 2654435761u + 12345u) % 1000u) / 1000.0f;
}
static float imatrix_synth_value(int64_t c, int64_t e) { return 0.5f + (float)((37 * c + 11 * e) % 16) / 8.0f; }
static float imatrix_synth_entry(int64_t k, int64_t ne0) { return imatrix_synth_value(k % ne0, k / ne0); }

typedef struct {
    struct llama_model_imatrix_data *entries; /* NULL-name terminated */
    char **names;
    float **data;
    int64_t n;
} imatrix_synth;

static void imatrix_synth_free(imatrix_synth *m) {
    for (int64_t i = 0; i < m->n; i++) free(m->names[i]), free(m->data[i]);
    free(m->entries), free(m->names), free(m->data);
    memset(m, 0, sizeof *m);
}

/* The importance matrix of the tensors of path with entry k = value(k, ne0) into *m (freed with
 * imatrix_synth_free); nonzero (reported) on failure. */
static int imatrix_synth_make(const char *path, float (*value)(int64_t k, int64_t ne0), imatrix_synth *m) {
    memset(m, 0, sizeof *m);
    struct ggml_context *gctx = NULL;
    struct gguf_init_params gp = {.no_alloc = true, .ctx = &gctx};
    struct gguf_context *g = gguf_init_from_file(path, gp);
    if (!g) return fail("%s: not a GGUF file ggml can read", path);
    const int64_t nt = gguf_get_n_tensors(g);
    m->entries = calloc((size_t)nt + 1, sizeof *m->entries);
    m->names = calloc((size_t)nt + 1, sizeof *m->names);
    m->data = calloc((size_t)nt + 1, sizeof *m->data);
    int rc = m->entries && m->names && m->data ? 0 : fail("out of memory");
    for (int64_t i = 0; i < nt && !rc; i++) {
        const struct ggml_tensor *t = ggml_get_tensor(gctx, gguf_get_tensor_name(g, i));
        if (!t || ggml_n_dims(t) < 2) continue;
        const int64_t n = t->ne[0] * t->ne[2];
        float *v = malloc((size_t)n * sizeof *v);
        char *name = strdup(t->name);
        if (!v || !name) {
            free(v), free(name);
            rc = fail("out of memory");
            break;
        }
        for (int64_t k = 0; k < n; k++) v[k] = value(k, t->ne[0]);
        m->names[m->n] = name;
        m->data[m->n] = v;
        m->entries[m->n] = (struct llama_model_imatrix_data){name, v, (size_t)n};
        m->n++;
    }
    gguf_free(g);
    ggml_free(gctx);
    if (rc) imatrix_synth_free(m);
    return rc;
}

static int cmd_quantize(int argc, char **argv) {
    if (argc < 3) return fail("quantize needs IN OUT TYPE");
    const char *in = argv[0], *out = argv[1], *type = argv[2], *map = NULL;
    bool mix = false, imat = false;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--mix")) mix = true;
        else if (!strcmp(argv[i], "--imatrix-synth")) imat = true;
        else if (!strcmp(argv[i], "--type-map") && i + 1 < argc) map = argv[++i];
        else return fail("unknown option '%s'", argv[i]);
    }
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.nthread = 2;
    qp.pure = !mix;
    size_t k = 0;
    while (k < sizeof ftypes / sizeof ftypes[0] && strcasecmp(ftypes[k].name, type)) k++;
    if (k == sizeof ftypes / sizeof ftypes[0]) return fail("unknown TYPE '%s' (q8_0 q4_0 ... q6_k, q4_k_m ...)", type);
    qp.ftype = ftypes[k].ftype;
    /* pure: every tensor in the named tensor type, so the file type whose default is that type
     * (IQ2_S's default tensor type is IQ2_XS; IQ2_M's is IQ2_S) */
    if (!mix && qp.ftype == LLAMA_FTYPE_MOSTLY_IQ2_S) qp.ftype = LLAMA_FTYPE_MOSTLY_IQ2_M;
    /* --type-map: REGEX=TYPE,... into llama.cpp's tensor overrides (NULL-terminated). */
    struct llama_model_tensor_override ov[64];
    char *copy = map ? strdup(map) : NULL;
    int n_ov = 0, rc = 0;
    for (char *save = NULL, *item = copy ? strtok_r(copy, ",", &save) : NULL; item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strrchr(item, '=');
        if (!eq || eq == item || n_ov == 63) {
            rc = fail("--type-map: expected REGEX=TYPE items, at most 63, got '%s'", item);
            break;
        }
        *eq = 0;
        enum ggml_type t = type_by_name(eq + 1);
        if (t == GGML_TYPE_COUNT) rc = fail("--type-map: unknown type '%s'", eq + 1);
        ov[n_ov].pattern = item;
        ov[n_ov++].type = t;
    }
    ov[n_ov].pattern = NULL;
    ov[n_ov].type = GGML_TYPE_COUNT;
    if (n_ov) qp.tt_overrides = ov;
    /* the IQ2 / IQ1 types llama.cpp refuses without an importance matrix, quantized pure (no
     * --mix) and without --imatrix-synth, get imatrix_auto_value's (the references of those cases) */
    static const char *const needs_synth[] = {"iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"};
    bool auto_imat = false;
    for (size_t k = 0; k < sizeof needs_synth / sizeof *needs_synth; k++) auto_imat |= !strcasecmp(type, needs_synth[k]);
    auto_imat &= !mix && !imat;
    imatrix_synth im = {0};
    if (!rc && (auto_imat || imat) && !(rc = imatrix_synth_make(in, imat ? imatrix_synth_entry : imatrix_auto_value, &im)))
        qp.imatrix = im.entries;
    if (!rc && llama_model_quantize(in, out, &qp) != 0) rc = fail("llama_model_quantize %s -> %s (%s) failed", in, out, type);
    imatrix_synth_free(&im);
    free(copy);
    return rc;
}

/* One tensor's floats into path. */
static int dump_tensor(const struct ggml_tensor *t, const char *path) {
    const struct ggml_type_traits *tr = ggml_get_type_traits(t->type);
    if (t->type != GGML_TYPE_F32 && (!tr || !tr->to_float)) return fail("type %s has no to_float", ggml_type_name(t->type));
    int64_t n = ggml_nelements(t);
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) return fail("out of memory");
    if (t->type == GGML_TYPE_F32) memcpy(x, t->data, (size_t)n * sizeof *x);
    else tr->to_float(t->data, x, n);
    int rc = write_floats(path, x, (size_t)n);
    free(x);
    return rc;
}

/* TENSOR '*': every tensor, each into OUT/NAME.f32 (OUT a directory). */
static int cmd_dequantize(int argc, char **argv) {
    if (argc != 4 || strcmp(argv[2], "--out")) return fail("usage: dequantize MODEL TENSOR|'*' --out F|DIR");
    struct ggml_context *gctx = NULL;
    struct gguf_init_params gp = {.no_alloc = false, .ctx = &gctx};
    struct gguf_context *g = gguf_init_from_file(argv[0], gp);
    if (!g) return fail("%s: not a GGUF file ggml can read", argv[0]);
    int rc = 0;
    if (!strcmp(argv[1], "*")) {
        for (int64_t i = 0; i < gguf_get_n_tensors(g) && !rc; i++) {
            const char *name = gguf_get_tensor_name(g, i);
            char path[PATH_MAX];
            if ((size_t)snprintf(path, sizeof path, "%s/%s.f32", argv[3], name) >= sizeof path) rc = fail("path too long");
            else rc = dump_tensor(ggml_get_tensor(gctx, name), path);
        }
    } else {
        struct ggml_tensor *t = ggml_get_tensor(gctx, argv[1]);
        rc = t ? dump_tensor(t, argv[3]) : fail("%s: no tensor '%s'", argv[0], argv[1]);
    }
    gguf_free(g);
    ggml_free(gctx);
    return rc;
}

/* Every tensor of MODEL and its stored type, one "NAME TYPE" line each (ggml's type names). */
static int cmd_types(int argc, char **argv) {
    if (argc != 1) return fail("usage: types MODEL");
    struct gguf_init_params gp = {.no_alloc = true, .ctx = NULL};
    struct gguf_context *g = gguf_init_from_file(argv[0], gp);
    if (!g) return fail("%s: not a GGUF file ggml can read", argv[0]);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++)
        printf("%s %s\n", gguf_get_tensor_name(g, i), ggml_type_name(gguf_get_tensor_type(g, i)));
    gguf_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3 || !strcmp(argv[1], "--help")) {
        fputs(usage_text, argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
        return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 1;
    }
    const char *cmd = argv[1];
    if (load_backends()) return 1;
    if (!strcmp(cmd, "logits")) return cmd_logits(argc - 2, argv + 2);
    if (!strcmp(cmd, "greedy")) return cmd_greedy(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenize")) return cmd_tokenize(argc - 2, argv + 2);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc - 2, argv + 2);
    if (!strcmp(cmd, "dequantize")) return cmd_dequantize(argc - 2, argv + 2);
    if (!strcmp(cmd, "types")) return cmd_types(argc - 2, argv + 2);
    return fail("unknown subcommand '%s'", cmd);
}
