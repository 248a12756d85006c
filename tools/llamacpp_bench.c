/* llamacpp_bench.c — the llama.cpp side of the side-by-side measurement (tools/side_by_side.sh).
 *
 * Not part of the engine and not built by `make` (it needs llama.cpp): `make llamacpp`
 * (tools/llamacpp.sh) compiles it against the headers of the llama.cpp source that node-llama-cpp ships and links the prebuilt
 * libraries from its npm package. It mirrors `edge0-infer bench` step by step so that the two
 * rows compare like for like: the same prompt token ids, one batched prefill (chunks of at most
 * 512 tokens), the argmax of the first token counted in the prefill, --warmup untimed greedy
 * steps, then --ntok timed greedy steps; one JSON row per run on stdout. --batch-size B mirrors
 * `bench --batch-size B`: the prompt prefilled into each of B sequences, then one llama_decode of
 * B tokens (one per sequence) per step. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef LLAMACPP_PACKAGE
#define LLAMACPP_PACKAGE "unknown"
#endif
#ifndef LLAMACPP_SOURCE_COMMIT
#define LLAMACPP_SOURCE_COMMIT "unknown"
#endif

#define MAX_PROMPT_TOKENS (1 << 20)
#define MAX_UBATCH 512

static const char usage_text[] =
    "usage: llamacpp-bench --model F (--tokens-file T | --n-prompt N) [--ntok 100] [--warmup 10]\n"
    "         [--threads N] [--prefill-threads N] [--context N] [--runs 1] [--no-mmap]\n"
    "         [--no-repack] [--backend-dir D] [--verbose]\n"
    "Loads F with llama.cpp on the CPU, prefills the prompt (token ids from T, whitespace-separated\n"
    "as `edge0-infer tokenize` prints them, or N pseudo-random ids) in one batch of at most 512\n"
    "tokens per chunk, then decodes greedily: --warmup untimed steps, then --ntok timed steps.\n"
    "Prints one JSON row per run on stdout, shaped like `edge0-infer bench` rows.\n"
    "  --no-mmap         read the weights into memory instead of mapping the file (llama.cpp's\n"
    "                    default, kept otherwise, is to map it)\n"
    "  --no-repack       no copies of the weights in the CPU backend's interleaved layouts (llama.cpp\n"
    "                    makes them by default, in anonymous memory next to the mapped file)\n"
    "  --context N       KV cache size (default: prompt + warmup + ntok, rounded up to 256)\n"
    "  --threads N       decode threads (default: the online CPUs); --prefill-threads: the same\n"
    "  --backend-dir D   where libggml-cpu-*.so are (default: ../llamacpp/lib next to this binary)\n"
    "  --batch-size B    B sequences: the prompt prefilled into each (timed together), then one\n"
    "                    llama_decode of B tokens (one per sequence) per step, as `edge0-infer bench\n"
    "                    --batch-size B` runs them; decode tok/s is the aggregate (B * steps / time)\n"
    "  --duration S      sustained: decode for S seconds after the warm-up (the context restarts at\n"
    "                    the prompt when full, as `edge0-infer bench --mode sustained` does); the row's\n"
    "                    \"sustained\" holds the mean tok/s and the per-second series\n"
    "llama-bench's long-context test, as `edge0-infer bench -d` runs it (edge0-bench compare --depth):\n"
    "  -d D -p P -n N [-r R] [-c C] [--no-warmup] [-t T]   D pseudo-random tokens in the KV cache\n"
    "                    (untimed), then P prompt tokens (ppP) or N generated tokens (tgN) timed; the ids\n"
    "                    come from edge0's generator (xorshift64*, the same seed), chunks of 256;\n"
    "                    one JSON row shaped like `bench -o jsonl` (test, avg_ts, median_ts, samples_ts)\n";

typedef struct {
    const char *model, *tokens_file, *backend_dir;
    long n_prompt, ntok, warmup, threads, prefill_threads, context, runs;
    long batch_size; /* --batch-size B: B sequences decoded together (0 = one, the plain loop) */
    bool no_mmap, no_repack, verbose;
    double duration;                /* --duration: sustained decode seconds (0 = off) */
    long lb_depth, lb_p, lb_n, lb_r; /* -d/-p/-n/-r: llama-bench mode when lb_depth >= 0 */
    bool lb_no_warmup;
} bench_args;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llamacpp-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A whole decimal number in [lo, hi]; -1 on anything else. */
static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return fail("%s: expected a whole number from %ld to %ld, got '%s'", flag, lo, hi, s);
    *out = v;
    return 0;
}

static int parse_args(bench_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (!strcmp(f, "--no-mmap")) { a->no_mmap = true; continue; }
        if (!strcmp(f, "--no-repack")) { a->no_repack = true; continue; }
        if (!strcmp(f, "--verbose")) { a->verbose = true; continue; }
        if (!strcmp(f, "--no-warmup")) { a->lb_no_warmup = true; continue; }
        if (i + 1 >= argc) return fail("%s: missing value (see --help)", f);
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(f, "--model")) a->model = v;
        else if (!strcmp(f, "--tokens-file")) a->tokens_file = v;
        else if (!strcmp(f, "--backend-dir")) a->backend_dir = v;
        else if (!strcmp(f, "--n-prompt")) rc = parse_long(f, v, 1, MAX_PROMPT_TOKENS, &a->n_prompt);
        else if (!strcmp(f, "--ntok")) rc = parse_long(f, v, 1, 1000000, &a->ntok);
        else if (!strcmp(f, "--warmup")) rc = parse_long(f, v, 0, 1000000, &a->warmup);
        else if (!strcmp(f, "--threads")) rc = parse_long(f, v, 1, 1024, &a->threads);
        else if (!strcmp(f, "--prefill-threads")) rc = parse_long(f, v, 1, 1024, &a->prefill_threads);
        else if (!strcmp(f, "--context")) rc = parse_long(f, v, 16, 1 << 24, &a->context);
        else if (!strcmp(f, "--runs")) rc = parse_long(f, v, 1, 1000, &a->runs);
        else if (!strcmp(f, "--batch-size")) rc = parse_long(f, v, 1, 256, &a->batch_size);
        else if (!strcmp(f, "-d")) rc = parse_long(f, v, 0, 1 << 24, &a->lb_depth);
        else if (!strcmp(f, "-p")) rc = parse_long(f, v, 0, 1 << 24, &a->lb_p);
        else if (!strcmp(f, "-n")) rc = parse_long(f, v, 0, 1 << 24, &a->lb_n);
        else if (!strcmp(f, "-r")) rc = parse_long(f, v, 1, 1000, &a->lb_r);
        else if (!strcmp(f, "-t")) rc = parse_long(f, v, 1, 1024, &a->threads);
        else if (!strcmp(f, "-c")) rc = parse_long(f, v, 16, 1 << 24, &a->context);
        else if (!strcmp(f, "--duration")) {
            char *end;
            a->duration = strtod(v, &end);
            if (*end || !(a->duration > 0) || a->duration > 7 * 86400) rc = fail("--duration: expected seconds > 0, got '%s'", v);
        }
        else return fail("unknown option '%s' (see --help)", f);
        if (rc) return rc;
    }
    if (!a->model) return fail("--model is required (see --help)");
    if (a->lb_depth >= 0) {
        if (a->tokens_file || a->n_prompt || a->duration > 0) return fail("-d (llama-bench mode) takes -p/-n, not --tokens-file, --n-prompt or --duration");
        if (!a->lb_p == !a->lb_n) return fail("-d: give one test, -p P or -n N (the other 0)");
        if (a->prefill_threads == 0) a->prefill_threads = a->threads;
        return 0;
    }
    if (!a->tokens_file == !a->n_prompt) return fail("give exactly one of --tokens-file and --n-prompt");
    if (a->prefill_threads == 0) a->prefill_threads = a->threads; /* both 0: the CPU count, later */
    return 0;
}

/* Token ids from a text file: decimal numbers separated by whitespace, each below n_vocab. */
static int read_tokens(const char *path, int32_t n_vocab, llama_token **ids, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) return fail("%s: %s", path, strerror(errno));
    int cap = 0, count = 0, rc = 0;
    llama_token *v = NULL;
    char word[32];
    int c;
    for (;;) {
        int len = 0;
        while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r')) {}
        if (c == EOF) break;
        while (c != EOF && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            if (c < '0' || c > '9' || len >= 10) {
                rc = fail("%s: token %d is not a token id (a decimal number)", path, count + 1);
                goto out;
            }
            word[len++] = (char)c;
            c = fgetc(f);
        }
        word[len] = 0;
        long id = strtol(word, NULL, 10);
        if (id >= n_vocab) {
            rc = fail("%s: token id %ld is outside the model's vocabulary (%" PRId32 " tokens)", path, id, n_vocab);
            goto out;
        }
        if (count >= MAX_PROMPT_TOKENS) {
            rc = fail("%s: more than %d token ids", path, MAX_PROMPT_TOKENS);
            goto out;
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 1024;
            llama_token *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                rc = fail("out of memory");
                goto out;
            }
            v = nv;
        }
        v[count++] = (llama_token)id;
    }
    if (ferror(f)) rc = fail("%s: read error", path);
    else if (count == 0) rc = fail("%s: no token ids", path);
out:
    fclose(f);
    if (rc) free(v);
    else {
        *ids = v;
        *n = count;
    }
    return rc;
}

/* Deterministic pseudo-random ids (xorshift), like llama-bench's synthetic prompts. */
static llama_token *synthetic_tokens(long n, int32_t n_vocab) {
    llama_token *v = malloc((size_t)n * sizeof *v);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (long i = 0; v && i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[i] = (llama_token)(x % (uint64_t)n_vocab);
    }
    return v;
}

static llama_token argmax(const float *logits, int32_t n_vocab) {
    llama_token best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* A "VmHWM:   123 kB" style field of /proc/self/status in bytes, or -1. */
static long long proc_status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            kb = strtoll(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between closest ranks, as in src/measure/stats.c. */
static double percentile_sorted(const double *s, size_t n, double p) {
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n) return s[n - 1];
    return s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
}

static json_t *itl_json(const double *itl, size_t n) {
    double *s = malloc(n * sizeof *s), sum = 0;
    if (!s) return json_null();
    memcpy(s, itl, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    for (size_t i = 0; i < n; i++) sum += s[i];
    json_t *o = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t)n, "min", s[0], "max", s[n - 1],
                          "mean", sum / (double)n, "p50", percentile_sorted(s, n, 0.5), "p95",
                          percentile_sorted(s, n, 0.95), "p99", percentile_sorted(s, n, 0.99));
    free(s);
    return o;
}

/* Results of one run. */
typedef struct {
    double prefill_s, decode_s;
    double *itl;
    llama_token first_tokens[8];
    long n_decode;                 /* timed steps (--duration: all of them) */
    double *series_t, *series_y;   /* --duration: tok/s per second of decode, at t seconds */
    int n_series, cap_series;
} run_result;

static int eval_tokens(struct llama_context *ctx, llama_token *ids, int n) {
    int rc = llama_decode(ctx, llama_batch_get_one(ids, n));
    if (rc) return fail("llama_decode failed (%d) with %d tokens", rc, n);
    return 0;
}

static int run_once(struct llama_context *ctx, int32_t n_vocab, llama_token *prompt, int n_prompt, int n_batch,
                    const bench_args *a, run_result *r) {
    llama_memory_clear(llama_get_memory(ctx), true);
    double t0 = now_seconds();
    for (int done = 0; done < n_prompt; done += n_batch) {
        int n = n_prompt - done < n_batch ? n_prompt - done : n_batch;
        if (eval_tokens(ctx, prompt + done, n)) return 1;
    }
    llama_token tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    r->prefill_s = now_seconds() - t0;
    r->first_tokens[0] = tok;
    for (long k = 0; k < a->warmup; k++) {
        if (eval_tokens(ctx, &tok, 1)) return 1;
        tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        if (k + 1 < 8) r->first_tokens[k + 1] = tok;
    }
    double start = now_seconds(), prev = start;
    if (a->duration > 0) { /* sustained: decode until --duration, the context restarted at the prompt when full */
        long pos = n_prompt + a->warmup, window_count = 0;
        double window_start = start;
        r->n_decode = 0;
        r->n_series = 0;
        for (;;) {
            if (pos + 1 > (long)llama_n_ctx(ctx)) {
                llama_memory_seq_rm(llama_get_memory(ctx), 0, n_prompt, -1);
                pos = n_prompt;
            }
            if (eval_tokens(ctx, &tok, 1)) return 1;
            pos++;
            tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
            double t = now_seconds();
            if (r->n_decode < a->ntok) r->itl[r->n_decode] = t - prev;
            r->n_decode++;
            prev = t;
            if (t - start >= a->duration) break;
            if (t - window_start >= 1.0) {
                if (r->n_series == r->cap_series) {
                    int cap = r->cap_series ? r->cap_series * 2 : 256;
                    double *nt = realloc(r->series_t, (size_t)cap * sizeof *nt);
                    if (nt) r->series_t = nt;
                    double *ny = nt ? realloc(r->series_y, (size_t)cap * sizeof *ny) : NULL;
                    if (ny) r->series_y = ny;
                    if (!nt || !ny) return fail("out of memory");
                    r->cap_series = cap;
                }
                r->series_t[r->n_series] = t - start;
                r->series_y[r->n_series++] = (double)(r->n_decode - window_count) / (t - window_start);
                window_start = t;
                window_count = r->n_decode;
            }
        }
        r->decode_s = prev - start;
        return 0;
    }
    r->n_decode = a->ntok;
    for (long k = 0; k < a->ntok; k++) {
        if (eval_tokens(ctx, &tok, 1)) return 1;
        tok = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        double t = now_seconds();
        r->itl[k] = t - prev;
        prev = t;
        long step = a->warmup + k + 1;
        if (step < 8) r->first_tokens[step] = tok;
    }
    r->decode_s = prev - start;
    return 0;
}

/* --batch-size B: sequence s (0 .. B-1) gets the prompt prefilled on its own (chunks of n_batch,
 * seq id s; the B prefills timed together: packing several sequences' chunks into one
 * llama_decode, as edge0 does, was slower for llama.cpp, docs/perf.md session 19), then every step is one llama_decode of B tokens, token
 * s at sequence s's next position; greedy per sequence. *agree: every sequence chose the same ids
 * (they share the prompt). first_tokens are sequence 0's. */
static int run_batch(struct llama_context *ctx, int32_t n_vocab, llama_token *prompt, int n_prompt, int n_batch, int B,
                     const bench_args *a, run_result *r, bool *agree) {
    llama_memory_clear(llama_get_memory(ctx), true);
    int cap = n_batch > B ? n_batch : B;
    struct llama_batch b = llama_batch_init(cap, 0, 1);
    llama_token *tok = malloc((size_t)B * sizeof *tok);
    int rc = 0;
    if (!tok) {
        llama_batch_free(b);
        return fail("out of memory");
    }
    *agree = true;
    double t0 = now_seconds();
    for (int s = 0; s < B && !rc; s++)
        for (int done = 0; done < n_prompt && !rc; done += n_batch) {
            int n = n_prompt - done < n_batch ? n_prompt - done : n_batch;
            b.n_tokens = n;
            for (int i = 0; i < n; i++) {
                b.token[i] = prompt[done + i];
                b.pos[i] = done + i;
                b.n_seq_id[i] = 1;
                b.seq_id[i][0] = s;
                b.logits[i] = done + i == n_prompt - 1;
            }
            if (llama_decode(ctx, b)) rc = fail("llama_decode failed: sequence %d's prompt", s);
            else if (done + n == n_prompt) tok[s] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
    r->prefill_s = now_seconds() - t0;
    if (!rc) r->first_tokens[0] = tok[0];
    double start = 0, prev = 0;
    for (long k = 0; k < a->warmup + a->ntok && !rc; k++) {
        if (k == a->warmup) start = prev = now_seconds();
        b.n_tokens = B;
        for (int s = 0; s < B; s++) {
            b.token[s] = tok[s];
            b.pos[s] = (llama_pos)(n_prompt + k);
            b.n_seq_id[s] = 1;
            b.seq_id[s][0] = s;
            b.logits[s] = 1;
        }
        if (llama_decode(ctx, b)) {
            rc = fail("llama_decode failed: a batch of %d sequences", B);
            break;
        }
        for (int s = 0; s < B; s++) {
            tok[s] = argmax(llama_get_logits_ith(ctx, s), n_vocab);
            if (tok[s] != tok[0]) *agree = false;
        }
        if (k + 1 < 8) r->first_tokens[k + 1] = tok[0];
        if (k >= a->warmup) {
            double t = now_seconds();
            r->itl[k - a->warmup] = t - prev;
            prev = t;
        }
    }
    r->n_decode = a->ntok;
    r->decode_s = prev - start;
    free(tok);
    llama_batch_free(b);
    return rc;
}

/* ---- llama-bench mode (-d): one test at a KV depth, as `edge0-infer bench -d` runs it ---- */

/* xorshift64* with edge0's seed and draw order (src/cli/cmd_bench_llama.c), so both engines get
 * the same pseudo-random ids when their vocabularies have the same size. */
static uint64_t lb_rng = 0x9E3779B97F4A7C15ull;
static llama_token lb_token(int32_t n_vocab) {
    lb_rng ^= lb_rng >> 12;
    lb_rng ^= lb_rng << 25;
    lb_rng ^= lb_rng >> 27;
    return (llama_token)((lb_rng * 0x2545F4914F6CDD1Dull >> 33) % (uint64_t)n_vocab);
}

#define LB_CHUNK 256 /* prefill chunk: edge0's bench -b default */

static int lb_eval_random(struct llama_context *ctx, long n, int32_t n_vocab) {
    llama_token buf[LB_CHUNK];
    for (long done = 0; done < n;) {
        int k = n - done < LB_CHUNK ? (int)(n - done) : LB_CHUNK;
        for (int i = 0; i < k; i++) buf[i] = lb_token(n_vocab);
        if (eval_tokens(ctx, buf, k)) return 1;
        done += k;
    }
    return 0;
}

/* One repetition: depth untimed, then the test timed; seconds in *secs. */
static int lb_run(struct llama_context *ctx, int32_t n_vocab, const bench_args *a, double *secs) {
    llama_memory_clear(llama_get_memory(ctx), true);
    if (lb_eval_random(ctx, a->lb_depth, n_vocab)) return 1;
    double t0 = now_seconds();
    if (lb_eval_random(ctx, a->lb_p, n_vocab)) return 1;
    for (long k = 0; k < a->lb_n; k++) {
        llama_token tok = lb_token(n_vocab);
        if (eval_tokens(ctx, &tok, 1)) return 1;
    }
    *secs = now_seconds() - t0;
    return 0;
}

static int lb_main(struct llama_model *model, const bench_args *a, const struct stat *st) {
    int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    long need = a->lb_depth + a->lb_p + a->lb_n, n_ctx = a->context ? a->context : need;
    if (need > n_ctx) return fail("-d %ld with %s%ld needs %ld positions, the context has %ld (raise -c)", a->lb_depth,
                                  a->lb_p ? "pp" : "tg", a->lb_p ? a->lb_p : a->lb_n, need, n_ctx);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = cp.n_ubatch = LB_CHUNK;
    cp.n_threads = (int32_t)a->threads;
    cp.n_threads_batch = (int32_t)a->prefill_threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return fail("llama.cpp could not create a context of %ld tokens (rerun with --verbose)", n_ctx);
    double secs, *samples = malloc((size_t)a->lb_r * sizeof *samples);
    if (!samples) return fail("out of memory");
    if (!a->lb_no_warmup && lb_run(ctx, n_vocab, a, &secs)) return 1;
    for (long r = 0; r < a->lb_r; r++)
        if (lb_run(ctx, n_vocab, a, &samples[r])) return 1;
    long n_tok = a->lb_p + a->lb_n;
    double *ts = malloc((size_t)a->lb_r * sizeof *ts), mean_ts = 0, mean_ns = 0;
    if (!ts) return fail("out of memory");
    json_t *sts = json_array(), *sns = json_array();
    for (long r = 0; r < a->lb_r; r++) {
        ts[r] = (double)n_tok / samples[r];
        mean_ts += ts[r] / (double)a->lb_r;
        mean_ns += samples[r] * 1e9 / (double)a->lb_r;
        json_array_append_new(sts, json_real(ts[r]));
        json_array_append_new(sns, json_integer((json_int_t)(samples[r] * 1e9)));
    }
    qsort(ts, (size_t)a->lb_r, sizeof *ts, cmp_double);
    char test[96], desc[256];
    snprintf(test, sizeof test, "%s%ld @ d%ld", a->lb_p ? "pp" : "tg", a->lb_p ? a->lb_p : a->lb_n, a->lb_depth);
    llama_model_desc(model, desc, sizeof desc);
    json_t *row = json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:I, s:f, s:f, s:f, s:f, s:o, s:o, s:I, s:s, s:s, s:I, s:I}", "test", test,
                            "n_prompt", (json_int_t)a->lb_p, "n_gen", (json_int_t)a->lb_n, "n_depth", (json_int_t)a->lb_depth,
                            "repetitions", (json_int_t)a->lb_r, "warmup", !a->lb_no_warmup, "avg_ns", (json_int_t)mean_ns,
                            "avg_ts", mean_ts, "median_ts", percentile_sorted(ts, (size_t)a->lb_r, 0.5), "min_ts", ts[0],
                            "max_ts", ts[a->lb_r - 1], "samples_ts", sts, "samples_ns", sns, "n_ctx", (json_int_t)llama_n_ctx(ctx),
                            "type_k", "f16", "type_v", "f16", "n_threads", (json_int_t)a->threads, "n_batch", (json_int_t)LB_CHUNK);
    json_object_set_new(row, "memory", json_pack("{s:I}", "peak_rss_bytes", (json_int_t)proc_status_bytes("VmHWM")));
    json_object_set_new(row, "engine", json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "llama.cpp", "version", ggml_version(),
                                                 "commit", ggml_commit(), "package", LLAMACPP_PACKAGE, "source_commit",
                                                 LLAMACPP_SOURCE_COMMIT, "system_info", llama_print_system_info()));
    json_object_set_new(row, "model", json_pack("{s:s, s:I, s:s, s:I}", "path", a->model, "size", (json_int_t)st->st_size,
                                                "description", desc, "n_vocab", (json_int_t)n_vocab));
    char *text = json_dumps(row, JSON_COMPACT);
    json_decref(row);
    if (!text) return fail("out of memory");
    puts(text);
    fflush(stdout);
    fprintf(stderr, "%s: %.2f t/s (median of %ld)\n", test, percentile_sorted(ts, (size_t)a->lb_r, 0.5), a->lb_r);
    free(text);
    free(ts);
    free(samples);
    llama_free(ctx);
    return 0;
}

/* BUILD/llamacpp/lib for BUILD/bin/llamacpp-bench, as tools/llamacpp.sh lays them out. */
static int default_backend_dir(char *out, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return fail("cannot find this program's path (/proc/self/exe); give --backend-dir");
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    if ((size_t)snprintf(out, cap, "%s/../llamacpp/lib", exe) >= cap) return fail("path too long: %s", exe);
    return 0;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *verbose) {
    if (verbose || level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    bench_args a = {.ntok = 100, .warmup = 10, .runs = 1, .lb_depth = -1, .lb_r = 5};
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        a.threads = n > 0 ? n : 1;
        if (a.prefill_threads == 0) a.prefill_threads = a.threads;
    }
    char backend_dir[PATH_MAX + 32];
    if (!a.backend_dir) {
        if (default_backend_dir(backend_dir, sizeof backend_dir)) return 1;
        a.backend_dir = backend_dir;
    }

    struct stat st;
    if (stat(a.model, &st) != 0) return fail("%s: %s", a.model, strerror(errno));
    llama_log_set(quiet_log, a.verbose ? (void *)1 : NULL);
    /* The CPU backend is one of several builds (sse42 ... sapphirerapids); ggml picks the best. */
    ggml_backend_load_all_from_path(a.backend_dir);
    if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU))
        return fail("no CPU backend found in %s (libggml-cpu-*.so)", a.backend_dir);
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    if (a.no_mmap) mp.load_mode = LLAMA_LOAD_MODE_NONE;
    if (a.no_repack) mp.use_extra_bufts = false;
    double t_load = now_seconds();
    struct llama_model *model = llama_model_load_from_file(a.model, mp);
    if (!model) return fail("%s: llama.cpp could not load the model (rerun with --verbose)", a.model);
    if (a.lb_depth >= 0) {
        rc = lb_main(model, &a, &st);
        llama_model_free(model);
        llama_backend_free();
        return rc;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int32_t n_vocab = llama_vocab_n_tokens(vocab);

    llama_token *prompt = NULL;
    int n_prompt = 0;
    if (a.tokens_file) {
        if (read_tokens(a.tokens_file, n_vocab, &prompt, &n_prompt)) return 1;
    } else {
        prompt = synthetic_tokens(a.n_prompt, n_vocab);
        if (!prompt) return fail("out of memory");
        n_prompt = (int)a.n_prompt;
    }
    long need = n_prompt + a.warmup + a.ntok;
    if (a.context == 0) a.context = (need + 255) / 256 * 256;
    if (need > a.context)
        return fail("context overflow: %d prompt + %ld warmup + %ld timed tokens > context size %ld (raise --context)",
                    n_prompt, a.warmup, a.ntok, a.context);
    int n_batch = n_prompt < MAX_UBATCH ? n_prompt : MAX_UBATCH;
    const int B = a.batch_size ? (int)a.batch_size : 1;
    if (a.batch_size && a.duration > 0) return fail("--batch-size and --duration: one or the other");
    if (B > n_batch) n_batch = B; /* one decode step holds B tokens */

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(a.context * B); /* every sequence its own --context (kv_unified off: n_ctx / B each) */
    cp.n_seq_max = (uint32_t)B;
    cp.kv_unified = false;
    cp.n_batch = cp.n_ubatch = (uint32_t)n_batch;
    cp.n_threads = (int32_t)a.threads;
    cp.n_threads_batch = (int32_t)a.prefill_threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return fail("llama.cpp could not create a context of %ld tokens (rerun with --verbose)", a.context);
    double load_s = now_seconds() - t_load;

    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    run_result r = {0};
    r.itl = malloc((size_t)a.ntok * sizeof *r.itl);
    if (!r.itl) return fail("out of memory");
    for (long run = 1; run <= a.runs; run++) {
        bool agree = true;
        if (a.batch_size ? run_batch(ctx, n_vocab, prompt, n_prompt, n_batch, B, &a, &r, &agree)
                         : run_once(ctx, n_vocab, prompt, n_prompt, n_batch, &a, &r))
            return 1;
        json_t *first = json_array();
        long n_first = a.warmup + a.ntok + 1 < 8 ? a.warmup + a.ntok + 1 : 8;
        for (long i = 0; i < n_first; i++) json_array_append_new(first, json_integer(r.first_tokens[i]));
        json_t *row = json_object();
        json_object_set_new(row, "run", json_integer(run));
        json_object_set_new(row, "mode", json_string("single"));
        json_object_set_new(row, "prompt_file", a.tokens_file ? json_string(a.tokens_file) : json_null());
        json_object_set_new(row, "load_seconds", json_real(load_s));
        json_object_set_new(row, "prefill_seconds", json_real(r.prefill_s));
        json_object_set_new(row, "prefill_tokens_per_second", json_real((double)B * n_prompt / r.prefill_s));
        json_object_set_new(row, "decode_tokens_per_second", json_real((double)B * r.n_decode / r.decode_s));
        json_object_set_new(row, "batch_size", json_integer(B));
        json_object_set_new(row, "per_sequence_decode_tokens_per_second", json_real((double)r.n_decode / r.decode_s));
        if (a.batch_size) json_object_set_new(row, "batch_sequences_agree", json_boolean(agree));
        json_object_set_new(row, "n_prompt", json_integer(n_prompt));
        json_object_set_new(row, "n_decode", json_integer(r.n_decode));
        json_object_set_new(row, "n_warmup", json_integer(a.warmup));
        json_object_set_new(row, "first_tokens", first);
        json_object_set_new(row, "itl", itl_json(r.itl, (size_t)(r.n_decode < a.ntok ? r.n_decode : a.ntok)));
        if (a.duration > 0) {
            json_t *ts = json_array(), *ys = json_array();
            for (int i = 0; i < r.n_series; i++)
                json_array_append_new(ts, json_real(r.series_t[i])), json_array_append_new(ys, json_real(r.series_y[i]));
            json_object_set_new(row, "mode", json_string("sustained"));
            json_object_set_new(row, "sustained", json_pack("{s:f, s:f, s:{s:f, s:o, s:o}}", "seconds", r.decode_s,
                                                            "mean_tokens_per_second", (double)r.n_decode / r.decode_s, "series",
                                                            "interval_s", 1.0, "t_s", ts, "tokens_per_second", ys));
        }
        json_object_set_new(row, "memory", json_pack("{s:I, s:I}", "peak_rss_bytes",
                                                     (json_int_t)proc_status_bytes("VmHWM"), "rss_bytes",
                                                     (json_int_t)proc_status_bytes("VmRSS")));
        json_object_set_new(row, "config",
                            json_pack("{s:I, s:I, s:I, s:b, s:I, s:I, s:s, s:s, s:b, s:s, s:I, s:I}", "threads",
                                      (json_int_t)a.threads, "prefill_threads", (json_int_t)a.prefill_threads,
                                      "context", (json_int_t)llama_n_ctx_seq(ctx), "mmap", !a.no_mmap, "n_batch",
                                      (json_int_t)n_batch, "n_ubatch", (json_int_t)n_batch, "kv_type", "f16",
                                      "flash_attn", "auto", "repack", mp.use_extra_bufts, "sampling", "greedy",
                                      "warmup", (json_int_t)a.warmup, "ntok", (json_int_t)a.ntok));
        json_object_set_new(row, "engine",
                            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "llama.cpp", "version",
                                      ggml_version(), "commit", ggml_commit(), "package", LLAMACPP_PACKAGE,
                                      "source_commit", LLAMACPP_SOURCE_COMMIT, "system_info",
                                      llama_print_system_info()));
        json_object_set_new(row, "model", json_pack("{s:s, s:I, s:s, s:I, s:I}", "path", a.model, "size",
                                                    (json_int_t)st.st_size, "description", desc, "params_total",
                                                    (json_int_t)llama_model_n_params(model), "n_vocab",
                                                    (json_int_t)n_vocab));
        char *s = json_dumps(row, JSON_COMPACT);
        json_decref(row);
        if (!s) return fail("out of memory");
        puts(s);
        fflush(stdout);
        free(s);
        fprintf(stderr, "run %ld: %d prompt tokens, first token %.3f s (%.1f tok/s prefill), %ld decode steps %.2f tok/s\n",
                run, n_prompt, r.prefill_s, n_prompt / r.prefill_s, r.n_decode, (double)r.n_decode / r.decode_s);
    }
    free(r.itl);
    free(r.series_t);
    free(r.series_y);
    free(prompt);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
