/* cmd_bench_llama.c — `bench` the way llama-bench measures: `edge0-infer bench -m F -p 512 -n 128`.
 *
 * Taken when any of -p, -n, -pg, -d, -r, -o is given (the prompt-driven `bench` of cmd_bench.c
 * otherwise). Every flag takes a comma list, as llama-bench's do, with ranges FIRST-LAST,
 * FIRST-LAST+STEP and FIRST-LAST*MULT, and every combination is run:
 *   -p N,...      prompt-processing tests ppN: N random token ids prefilled (default 512)
 *   -n N,...      text-generation tests tgN: N single-token decode steps (default 128)
 *   -pg P,N       a combined test ppP+tgN (repeatable); t/s = (P + N) / time
 *   -d D,...      depth: D random tokens are in the KV cache before the test (untimed; default 0)
 *   -t T,... -b B,... -ctk T,... -ctv T,...   threads, prefill chunk, KV cache types
 *   -r R          repetitions (default 5) after one untimed warm-up run (--no-warmup skips it)
 *   -o md|csv|json|jsonl   output on stdout (default md: llama-bench's table, t/s mean ± stddev)
 *   --progress    one line on stderr per test (and per repetition)
 * Like llama-bench the token ids are pseudo-random (a fixed seed, so runs compare) and a test of
 * 0 tokens is skipped. Each thread/batch/KV-type combination loads the model once; tests within
 * it reuse the context (truncated to 0 before each repetition). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "engine/options.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"
#include "quant/quant.h"

#define LB_MAX_LIST 32

typedef struct {
    int64_t v[LB_MAX_LIST];
    int n;
    bool given;
} lb_list;

typedef struct {
    cli_model_opts o;
    lb_list p, n, d, t, b;
    uint32_t ctk[LB_MAX_LIST], ctv[LB_MAX_LIST];
    int n_ctk, n_ctv;
    int64_t pg[LB_MAX_LIST][2];
    int n_pg;
    int64_t reps;
    bool warmup, progress;
    const char *fmt;
} lb_args;

/* One test: n_prompt tokens prefilled then n_gen decoded, at depth n_depth. */
typedef struct {
    int64_t n_prompt, n_gen, n_depth;
} lb_test;

bool cmd_bench_is_llama_style(int argc, char **argv) {
    static const char *const flags[] = {"-p", "-n", "-pg", "-d", "-r", "-o", "--n-prompt", "--n-gen", "--n-depth",
                                        "--repetitions", "--output"};
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
            if (!strcmp(argv[i], flags[k])) return true;
    return false;
}

static void help(void) {
    puts("usage: edge0-infer bench -m F [-p N,...] [-n N,...] [-pg P,N] [-d D,...] [-t T,...] [-b B,...]\n"
         "         [-ctk T,...] [-ctv T,...] [-r R] [--no-warmup] [-o md|csv|json|jsonl] [--progress]\n"
         "         [--model-option k=v ...]\n"
         "llama-bench's measurements (taken when any of -p, -n, -pg, -d, -r, -o is given): every\n"
         "combination of the lists is run, R repetitions after one untimed warm-up. A list is\n"
         "comma-separated and may hold ranges: 1-4 (1,2,3,4), 1-8+2 (1,3,5,7), 128-1024*2 (128,...,1024).\n"
         "  -p, --n-prompt N,...   prompt tests ppN: N random tokens prefilled (default 512; 0 = none)\n"
         "  -n, --n-gen N,...      generation tests tgN: N decode steps of one token (default 128; 0 = none)\n"
         "  -pg P,N                a combined test ppP+tgN (repeatable): t/s = (P + N) / time\n"
         "  -d, --n-depth D,...    tokens already in the KV cache when the test starts (untimed; default 0)\n"
         "  -t, --threads T,...    threads for prefill and decode (default: the physical cores, at most the\n"
         "                         usable CPUs)\n"
         "  -b, --batch-size B,... prefill chunk in tokens (default 512)\n"
         "  -ctk, -ctv T,...       KV cache types (f32 f16 bf16 q8_0 q4_0; default f16)\n"
         "  -r, --repetitions R    timed repetitions per test (default 5)\n"
         "  --no-warmup            skip the untimed warm-up run of each test\n"
         "  -o, --output FMT       md (default; llama-bench's table), csv, json (one array), jsonl (a row per test)\n"
         "  --progress             a line on stderr per test and repetition\n"
         "  -c N                   context size (default: the largest depth + test of the run)\n"
         "  --model-option k=v     as `bench --help` lists (experts=stream, memory_budget=..., ...)\n"
         "The token ids are pseudo-random with a fixed seed. Without these flags `bench` measures a\n"
         "real prompt instead (see `bench --help`).");
}

/* One item of a list: N, or a range as llama-bench writes them: FIRST-LAST (step 1),
 * FIRST-LAST+STEP, FIRST-LAST*MULT; appended to l. */
static int parse_item(const char *flag, char *tok, int64_t lo, int64_t hi, lb_list *l) {
    e0_err e;
    char *dash = strchr(tok + 1, '-'); /* tok + 1: a leading '-' is a sign, refused by the range check */
    int64_t first, last, step = 1;
    char op = '+';
    if (!dash) {
        if (l->n == LB_MAX_LIST) return cli_error("%s: at most %d values", flag, LB_MAX_LIST);
        return e0_parse_i64(tok, lo, hi, &l->v[l->n++], flag, &e) < 0 ? cli_error("%s", e.msg) : 0;
    }
    *dash = 0;
    char *rest = dash + 1, *st = strpbrk(rest, "+*");
    if (st) op = *st, *st = 0;
    if (e0_parse_i64(tok, lo, hi, &first, flag, &e) < 0 || e0_parse_i64(rest, lo, hi, &last, flag, &e) < 0 ||
        (st && e0_parse_i64(st + 1, op == '*' ? 2 : 1, hi > 1 ? hi : 2, &step, flag, &e) < 0))
        return cli_error("%s", e.msg);
    if (last < first) return cli_error("%s: range %lld-%lld goes down", flag, (long long)first, (long long)last);
    if (op == '*' && first == 0) return cli_error("%s: a *MULT range cannot start at 0", flag);
    for (int64_t v = first; v <= last; v = op == '*' ? v * step : v + step) {
        if (l->n == LB_MAX_LIST) return cli_error("%s: at most %d values", flag, LB_MAX_LIST);
        l->v[l->n++] = v;
    }
    return 0;
}

/* "512,1024", "128-1024*2", "1-4" into l (at most LB_MAX_LIST values in [lo, hi]). */
static int parse_list(const char *flag, const char *s, int64_t lo, int64_t hi, lb_list *l) {
    l->n = 0;
    l->given = true;
    char buf[512];
    if (strlen(s) >= sizeof buf || !*s) return cli_error("%s: expected a comma list of numbers, got '%s'", flag, s);
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (parse_item(flag, tok, lo, hi, l)) return 1;
    if (l->n == 0) return cli_error("%s: expected a comma list of numbers, got '%s'", flag, s);
    return 0;
}

static int parse_types(const char *flag, const char *s, uint32_t *types, int *n) {
    char buf[512];
    *n = 0;
    if (strlen(s) >= sizeof buf || !*s) return cli_error("%s: expected a comma list of KV types, got '%s'", flag, s);
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == LB_MAX_LIST) return cli_error("%s: at most %d values", flag, LB_MAX_LIST);
        e0_err e;
        if (e0_kv_type_parse(tok, &types[*n], &e) < 0) return cli_error("%s: %s", flag, e.msg);
        (*n)++;
    }
    return *n ? 0 : cli_error("%s: expected a comma list of KV types, got '%s'", flag, s);
}

static int parse_args(lb_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), -1;
        if (!strcmp(f, "--no-warmup")) {
            a->warmup = false;
            continue;
        }
        if (!strcmp(f, "--progress")) {
            a->progress = true;
            continue;
        }
        /* list-valued flags first: -t, -b, -ctk, -ctv are single-valued in cli_model_flag */
        static const char *const lists[] = {"-p", "--n-prompt", "-n", "--n-gen", "-d", "--n-depth", "-t", "--threads",
                                            "-b", "--batch-size", "-ctk", "--cache-type-k", "-ctv", "--cache-type-v",
                                            "-pg", "-r", "--repetitions", "-o", "--output"};
        bool is_list = false;
        for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) is_list |= !strcmp(f, lists[k]);
        if (!is_list) {
            int r = cli_model_flag(&a->o, argc, argv, &i);
            if (r < 0) return 1;
            if (r) continue;
            return cli_error("bench: unknown option '%s' (see bench -p 512 --help)", f);
        }
        if (!(v = cli_value(argc, argv, &i))) return 1;
        int rc = 0;
        if (!strcmp(f, "-p") || !strcmp(f, "--n-prompt")) rc = parse_list(f, v, 0, 1 << 20, &a->p);
        else if (!strcmp(f, "-n") || !strcmp(f, "--n-gen")) rc = parse_list(f, v, 0, 1 << 20, &a->n);
        else if (!strcmp(f, "-d") || !strcmp(f, "--n-depth")) rc = parse_list(f, v, 0, 1 << 24, &a->d);
        else if (!strcmp(f, "-t") || !strcmp(f, "--threads")) rc = parse_list(f, v, 1, 1024, &a->t);
        else if (!strcmp(f, "-b") || !strcmp(f, "--batch-size")) rc = parse_list(f, v, 1, 1 << 16, &a->b);
        else if (!strcmp(f, "-ctk") || !strcmp(f, "--cache-type-k")) rc = parse_types(f, v, a->ctk, &a->n_ctk);
        else if (!strcmp(f, "-ctv") || !strcmp(f, "--cache-type-v")) rc = parse_types(f, v, a->ctv, &a->n_ctv);
        else if (!strcmp(f, "-pg")) {
            lb_list l;
            if ((rc = parse_list(f, v, 0, 1 << 20, &l)) == 0 && l.n != 2) rc = cli_error("-pg: expected P,N (got '%s')", v);
            if (!rc && a->n_pg == LB_MAX_LIST) rc = cli_error("-pg: at most %d", LB_MAX_LIST);
            if (!rc) a->pg[a->n_pg][0] = l.v[0], a->pg[a->n_pg][1] = l.v[1], a->n_pg++;
        } else if (!strcmp(f, "-r") || !strcmp(f, "--repetitions")) {
            e0_err e;
            if (e0_parse_i64(v, 1, 10000, &a->reps, f, &e) < 0) rc = cli_error("%s", e.msg);
        } else if (!strcmp(v, "md") || !strcmp(v, "csv") || !strcmp(v, "json") || !strcmp(v, "jsonl")) {
            a->fmt = v;
        } else {
            rc = cli_error("%s: expected md, csv, json or jsonl (got '%s')", f, v);
        }
        if (rc) return rc;
    }
    if (!a->o.model) return cli_error("bench: --model is required");
    if (!a->p.given) a->p = (lb_list){.v = {512}, .n = 1};
    if (!a->n.given) a->n = (lb_list){.v = {128}, .n = 1};
    if (!a->d.given) a->d = (lb_list){.v = {0}, .n = 1};
    return 0;
}

/* xorshift64*: the token ids of the tests (fixed seed, as llama-bench's std::rand()). */
static uint64_t lb_rng = 0x9E3779B97F4A7C15ull;
static int rand_token(int64_t n_vocab) {
    lb_rng ^= lb_rng >> 12;
    lb_rng ^= lb_rng << 25;
    lb_rng ^= lb_rng >> 27;
    return (int)((lb_rng * 0x2545F4914F6CDD1Dull >> 33) % (uint64_t)n_vocab);
}

/* Evaluate n random tokens in chunks of the context's batch (prefill). */
static int eval_random(e0_ctx *c, int64_t n, int *buf, int cap, e0_err *e) {
    const int64_t V = e0_ctx_model(c)->hp.n_vocab;
    for (int64_t done = 0; done < n;) {
        int k = n - done < cap ? (int)(n - done) : cap;
        for (int i = 0; i < k; i++) buf[i] = rand_token(V);
        if (e0_eval(c, buf, k, NULL, e) < 0) return -1;
        done += k;
    }
    return 0;
}

/* One repetition of test t: seconds for the timed part. */
static int run_test(e0_ctx *c, const lb_test *t, int *buf, int cap, double *secs, e0_err *e) {
    const int64_t V = e0_ctx_model(c)->hp.n_vocab;
    e0_ctx_truncate(c, 0);
    if (eval_random(c, t->n_depth, buf, cap, e) < 0) return -1;
    double t0 = e0_now();
    if (eval_random(c, t->n_prompt, buf, cap, e) < 0) return -1;
    for (int64_t k = 0; k < t->n_gen; k++) {
        int tok = rand_token(V);
        if (e0_decode(c, tok, e) < 0) return -1;
    }
    *secs = e0_now() - t0;
    return 0;
}

static const char *test_name(const lb_test *t, char *buf, size_t n) {
    int k = t->n_prompt && t->n_gen ? snprintf(buf, n, "pp%lld+tg%lld", (long long)t->n_prompt, (long long)t->n_gen)
            : t->n_prompt           ? snprintf(buf, n, "pp%lld", (long long)t->n_prompt)
                                    : snprintf(buf, n, "tg%lld", (long long)t->n_gen);
    if (t->n_depth && k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, " @ d%lld", (long long)t->n_depth);
    return buf;
}

/* "30.53B", "6.96M" */
static const char *count_label(uint64_t n, char *buf, size_t cap) {
    if (n >= 1000000000u) snprintf(buf, cap, "%.2fB", n / 1e9);
    else snprintf(buf, cap, "%.2fM", n / 1e6);
    return buf;
}

/* The model column: "qwen3moe 30.53B.A3.35B q4_K" (architecture, parameters, the weight type
 * with the most bytes). */
static const char *model_label(const e0_model *m, char *buf, size_t n) {
    uint64_t bytes[64] = {0};
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++)
        if (m->gguf->tensors[i].type < 64) bytes[m->gguf->tensors[i].type] += m->gguf->tensors[i].nbytes;
    uint32_t best = 0;
    for (uint32_t t = 1; t < 64; t++)
        if (bytes[t] > bytes[best]) best = t;
    char tb[32], total[32], active[32];
    count_label(m->params_total, total, sizeof total);
    count_label(m->params_active, active, sizeof active);
    if (m->params_active != m->params_total) snprintf(buf, n, "%s %s.A%s %s", m->hp.arch_name, total, active, e0_type_name(best, tb));
    else snprintf(buf, n, "%s %s %s", m->hp.arch_name, total, e0_type_name(best, tb));
    return buf;
}

typedef struct {
    json_t *rows; /* every result, in order (json / the md and csv printers read it too) */
    bool header_done;
} lb_out;

static void print_md_header(const lb_args *a, bool moe) {
    printf("| model                          |       size |     params | backend    | threads |%s%s%s%s            test |                  t/s |\n",
           a->b.given ? " n_batch |" : "", a->n_ctk ? " type_k |" : "", a->n_ctv ? " type_v |" : "", moe ? " experts  |" : "");
    printf("| ------------------------------ | ---------: | ---------: | ---------- | ------: |%s%s%s%s --------------: | -------------------: |\n",
           a->b.given ? " ------: |" : "", a->n_ctk ? " -----: |" : "", a->n_ctv ? " -----: |" : "", moe ? " -------- |" : "");
}

static void print_row(const lb_args *a, lb_out *out, json_t *row, bool moe) {
    const char *fmt = a->fmt;
    if (!strcmp(fmt, "jsonl")) {
        char *s = json_dumps(row, JSON_COMPACT);
        if (s) printf("%s\n", s);
        free(s);
    } else if (!strcmp(fmt, "md")) {
        if (!out->header_done) print_md_header(a, moe);
        char ts[64];
        snprintf(ts, sizeof ts, "%.2f ± %.2f", json_real_value(json_object_get(row, "avg_ts")),
                 json_real_value(json_object_get(row, "stddev_ts")));
        printf("| %-30s | %6.2f GiB | %8.2f B | %-10s | %7lld |", json_string_value(json_object_get(row, "model_type")),
               (double)json_integer_value(json_object_get(row, "model_size")) / (1 << 30),
               (double)json_integer_value(json_object_get(row, "model_n_params")) / 1e9,
               json_string_value(json_object_get(row, "backend")), (long long)json_integer_value(json_object_get(row, "n_threads")));
        if (a->b.given) printf(" %7lld |", (long long)json_integer_value(json_object_get(row, "n_batch")));
        if (a->n_ctk) printf(" %6s |", json_string_value(json_object_get(row, "type_k")));
        if (a->n_ctv) printf(" %6s |", json_string_value(json_object_get(row, "type_v")));
        if (moe) printf(" %-8s |", json_string_value(json_object_get(row, "experts")));
        printf(" %15s | %20s |\n", json_string_value(json_object_get(row, "test")), ts);
    } else if (!strcmp(fmt, "csv")) {
        static const char *const cols[] = {"build_commit", "model_filename", "model_type", "model_size", "model_n_params",
                                           "backend", "n_threads", "n_batch", "type_k", "type_v", "experts", "n_prompt",
                                           "n_gen", "n_depth", "test", "test_time", "repetitions", "avg_ns",
                                           "stddev_ns", "avg_ts", "stddev_ts"};
        size_t nc = sizeof cols / sizeof *cols;
        if (!out->header_done)
            for (size_t k = 0; k < nc; k++) printf("%s%s", cols[k], k + 1 < nc ? "," : "\n");
        for (size_t k = 0; k < nc; k++) {
            json_t *v = json_object_get(row, cols[k]);
            if (json_is_string(v)) {
                putchar('"');
                for (const char *s = json_string_value(v); *s; s++) printf(*s == '"' ? "\"\"" : "%c", *s);
                putchar('"');
            } else if (json_is_integer(v)) {
                printf("%lld", (long long)json_integer_value(v));
            } else if (json_is_real(v)) {
                printf("%.6f", json_real_value(v));
            }
            printf("%s", k + 1 < nc ? "," : "\n");
        }
    }
    /* json: printed once at the end, from out->rows */
    out->header_done = true;
}

/* Run every test of the list on one loaded context; rows appended to out. */
static int run_instance(lb_args *a, const lb_test *tests, int n_tests, int inst, int n_inst, lb_out *out, e0_err *e) {
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&a->o, 0, &m, &c)) return 1;
    const e0_session *s = &a->o.session;
    bool moe = m->hp.n_expert > 0;
    int cap = e0_ctx_n_batch(c);
    int *buf = malloc((size_t)cap * sizeof *buf);
    double *samples = malloc((size_t)a->reps * sizeof *samples);
    char label[160], name[96];
    model_label(m, label, sizeof label);
    int status = 0;
    if (!buf || !samples) status = cli_error("bench: out of memory");
    for (int ti = 0; ti < n_tests && !status; ti++) {
        const lb_test *t = &tests[ti];
        test_name(t, name, sizeof name);
        if (t->n_depth + t->n_prompt + t->n_gen > e0_ctx_n_ctx(c)) {
            status = cli_error("bench: %s needs %lld positions, the context has %d (raise -c)", name,
                               (long long)(t->n_depth + t->n_prompt + t->n_gen), e0_ctx_n_ctx(c));
            break;
        }
        if (a->progress) fprintf(stderr, "bench: combination %d/%d, test %d/%d: %s\n", inst + 1, n_inst, ti + 1, n_tests, name);
        double secs;
        if (a->warmup && run_test(c, t, buf, cap, &secs, e) < 0) {
            status = cli_error("bench: %s", e->msg);
            break;
        }
        for (int64_t r = 0; r < a->reps && !status; r++) {
            if (run_test(c, t, buf, cap, &samples[r], e) < 0) status = cli_error("bench: %s", e->msg);
            else if (a->progress) fprintf(stderr, "bench:   repetition %lld/%lld: %.3f s\n", (long long)(r + 1), (long long)a->reps, samples[r]);
        }
        if (status) break;
        /* t/s per repetition, then mean and sample standard deviation (llama-bench's avg_ts, stddev_ts) */
        int64_t n_tok = t->n_prompt + t->n_gen;
        double mean_ns = 0, mean_ts = 0, var_ns = 0, var_ts = 0;
        json_t *sns = json_array(), *sts = json_array();
        for (int64_t r = 0; r < a->reps; r++) {
            mean_ns += samples[r] * 1e9 / (double)a->reps;
            mean_ts += (double)n_tok / samples[r] / (double)a->reps;
            json_array_append_new(sns, json_integer((json_int_t)(samples[r] * 1e9)));
            json_array_append_new(sts, json_real((double)n_tok / samples[r]));
        }
        for (int64_t r = 0; r < a->reps && a->reps > 1; r++) {
            var_ns += pow(samples[r] * 1e9 - mean_ns, 2) / (double)(a->reps - 1);
            var_ts += pow((double)n_tok / samples[r] - mean_ts, 2) / (double)(a->reps - 1);
        }
        char backend[32];
        snprintf(backend, sizeof backend, "CPU %s", e0_simd_name(e0_simd_level()));
        json_t *build = e0_build_json();
        json_t *row = json_object();
        json_object_set(row, "build_commit", json_object_get(build, "git_commit"));
        json_decref(build);
        json_object_set_new(row, "model_filename", json_string(a->o.model));
        json_object_set_new(row, "model_type", json_string(label));
        json_object_set_new(row, "model_size", json_integer((json_int_t)m->gguf->total_size));
        json_object_set_new(row, "model_n_params", json_integer((json_int_t)m->params_total));
        json_object_set_new(row, "backend", json_string(backend));
        json_object_set_new(row, "n_threads", json_integer(e0_ctx_n_threads(c)));
        json_object_set_new(row, "n_batch", json_integer(cap));
        json_object_set_new(row, "n_ctx", json_integer(e0_ctx_n_ctx(c)));
        json_object_set_new(row, "type_k", json_string(e0_kv_type_name(e0_ctx_type_k(c))));
        json_object_set_new(row, "type_v", json_string(e0_kv_type_name(e0_ctx_type_v(c))));
        json_object_set_new(row, "experts", json_string(!moe ? "none" : s->streamed ? "stream" : "resident"));
        json_object_set_new(row, "routing", json_string(e0_session_routing_name(s)));
        json_object_set_new(row, "n_prompt", json_integer(t->n_prompt));
        json_object_set_new(row, "n_gen", json_integer(t->n_gen));
        json_object_set_new(row, "n_depth", json_integer(t->n_depth));
        json_object_set_new(row, "test", json_string(name));
        char when[32];
        time_t now = time(NULL);
        struct tm tm;
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        json_object_set_new(row, "test_time", json_string(when));
        json_object_set_new(row, "repetitions", json_integer(a->reps));
        json_object_set_new(row, "warmup", json_boolean(a->warmup));
        json_object_set_new(row, "avg_ns", json_integer((json_int_t)mean_ns));
        json_object_set_new(row, "stddev_ns", json_integer((json_int_t)sqrt(var_ns)));
        json_object_set_new(row, "avg_ts", json_real(mean_ts));
        json_object_set_new(row, "stddev_ts", json_real(sqrt(var_ts)));
        /* the median and range of the samples (what docs/perf.md quotes) */
        double *ts = malloc((size_t)a->reps * sizeof *ts), lo = INFINITY, hi = 0;
        for (int64_t r = 0; ts && r < a->reps; r++) {
            ts[r] = (double)n_tok / samples[r];
            lo = fmin(lo, ts[r]);
            hi = fmax(hi, ts[r]);
        }
        json_object_set_new(row, "median_ts", ts ? json_real(e0_median(ts, (size_t)a->reps)) : json_null());
        json_object_set_new(row, "min_ts", json_real(lo));
        json_object_set_new(row, "max_ts", json_real(hi));
        free(ts);
        json_object_set_new(row, "samples_ns", sns);
        json_object_set_new(row, "samples_ts", sts);
        json_object_set_new(row, "memory_budget", e0_session_budget_json(s));
        print_row(a, out, row, moe);
        json_array_append_new(out->rows, row);
        if (!cli_stdout_ok()) break;
    }
    free(buf);
    free(samples);
    cli_unload(&a->o);
    return status;
}

int cmd_bench_llama(int argc, char **argv) {
    lb_args a = {.reps = 5, .warmup = true, .fmt = "md"};
    cli_model_opts_init(&a.o);
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    /* the tests: pp for each -p, tg for each -n, pg for each -pg; times each depth */
    lb_test tests[LB_MAX_LIST * LB_MAX_LIST * 3];
    int n_tests = 0;
    int64_t need = 0;
    for (int di = 0; di < a.d.n; di++) {
        for (int k = 0; k < a.p.n; k++)
            if (a.p.v[k]) tests[n_tests++] = (lb_test){a.p.v[k], 0, a.d.v[di]};
        for (int k = 0; k < a.n.n; k++)
            if (a.n.v[k]) tests[n_tests++] = (lb_test){0, a.n.v[k], a.d.v[di]};
        for (int k = 0; k < a.n_pg; k++)
            if (a.pg[k][0] + a.pg[k][1]) tests[n_tests++] = (lb_test){a.pg[k][0], a.pg[k][1], a.d.v[di]};
    }
    for (int i = 0; i < n_tests; i++) {
        int64_t n = tests[i].n_depth + tests[i].n_prompt + tests[i].n_gen;
        if (n > need) need = n;
    }
    if (n_tests == 0) return cli_error("bench: every test has 0 tokens (-p 0 and -n 0): nothing to measure");
    if (need > (1 << 24)) return cli_error("bench: a test needs %lld positions, more than the engine supports", (long long)need);
    bool ctx_given = a.o.n_ctx > 0;
    int nt = a.t.n ? a.t.n : 1, nb = a.b.n ? a.b.n : 1, nk = a.n_ctk ? a.n_ctk : 1, nv = a.n_ctv ? a.n_ctv : 1;
    int n_inst = nt * nb * nk * nv, inst = 0;
    lb_out out = {.rows = json_array()};
    e0_err e;
    int status = 0;
    for (int ti = 0; ti < nt && !status; ti++)
        for (int bi = 0; bi < nb && !status; bi++)
            for (int ki = 0; ki < nk && !status; ki++)
                for (int vi = 0; vi < nv && !status; vi++, inst++) {
                    if (a.t.n) a.o.threads = (int)a.t.v[ti];
                    if (a.b.n) a.o.n_batch = (int)a.b.v[bi];
                    if (a.n_ctk) a.o.type_k = a.ctk[ki];
                    if (a.n_ctv) a.o.type_v = a.ctv[vi];
                    if (!ctx_given) a.o.n_ctx = (int)need;
                    status = run_instance(&a, tests, n_tests, inst, n_inst, &out, &e);
                }
    if (!strcmp(a.fmt, "json")) {
        char *s = json_dumps(out.rows, JSON_INDENT(2));
        if (s) printf("%s\n", s);
        free(s);
    }
    json_decref(out.rows);
    return status;
}
