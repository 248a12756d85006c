/* compare.c — `edge0-bench compare`: engines side by side on the same model file, the same
 * prompt token ids, the same threads, context and greedy sampling, their processes alternated
 * (round 1: every engine once, round 2: again, ...), the measurement conditions checked before
 * each (measure.c). One report (the format of `sweep`, docs/bench.md, with one configuration per
 * engine and a "comparison" member) as report.json, report.md and report.svg.
 *
 * Engines (adapters: how to start one process and what its row says):
 *   edge0               `edge0-infer bench --tokens-file IDS ...` (--cli)
 *   llama.cpp           tools/llamacpp_bench.c (`make llamacpp`, --llamacpp): the pinned llama.cpp's
 *                       defaults (file mapped, weights repacked); llama.cpp-nommap (--no-mmap) and
 *                       llama.cpp-norepack (--no-repack) are its other modes
 * Both print rows shaped alike (prefill/decode tok/s, itl, memory, config, engine, model).
 * The prompt is tokenized once by edge0-infer's tokenizer (the ids every engine gets; cut to fit
 * the context). Unlike comparisons are refused and the reason said: before running, model files
 * whose sha256 differ (--engine-model gives one engine another file); after, rows that saw a
 * different number of prompt tokens, a different context, KV cache type or sampling. A refused
 * comparison still writes its report (comparable: false, the reasons) and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "gguf/gguf.h"
#include "measure/stats.h"
#include "measure/sysinfo.h"

#define MAX_ENGINES 8
#define MAX_IDS (1 << 20)
#define MAX_CFG (MAX_ENGINES * 32) /* engines x (batch sizes, load points or depth rows) */

static const char COMPARE_USAGE[] =
    "usage: edge0-bench compare --model F --out DIR [--engines edge0,llama.cpp] [options]\n"
    "\n"
    "Runs each engine on the same model file, prompt token ids, threads, context and greedy\n"
    "sampling, alternating their processes round by round, and writes DIR/report.json, report.md\n"
    "and report.svg: per engine the median and range of each metric, the ratios to the first\n"
    "engine, and each engine's identity (version or commit, model sha256, tensor types, KV type).\n"
    "\n"
    "  --engines LIST      comma-separated, the first is the reference: edge0, llama.cpp,\n"
    "                      llama.cpp-nommap, llama.cpp-norepack, openai=http://HOST:PORT (any\n"
    "                      OpenAI-compatible server: edge0-infer serve, llama-server, ...) [edge0,llama.cpp]\n"
    "  --api-key K         Bearer key for the openai engines\n"
    "  --engine-model E=F  engine E runs file F instead (refused unless F has the same sha256)\n"
    "  --cli PATH          edge0-infer [next to edge0-bench]\n"
    "  --llamacpp PATH     llamacpp-bench from `make llamacpp` [next to edge0-bench]\n"
    "  --prompt P          long, medium, short (tests/fixtures/bench) or a text file [medium]\n"
    "  --rounds N          processes per engine, alternated [3]\n"
    "  --warmup N          untimed decode steps [5]      --ntok N   timed decode steps [50]\n"
    "  --threads N         every engine's threads [the online CPUs]\n"
    "  --context N         every engine's KV cache [prompt + warmup + ntok, rounded up to 256]\n"
    "  --cooldown S        idle seconds between processes [10]\n"
    "  --timeout S         a process running longer is stopped and recorded as failed [3600]\n"
    "  --mode MODE         single: one sequence [default]; batch: --batch-size B identical sequences per\n"
    "                      measurement (edge0: bench --batch-size B, lockstep; llama.cpp: llamacpp-bench\n"
    "                      --batch-size B, one llama_decode of B tokens per step; openai: B concurrent\n"
    "                      streams); server, sustained, depth: below\n"
    "  --batch-size LIST   batch sizes for --mode batch, at most 64 [1,4,16]\n"
    "  --simd avx2         both engines at the AVX2 level on a machine with AVX-512: edge0 with\n"
    "                      E0_SIMD=avx2, llama.cpp with only its haswell (AVX2) CPU backend\n"
    "  --memory-cap P      every process under a cgroup memory limit of P% of the model file\n"
    "                      (page cache included; tools/memcap.sh: needs root and cgroup v1)\n"
    "  --raw               keep each process's stdout and stderr in DIR/raw/\n"
    "\n"
    "--mode server: each engine's server per round (edge0: edge0-infer serve started here on a free\n"
    "port; llama.cpp: its llama-server, built from the pinned source by `make llamaserver`, started\n"
    "here likewise; openai=URL, or --server-url E=URL for edge0 or llama.cpp: one already running),\n"
    "every load point against it: TTFT, ITL, TPOT, end-to-end p50/p90/p99, throughput, errors per\n"
    "engine and point\n"
    "  --rates LIST        Poisson arrivals, requests/s (a seeded schedule) [1]\n"
    "  --concurrency LIST  closed loop: N clients back to back (at most 64)\n"
    "  --requests N        per load point and round [16]     --seed S   lengths and arrivals [42]\n"
    "  --prompt-len N      median prompt tokens (the first N ids of --prompt) [64]\n"
    "  --output-len N      median output tokens (exact: ignore_eos) [32]\n"
    "  --length-dist D     lognormal (sigma 0.8, ShareGPT-like) or fixed [lognormal]\n"
    "  --parallel N        slots of the edge0 serve started here [4, or the largest --concurrency]\n"
    "  --server-url E=URL  engine E (edge0, llama.cpp) measured at that server\n"
    "  --llama-server BIN  llama.cpp's server binary [../llamacpp/server/bin/llama-server beside\n"
    "                      this program]; started with -np, -c, -t, -tb as edge0's serve\n"
    "  --window S          arrivals later than S s into a load point are not sent (counted) [none]\n"
    "  Every scheduled request ends completed, failed (with its reason) or not sent; GET /metrics\n"
    "  before and after each load point: the server's counters against the client's, reported; for\n"
    "  edge0-infer serve they must agree (requests by status, sequences, tokens, prefill and decode\n"
    "  seconds within the client's waits), else exit 1 (give it no other clients meanwhile)\n"
    "--mode sustained: decode for --duration S seconds per process [60]: mean tok/s, its slope\n"
    "  over time (tok/s per minute) and the per-second series\n"
    "--depth D[,D...] (--mode depth): llama-bench's -d: ppP (--depth-prompt P [512]) and tgN\n"
    "  (--ntok N) with D tokens already in the KV cache (a cached prefix), and pp(D+P) cold: the\n"
    "  same request's D + P tokens from an empty cache; each engine a process per row\n"
    "  --no-cold           leave out the cold rows (at large D they take most of the time)\n"
    "\n"
    "An openai engine is measured from the client (TTFT = prefill; requests carry cache_prompt\n"
    "false and ignore_eos); its model file and KV types are checked where /v1/models says them\n"
    "(edge0-infer serve does), else reported as not verified. `edge0-bench load` is the server\n"
    "workload against one endpoint (--mode server runs it side by side).\n"
    "\n"
    "Exit status: 0 when the comparison is valid and every engine has a successful process; 1\n"
    "when it was refused (the reason is printed and in the report) or an engine never succeeded.\n";

enum engine_kind { ENG_EDGE0, ENG_LLAMACPP, ENG_OPENAI };

typedef struct engine_def {
    const char *name;
    enum engine_kind kind;
    const char *flag; /* llama.cpp mode flag, or NULL */
} engine_def;

static const engine_def ENGINES[] = {
    {"edge0", ENG_EDGE0, NULL},
    {"llama.cpp", ENG_LLAMACPP, NULL},
    {"llama.cpp-nommap", ENG_LLAMACPP, "--no-mmap"},
    {"llama.cpp-norepack", ENG_LLAMACPP, "--no-repack"},
    {"openai", ENG_OPENAI, NULL}, /* openai=URL */
};
#define N_ENGINE_DEFS (sizeof ENGINES / sizeof ENGINES[0])

typedef struct compare_opts {
    const char *model, *out, *cli, *llamacpp, *llama_server, *prompt, *mode, *api_key, *simd;
    char backend_dir[4200]; /* --simd avx2: OUT/llamacpp-avx2 holding only libggml-cpu-haswell.so */
    const engine_def *eng[MAX_ENGINES];
    const char *model_of[MAX_ENGINES]; /* the file each engine runs */
    uint64_t model_bytes[MAX_ENGINES];  /* its size, all files of a split model (for --memory-cap) */
    const char *url[MAX_ENGINES];      /* openai engines: the endpoint */
    char name[MAX_ENGINES][128];       /* "edge0", "llama.cpp", "openai@127.0.0.1:8080" */
    int n_eng;
    int64_t batch[8];                  /* --batch-size list (--mode batch) */
    int n_batch;
    /* --mode server: the load points (a rate in requests/s, or a closed-loop concurrency) */
    double rates[16];
    int64_t conc[16];
    int n_rates, n_conc, n_points;
    int64_t requests, prompt_len, output_len, seed, parallel;
    const char *length_dist;
    const char *server_url[MAX_ENGINES]; /* --server-url E=URL: engine E is measured at that server */
    /* --mode sustained */
    double duration;
    double window; /* --mode server: arrivals after this many seconds of a load point are not sent (0: none) */
    /* --depth: the long-context rows (prompt processing and generation at each KV depth) */
    int64_t depth[16], depth_prompt;
    int n_depth;
    int no_cold; /* --no-cold: only the rows with the prefix cached (two per depth, not three) */
    int64_t rounds, warmup, ntok, threads, context, cap_percent;
    double cooldown, timeout;
    int raw;
    char cli_buf[4096], ll_buf[4096], ls_buf[4096];
} compare_opts;

/* DIR/NAME next to this binary (/proc/self/exe), for the default --cli and --llamacpp. */
static const char *beside_me(const char *name, char *buf, size_t cap) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return name;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return name;
    *slash = 0;
    if ((size_t)snprintf(buf, cap, "%.*s/%s", (int)(cap / 2), exe, name) >= cap) return name;
    return buf;
}

static int parse_engines(const char *s, compare_opts *o) {
    char buf[512];
    if (strlen(s) >= sizeof buf) return bench_error("--engines: list too long");
    snprintf(buf, sizeof buf, "%s", s);
    o->n_eng = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const char *url = NULL;
        if (!strncmp(tok, "openai=", 7)) url = tok + 7, tok[6] = 0;
        else if (!strcmp(tok, "openai")) return bench_error("--engines: openai needs its URL: openai=http://HOST:PORT");
        size_t k = 0;
        while (k < N_ENGINE_DEFS && strcmp(ENGINES[k].name, tok) != 0) k++;
        if (k == N_ENGINE_DEFS)
            return bench_error("--engines: unknown engine '%s' (edge0, llama.cpp, llama.cpp-nommap, llama.cpp-norepack, openai=URL)", tok);
        if (o->n_eng == MAX_ENGINES) return bench_error("--engines: at most %d", MAX_ENGINES);
        int i = o->n_eng;
        o->eng[i] = &ENGINES[k];
        if (url) {
            http_url u;
            e0_err e;
            if (http_parse_url(url, &u, &e)) return bench_error("--engines openai=%s", e.msg);
            o->url[i] = strdup(url);
            snprintf(o->name[i], sizeof o->name[i], "openai@%.60s:%s", u.host, u.port);
        } else {
            snprintf(o->name[i], sizeof o->name[i], "%s", tok);
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(o->name[j], o->name[i])) return bench_error("--engines: '%s' given twice", o->name[i]);
        o->n_eng++;
    }
    return 0;
}

/* The flags of each --mode against the engines: one clear error, or 0. */
static int check_mode_flags(compare_opts *o, int n_server_urls) {
    const char *m = o->mode;
    int server = !strcmp(m, "server"), sustained = !strcmp(m, "sustained"), depth = !strcmp(m, "depth");
    if (!server && (o->n_rates || o->n_conc || n_server_urls))
        return bench_error("--rates, --concurrency and --server-url need --mode server");
    if (!sustained && o->duration > 0) return bench_error("--duration needs --mode sustained");
    if (!server && o->window > 0) return bench_error("--window needs --mode server");
    if (!depth && o->n_depth) return bench_error("--depth is its own workload: not with --mode %s", m);
    if (depth && !o->n_depth) return bench_error("--mode depth needs --depth D[,D...]");
    if (!depth && o->no_cold) return bench_error("--no-cold is for --mode depth (--depth D[,D...])");
    if (server) {
        if (!o->n_rates && !o->n_conc) o->n_rates = 1, o->rates[0] = 1;
        o->n_points = o->n_rates + o->n_conc;
        if (strcmp(o->length_dist, "lognormal") && strcmp(o->length_dist, "fixed"))
            return bench_error("--length-dist: lognormal or fixed (got '%s')", o->length_dist);
        if (!o->parallel) {
            o->parallel = 4;
            for (int k = 0; k < o->n_conc; k++) o->parallel = o->conc[k] > o->parallel ? o->conc[k] : o->parallel;
        }
    }
    if (sustained && o->duration <= 0) o->duration = 60;
    for (int i = 0; (sustained || depth) && i < o->n_eng; i++)
        if (o->eng[i]->kind == ENG_OPENAI)
            return bench_error("--mode %s: %s is a server; this mode runs the engines' processes (edge0, llama.cpp)", m, o->name[i]);
    if (depth) o->n_points = (o->no_cold ? 2 : 3) * o->n_depth; /* per depth: pp and tg with the prefix cached, pp without (cold) */
    if (depth && !o->depth_prompt && !o->ntok) return bench_error("--depth: --depth-prompt and --ntok are both 0");
    return 0;
}

static int parse_args(int argc, char **argv, compare_opts *o) {
    e0_err e;
    const char *engines = "edge0,llama.cpp", *overrides[MAX_ENGINES], *server_urls[MAX_ENGINES];
    int n_over = 0, n_surl = 0;
    o->prompt = "medium";
    o->mode = "single";
    o->rounds = 3;
    o->warmup = 5;
    o->ntok = 50;
    o->cooldown = 10;
    o->timeout = 3600;
    o->requests = 16;
    o->prompt_len = 64;
    o->output_len = 32;
    o->seed = 42;
    o->length_dist = "lognormal";
    o->depth_prompt = 512;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(COMPARE_USAGE, stdout);
            return 2;
        }
        if (!strcmp(a, "--raw")) {
            o->raw = 1;
            continue;
        }
        if (!strcmp(a, "--no-cold")) {
            o->no_cold = 1;
            continue;
        }
        if (i + 1 >= argc) return bench_error("%s needs a value (see edge0-bench compare --help)", a);
        v = argv[++i];
        const char **dst = !strcmp(a, "--model") ? &o->model : !strcmp(a, "--out") ? &o->out : !strcmp(a, "--cli") ? &o->cli
                         : !strcmp(a, "--llamacpp") ? &o->llamacpp : !strcmp(a, "--llama-server") ? &o->llama_server
                         : !strcmp(a, "--prompt") ? &o->prompt
                         : !strcmp(a, "--mode") ? &o->mode : !strcmp(a, "--engines") ? &engines
                         : !strcmp(a, "--api-key") ? &o->api_key : !strcmp(a, "--simd") ? &o->simd
                         : !strcmp(a, "--length-dist") ? &o->length_dist : NULL;
        int64_t *num = !strcmp(a, "--rounds") ? &o->rounds : !strcmp(a, "--warmup") ? &o->warmup : !strcmp(a, "--ntok") ? &o->ntok
                     : !strcmp(a, "--threads") ? &o->threads : !strcmp(a, "--context") ? &o->context
                     : !strcmp(a, "--memory-cap") ? &o->cap_percent : !strcmp(a, "--requests") ? &o->requests
                     : !strcmp(a, "--prompt-len") ? &o->prompt_len : !strcmp(a, "--output-len") ? &o->output_len
                     : !strcmp(a, "--seed") ? &o->seed : !strcmp(a, "--parallel") ? &o->parallel
                     : !strcmp(a, "--depth-prompt") ? &o->depth_prompt : NULL;
        double *real = !strcmp(a, "--cooldown") ? &o->cooldown : !strcmp(a, "--timeout") ? &o->timeout
                     : !strcmp(a, "--duration") ? &o->duration : !strcmp(a, "--window") ? &o->window : NULL;
        int64_t lo = !strcmp(a, "--warmup") || !strcmp(a, "--seed") || !strcmp(a, "--depth-prompt") ? 0 : 1;
        int64_t hi = !strcmp(a, "--requests") ? 4096 : !strcmp(a, "--parallel") ? 64 : 1 << 24;
        if (dst) *dst = v;
        else if (num && e0_parse_i64(v, lo, hi, num, a, &e)) return bench_error("%s", e.msg);
        else if (real && e0_parse_f64(v, !strcmp(a, "--timeout") ? 1 : 0, 7 * 86400, real, a, &e)) return bench_error("%s", e.msg);
        else if (!strcmp(a, "--batch-size")) {
            char b[256];
            snprintf(b, sizeof b, "%s", v);
            o->n_batch = 0;
            for (char *sv, *t = strtok_r(b, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                if (o->n_batch == 8) return bench_error("--batch-size: at most 8 sizes");
                if (e0_parse_i64(t, 1, OPENAI_MAX_BATCH, &o->batch[o->n_batch++], a, &e)) return bench_error("%s", e.msg);
            }
        } else if (!strcmp(a, "--rates") || !strcmp(a, "--rate")) {
            char b[512];
            if (strlen(v) >= sizeof b) return bench_error("%s: list too long", a);
            snprintf(b, sizeof b, "%s", v);
            o->n_rates = 0;
            for (char *sv, *t = strtok_r(b, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                if (o->n_rates == 16) return bench_error("%s: at most 16 rates", a);
                if (e0_parse_f64(t, 1e-3, 1e5, &o->rates[o->n_rates++], a, &e)) return bench_error("%s", e.msg);
            }
        } else if (!strcmp(a, "--concurrency") || !strcmp(a, "--depth")) {
            int is_depth = !strcmp(a, "--depth");
            int64_t *list = is_depth ? o->depth : o->conc;
            int *n = is_depth ? &o->n_depth : &o->n_conc;
            char b[512];
            if (strlen(v) >= sizeof b) return bench_error("%s: list too long", a);
            snprintf(b, sizeof b, "%s", v);
            *n = 0;
            for (char *sv, *t = strtok_r(b, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                if (*n == 16) return bench_error("%s: at most 16 values", a);
                if (e0_parse_i64(t, is_depth ? 0 : 1, is_depth ? 1 << 24 : 64, &list[(*n)++], a, &e)) return bench_error("%s", e.msg);
            }
        } else if (!strcmp(a, "--server-url")) {
            if (!strchr(v, '=')) return bench_error("--server-url: expected ENGINE=http://HOST:PORT, got '%s'", v);
            if (n_surl == MAX_ENGINES) return bench_error("--server-url: at most %d", MAX_ENGINES);
            server_urls[n_surl++] = v;
        } else if (!strcmp(a, "--engine-model")) {
            if (!strchr(v, '=')) return bench_error("--engine-model: expected ENGINE=FILE, got '%s'", v);
            if (n_over == MAX_ENGINES) return bench_error("--engine-model: at most %d", MAX_ENGINES);
            overrides[n_over++] = v;
        } else if (!dst && !num && !real)
            return bench_error("compare: unknown option '%s' (see edge0-bench compare --help)", a);
    }
    if (!o->model || !o->out) return bench_error("compare needs --model and --out (see --help)");
    if (o->cap_percent > 1000) return bench_error("--memory-cap: a percentage of the model file, at most 1000 (got %lld)", (long long)o->cap_percent);
    if (o->cap_percent && access("tools/memcap.sh", R_OK) != 0) return bench_error("--memory-cap needs tools/memcap.sh: run from the source tree");
    if (o->n_depth && !strcmp(o->mode, "single")) o->mode = "depth";
    if (strcmp(o->mode, "single") && strcmp(o->mode, "batch") && strcmp(o->mode, "server") && strcmp(o->mode, "sustained") &&
        strcmp(o->mode, "depth"))
        return bench_error("--mode %s: single, batch, server, sustained or depth", o->mode);
    if (parse_engines(engines, o)) return 1;
    if (check_mode_flags(o, n_surl)) return 1;
    for (int k = 0; k < n_surl; k++) {
        const char *eq = strchr(server_urls[k], '=');
        int found = -1;
        for (int i = 0; i < o->n_eng; i++)
            if (strlen(o->name[i]) == (size_t)(eq - server_urls[k]) && !strncmp(o->name[i], server_urls[k], (size_t)(eq - server_urls[k])))
                found = i;
        if (found < 0 || o->eng[found]->kind == ENG_OPENAI)
            return bench_error("--server-url %s: that engine is not an edge0 or llama.cpp engine of --engines", server_urls[k]);
        http_url u;
        if (http_parse_url(eq + 1, &u, &e)) return bench_error("--server-url %s", e.msg);
        o->server_url[found] = eq + 1;
    }
    if (!strcmp(o->mode, "batch")) {
        if (!o->n_batch) o->n_batch = 3, o->batch[0] = 1, o->batch[1] = 4, o->batch[2] = 16;
    } else if (o->n_batch) {
        return bench_error("--batch-size needs --mode batch");
    }
    if (o->simd && strcmp(o->simd, "avx2")) return bench_error("--simd: only avx2 (got '%s')", o->simd);
    if (o->n_eng * (o->n_batch ? o->n_batch : o->n_points ? o->n_points : 1) < 2)
        return bench_error("--engines: give at least two engines to compare (or, in --mode batch, two batch sizes)");
    for (int i = 0; i < o->n_eng; i++) o->model_of[i] = o->model;
    for (int k = 0; k < n_over; k++) {
        const char *eq = strchr(overrides[k], '=');
        int found = 0;
        for (int i = 0; i < o->n_eng; i++)
            if (strlen(o->name[i]) == (size_t)(eq - overrides[k]) && !strncmp(o->name[i], overrides[k], (size_t)(eq - overrides[k])))
                o->model_of[i] = eq + 1, found = 1;
        if (!found) return bench_error("--engine-model %s: that engine is not in --engines", overrides[k]);
    }
    if (!o->cli) o->cli = beside_me("edge0-infer", o->cli_buf, sizeof o->cli_buf);
    if (!o->llamacpp) o->llamacpp = beside_me("llamacpp-bench", o->ll_buf, sizeof o->ll_buf);
    if (!o->llama_server) o->llama_server = beside_me("../llamacpp/server/bin/llama-server", o->ls_buf, sizeof o->ls_buf);
    for (int i = 0; !strcmp(o->mode, "server") && i < o->n_eng; i++) {
        if (o->eng[i]->kind != ENG_LLAMACPP || o->server_url[i]) continue;
        if (o->eng[i]->flag)
            return bench_error("--mode server: %s is a llamacpp-bench mode; llama-server runs as 'llama.cpp'", o->name[i]);
        if (access(o->llama_server, X_OK) != 0)
            return bench_error("--mode server: %s: no llama-server at %s (node-llama-cpp@3.21.1 ships libllama, not "
                               "llama-server): build it with `make llamaserver`, give --llama-server BIN, or start one "
                               "and give --server-url %s=http://HOST:PORT", o->name[i], o->llama_server, o->name[i]);
    }
    if (!o->threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = n > 0 ? n : 1;
    }
    return 0;
}

/* The prompt's token ids (edge0-infer's tokenizer) into OUT/ids.txt, cut to fit the context with
 * warmup + ntok; sets *n_ids and the context every engine gets. 0, or 1 with the error printed. */
static int make_ids(compare_opts *o, const char *prompt_path, char *ids_path, size_t cap, int64_t *n_ids, json_t *warnings) {
    char cmd[12288];
    snprintf(cmd, sizeof cmd, "exec \"$0\" tokenize --model \"$1\" < \"$2\"");
    char *argv[] = {"/bin/sh", "-c", cmd, (char *)o->cli, (char *)o->model, (char *)prompt_path, NULL};
    proc_result r;
    proc_run(argv, 600, &r);
    if (!(r.started && r.exited && r.exit_status == 0)) {
        char why[512];
        proc_describe_failure(&r, why, sizeof why);
        proc_result_free(&r);
        return bench_error("tokenizing %s with %s failed: %s", prompt_path, o->cli, why);
    }
    int64_t have = bench_model_context(o->cli, o->model);
    int64_t keep = have > 0 ? have - o->warmup - o->ntok - 1 : MAX_IDS;
    if (o->context) keep = keep < o->context - o->warmup - o->ntok - 1 ? keep : o->context - o->warmup - o->ntok - 1;
    if (keep < 1) {
        proc_result_free(&r);
        return bench_error("warmup + ntok (%lld + %lld) leave no room for a prompt in the context (%lld)", (long long)o->warmup,
                           (long long)o->ntok, (long long)(o->context ? o->context : have));
    }
    /* keep the first `keep` ids */
    int64_t n = 0;
    char *p = r.out, *end = p;
    while (*p && n < keep) {
        while (*p == ' ' || *p == '\n') p++;
        if (!*p) break;
        while (*p && *p != ' ' && *p != '\n') p++;
        end = p;
        n++;
    }
    int cut = *p && strspn(p, " \n") != strlen(p);
    *end = 0;
    if (n == 0) {
        proc_result_free(&r);
        return bench_error("the prompt %s gives no tokens", prompt_path);
    }
    if (cut) {
        char w[256];
        snprintf(w, sizeof w, "prompt cut to its first %lld tokens to fit the context", (long long)n);
        bench_progress("%s", w);
        json_array_append_new(warnings, json_string(w));
    }
    snprintf(ids_path, cap, "%s/ids.txt", o->out);
    e0_err e;
    int rc = write_text_file(ids_path, r.out, &e);
    proc_result_free(&r);
    if (rc) return bench_error("%s", e.msg);
    *n_ids = n;
    if (!o->context) {
        o->context = (n + o->warmup + o->ntok + 255) / 256 * 256;
        if (have > 0 && o->context > have) o->context = have;
    }
    return 0;
}

/* The depth rows of --mode depth, R = 3 per depth D (2 with --no-cold: no cold row; index sub / R),
 * by sub % R:
 *   0  ppP @ dD     prompt processing of P tokens with D already in the KV cache (a prefix-cache hit)
 *   1  tgN @ dD     generation of N tokens after D
 *   2  pp(D+P) cold the same request without a cached prefix: its D + P tokens from an empty cache */
enum { DEPTH_PP, DEPTH_TG, DEPTH_COLD };
static int depth_rows(const compare_opts *o) { return o->no_cold ? 2 : 3; }
static int64_t depth_of(const compare_opts *o, int sub) { return o->depth[sub / depth_rows(o)]; }
static int depth_kind(const compare_opts *o, int sub) { return sub % depth_rows(o); }
static int depth_is_pp(const compare_opts *o, int sub) { return depth_kind(o, sub) != DEPTH_TG; }
/* Tokens in the KV cache before the test, and the test's own tokens. */
static int64_t depth_kv(const compare_opts *o, int sub) { return depth_kind(o, sub) == DEPTH_COLD ? 0 : depth_of(o, sub); }
static int64_t depth_tokens(const compare_opts *o, int sub) {
    const int k = depth_kind(o, sub);
    return k == DEPTH_TG ? o->ntok : k == DEPTH_COLD ? depth_of(o, sub) + o->depth_prompt : o->depth_prompt;
}
/* The KV cache of a depth row: what is cached + its test, rounded up to 256. */
static int64_t depth_context(const compare_opts *o, int sub) {
    int64_t n = depth_kv(o, sub) + depth_tokens(o, sub);
    return (n + 255) / 256 * 256;
}

/* argv of one process of engine i (under tools/memcap.sh with --memory-cap); numbers in nums;
 * sub: the depth row in --mode depth. */
static char **engine_argv(const compare_opts *o, int i, const char *ids_path, char nums[9][32], int sub) {
    char **v = calloc(40, sizeof *v);
    if (!v) return NULL;
    snprintf(nums[0], 32, "%lld", (long long)o->warmup);
    snprintf(nums[1], 32, "%lld", (long long)o->ntok);
    snprintf(nums[2], 32, "%lld", (long long)o->threads);
    snprintf(nums[3], 32, "%lld", (long long)o->context);
    size_t n = 0;
    if (o->cap_percent) {
        snprintf(nums[4], 32, "%lld", (long long)o->model_bytes[i] / 100 * o->cap_percent);
        const char *cap[] = {"sh", "tools/memcap.sh", nums[4], o->model_of[i]};
        for (size_t k = 0; k < sizeof cap / sizeof *cap; k++) v[n++] = (char *)cap[k];
    }
    const engine_def *d = o->eng[i];
    if (!strcmp(o->mode, "depth")) { /* llama-bench's -d: one test (ppP, tgN or the cold pp) at its depth, one timed repetition */
        int pp = depth_is_pp(o, sub);
        snprintf(nums[0], 32, "%lld", pp ? (long long)depth_tokens(o, sub) : 0LL);
        snprintf(nums[1], 32, "%lld", pp ? 0LL : (long long)depth_tokens(o, sub));
        snprintf(nums[3], 32, "%lld", (long long)depth_context(o, sub));
        snprintf(nums[5], 32, "%lld", (long long)depth_kv(o, sub));
        if (d->kind == ENG_EDGE0) {
            const char *a[] = {o->cli, "bench", "-m", o->model_of[i], "-o", "jsonl", "-r", "1", "-b", "256"};
            for (size_t k = 0; k < sizeof a / sizeof *a; k++) v[n++] = (char *)a[k];
        } else {
            const char *a[] = {o->llamacpp, "--model", o->model_of[i], "-r", "1"};
            for (size_t k = 0; k < sizeof a / sizeof *a; k++) v[n++] = (char *)a[k];
        }
        const char *t[] = {"-p", nums[0], "-n", nums[1], "-d", nums[5], "-t", nums[2], "-c", nums[3]};
        for (size_t k = 0; k < sizeof t / sizeof *t; k++) v[n++] = (char *)t[k];
        if (!o->warmup) v[n++] = "--no-warmup";
        if (d->flag) v[n++] = (char *)d->flag;
        if (d->kind == ENG_LLAMACPP && o->backend_dir[0]) v[n++] = "--backend-dir", v[n++] = (char *)o->backend_dir;
        v[n] = NULL;
        return v;
    }
    if (d->kind == ENG_EDGE0) {
        const char *a[] = {o->cli, "bench", "--model", o->model_of[i], "--tokens-file", ids_path, "--runs", "1"};
        for (size_t k = 0; k < sizeof a / sizeof *a; k++) v[n++] = (char *)a[k];
    } else {
        const char *a[] = {o->llamacpp, "--model", o->model_of[i], "--tokens-file", ids_path};
        for (size_t k = 0; k < sizeof a / sizeof *a; k++) v[n++] = (char *)a[k];
    }
    const char *common[] = {"--warmup", nums[0], "--ntok", nums[1], "--threads", nums[2], "--context", nums[3]};
    for (size_t k = 0; k < sizeof common / sizeof *common; k++) v[n++] = (char *)common[k];
    if (d->flag) v[n++] = (char *)d->flag;
    if (d->kind == ENG_LLAMACPP && o->backend_dir[0]) v[n++] = "--backend-dir", v[n++] = (char *)o->backend_dir;
    if (!strcmp(o->mode, "batch")) { /* B sequences decoded together, one process (both tools' --batch-size) */
        snprintf(nums[7], 32, "%lld", (long long)o->batch[sub]);
        v[n++] = "--batch-size", v[n++] = nums[7];
    }
    if (!strcmp(o->mode, "sustained")) { /* decode for --duration seconds; the context restarts at the prompt */
        snprintf(nums[6], 32, "%g", o->duration);
        if (d->kind == ENG_EDGE0) v[n++] = "--mode", v[n++] = "sustained";
        v[n++] = "--duration", v[n++] = nums[6];
    }
    v[n] = NULL;
    return v;
}

/* What a row says about the comparison's terms, the same for every adapter:
 * {"n_prompt", "context", "kv_type_k", "kv_type_v", "sampling", "threads"}. */
static json_t *terms_of(const json_t *row) {
    const json_t *cfg = json_object_get(row, "config");
    const json_t *k = json_object_get(cfg, "kv_type_k"), *v = json_object_get(cfg, "kv_type_v");
    if (!k) k = v = json_object_get(cfg, "kv_type"); /* llama.cpp's row: one type for both */
    return json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "n_prompt", json_object_get(row, "n_prompt"), "context",
                     json_object_get(cfg, "context"), "kv_type_k", k, "kv_type_v", v, "sampling",
                     json_object_get(cfg, "sampling"), "threads", json_object_get(cfg, "threads"));
}

/* The reproducibility record of an engine from its first successful row. */
static json_t *identity_of(const json_t *row, const char *model_path, json_t *sha) {
    const json_t *model = json_object_get(row, "model");
    json_t *id = json_pack("{s:O?, s:s, s:o}", "engine", json_object_get(row, "engine"), "model_path", model_path,
                           "model_sha256", sha);
    json_object_set(id, "model", model ? (json_t *)model : json_null());
    json_object_set_new(id, "terms", terms_of(row));
    return id;
}

static json_t *config_json(const compare_opts *o, int i, const char *label, int64_t batch, json_t *processes, json_t *sha) {
    int n_ok = 0, n_failed = 0, n_refused = 0;
    const json_t *first_ok = NULL;
    size_t k;
    json_t *p;
    json_array_foreach(processes, k, p) {
        const char *st = json_string_value(json_object_get(p, "status"));
        if (!strcmp(st, "ok")) {
            n_ok++;
            if (!first_ok) first_ok = json_object_get(p, "row");
        } else if (!strcmp(st, "refused")) {
            n_refused++;
        } else {
            n_failed++;
        }
    }
    json_t *metrics = json_object();
    for (size_t m = 0; m < N_METRICS; m++) json_object_set_new(metrics, METRICS[m].key, metric_summary_json(processes, &METRICS[m]));
    json_t *args = json_array();
    if (o->eng[i]->flag) json_array_append_new(args, json_string(o->eng[i]->flag));
    const char *where = o->url[i] ? o->url[i] : o->model_of[i];
    return json_pack("{s:s, s:s, s:I, s:o, s:o, s:b, s:i, s:i, s:i, s:o, s:o, s:n, s:o}", "name", label, "engine", o->name[i],
                     "batch_size", (json_int_t)batch, "args", args, "effective_config",
                     first_ok ? json_deep_copy(json_object_get(first_ok, "config")) : e0_unavailable("no successful process"),
                     "effective_config_consistent", 1, "ok", n_ok, "failed", n_failed, "refused", n_refused, "processes",
                     processes, "metrics", metrics, "same_as", "identity",
                     first_ok ? identity_of(first_ok, where, sha) : json_pack("{s:s, s:o}", "model_path", where, "model_sha256", sha));
}

/* Appends s to list unless it is there already (one line per difference, not per process). */
static void add_once(json_t *list, const char *s) {
    size_t r;
    json_t *x;
    json_array_foreach(list, r, x) if (!strcmp(json_string_value(x), s)) return;
    json_array_append_new(list, json_string(s));
}

/* Two configurations at the same workload point (batch size, load point, depth row). */
static int same_slot(const json_t *a, const json_t *b) {
    static const char *const keys[] = {"batch_size", "load_point", "depth"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const json_t *x = json_object_get(a, keys[k]), *y = json_object_get(b, keys[k]);
        if ((x || y) && !json_equal(x, y)) return 0;
    }
    return 1;
}

/* The terms of the first successful process of the first configuration at e's workload point
 * (e's own when it is the first), and that configuration's name; NULL when there is none. */
static json_t *reference_terms(json_t *engines, const json_t *e, const char **name) {
    size_t j, k;
    json_t *f, *p;
    json_array_foreach(engines, j, f) {
        if (!same_slot(f, e)) continue;
        json_array_foreach(json_object_get(f, "processes"), k, p) {
            if (strcmp(json_string_value(json_object_get(p, "status")), "ok")) continue;
            *name = json_string_value(json_object_get(f, "name"));
            return terms_of(json_object_get(p, "row"));
        }
        if (f == e) break;
    }
    return NULL;
}

/* Every successful row of every engine against the terms of the first one at the same workload
 * point (batch size, load point, depth row: depth rows differ in their context by design): a
 * difference is a reason to refuse; a term one side does not report (an openai server that does
 * not say its KV type) is a warning, "not verified". */
static void check_terms(json_t *engines, int64_t n_ids, json_t *reasons, json_t *warnings) {
    size_t i, k;
    json_t *e, *p;
    json_array_foreach(engines, i, e) {
        const char *ref_name = NULL;
        json_t *ref = reference_terms(engines, e, &ref_name); /* NULL: e has no successful process */
        json_array_foreach(json_object_get(e, "processes"), k, p) {
            if (strcmp(json_string_value(json_object_get(p, "status")), "ok")) continue;
            json_t *t = terms_of(json_object_get(p, "row"));
            const char *name = json_string_value(json_object_get(e, "name"));
            if (n_ids >= 0 && json_integer_value(json_object_get(t, "n_prompt")) != n_ids) {
                char buf[256];
                snprintf(buf, sizeof buf, "%s saw %lld prompt tokens, not the %lld ids given", name,
                         (long long)json_integer_value(json_object_get(t, "n_prompt")), (long long)n_ids);
                json_array_append_new(reasons, json_string(buf));
            }
            static const char *const keys[] = {"context", "kv_type_k", "kv_type_v", "sampling", "threads"};
            for (size_t j = 0; j < sizeof keys / sizeof *keys; j++) {
                const json_t *a = json_object_get(ref, keys[j]), *b = json_object_get(t, keys[j]);
                if (a && b && json_equal(a, b)) continue;
                char buf[512];
                if (!a || !b || json_is_null(a) || json_is_null(b)) {
                    snprintf(buf, sizeof buf, "%s not verified: %s does not report it", keys[j], !a || json_is_null(a) ? ref_name : name);
                    add_once(warnings, buf);
                    continue;
                }
                char *sa = json_dumps(a, JSON_ENCODE_ANY), *sb = json_dumps(b, JSON_ENCODE_ANY);
                snprintf(buf, sizeof buf, "%s: %s ran with %s %s, %s with %s", keys[j], ref_name, keys[j], sa ? sa : "?", name,
                         sb ? sb : "?");
                free(sa);
                free(sb);
                add_once(reasons, buf);
            }
            json_decref(t);
        }
        json_decref(ref);
    }
}


/* Per engine after the first: the first engine's median over this engine's, per metric (for
 * tok/s above 1 means the first is faster; for seconds and bytes, that the first is slower). */
static json_t *ratios_json(json_t *engines) {
    json_t *out = json_object();
    static const char *const keys[] = {"prefill_tokens_per_second", "decode_tokens_per_second", "prefill_seconds",
                                       "memory.peak_rss_bytes"};
    size_t i, j;
    json_t *e, *f;
    json_array_foreach(engines, i, e) {
        /* the reference: the first configuration with the same batch size */
        const json_t *ref = NULL;
        json_array_foreach(engines, j, f) {
            if (j >= i) break;
            if (same_slot(f, e)) {
                ref = json_object_get(f, "metrics");
                break;
            }
        }
        if (!ref) continue;
        json_t *r = json_object();
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            const json_t *a = json_object_get(json_object_get(ref, keys[k]), "median");
            const json_t *b = json_object_get(json_object_get(json_object_get(e, "metrics"), keys[k]), "median");
            double x = json_number_value(a), y = json_number_value(b);
            json_object_set_new(r, keys[k], a && b && y > 0 ? json_real(x / y) : e0_unavailable("no median on both sides"));
        }
        json_object_set_new(out, json_string_value(json_object_get(e, "name")), r);
    }
    return out;
}

static const char *prompt_path_of(const char *p, char *buf, size_t cap) {
    const char *fixture = !strcmp(p, "long") ? "library-report-prompt.txt" : !strcmp(p, "medium") ? "library-report-prompt-head.txt"
                          : !strcmp(p, "short") ? "short-story-prompt.txt" : NULL;
    if (!fixture) return p;
    snprintf(buf, cap, "tests/fixtures/bench/%s", fixture);
    return buf;
}

static int write_reports(const compare_opts *o, json_t *report) {
    char path[4200];
    e0_err e;
    snprintf(path, sizeof path, "%s/report.json", o->out);
    if (json_dump_file(report, path, JSON_INDENT(1) | JSON_SORT_KEYS) != 0) return bench_error("cannot write %s", path);
    char *md = report_markdown(report), *svg = report_svg(report);
    int rc = !md || !svg ? bench_error("out of memory while rendering the report") : 0;
    snprintf(path, sizeof path, "%s/report.md", o->out);
    if (!rc && write_text_file(path, md, &e)) rc = bench_error("%s", e.msg);
    snprintf(path, sizeof path, "%s/report.svg", o->out);
    if (!rc && write_text_file(path, svg, &e)) rc = bench_error("%s", e.msg);
    free(md);
    free(svg);
    if (!rc && !strcmp(o->mode, "server")) { /* the throughput/latency curve over the rates */
        char *curve = compare_server_svg(report);
        snprintf(path, sizeof path, "%s/server.svg", o->out);
        if (!curve || write_text_file(path, curve, &e)) rc = bench_error("%s", curve ? e.msg : "out of memory");
        free(curve);
    }
    if (!rc) bench_progress("wrote %s/report.json, report.md, report.svg%s", o->out, !strcmp(o->mode, "server") ? ", server.svg" : "");
    return rc;
}

/* "1 2 3\n" (ids.txt) as a JSON array "[1,2,3]" for the openai engines; NULL on failure. */
static char *ids_json_of(const char *path) {
    e0_err e;
    size_t len;
    char *text = e0_read_file(path, 64u << 20, &len, &e);
    if (!text) return NULL;
    char *out = malloc(len + 3), *w = out;
    if (out) {
        *w++ = '[';
        int in = 0;
        for (const char *p = text; *p; p++) {
            if (*p >= '0' && *p <= '9') {
                if (!in && w > out + 1) *w++ = ',';
                *w++ = *p;
                in = 1;
            } else {
                in = 0;
            }
        }
        *w++ = ']';
        *w = 0;
    }
    free(text);
    return out;
}

/* One measurement of an openai engine, recorded like a process (conditions, snapshots). */
static json_t *measure_openai(const compare_opts *o, const openai_engine *oe, const char *label, int k, const char *ids_json,
                              int64_t batch, double model_size) {
    json_t *rec = json_pack("{s:s, s:i, s:s, s:o}", "configuration", label, "index", k, "url", oe->url_text, "started_utc",
                            bench_utc_now());
    json_t *before = e0_system_json(), *cond = conditions_check(before, model_size);
    json_object_set_new(rec, "before", before);
    json_object_set_new(rec, "conditions", cond);
    const char *refused = json_string_value(json_object_get(cond, "refused"));
    if (refused) {
        bench_progress("%s %d/%lld: refused: %s", label, k, (long long)o->rounds, refused);
        json_object_set_new(rec, "status", json_string("refused"));
        json_object_set_new(rec, "reason", json_string(refused));
        return rec;
    }
    bench_progress("%s %d/%lld: running", label, k, (long long)o->rounds);
    e0_err e = {{0}};
    double t0 = e0_now();
    json_t *row = openai_row(oe, ids_json, (int)o->warmup, (int)o->ntok, (int)batch, o->timeout, &e);
    json_object_set_new(rec, "after", e0_system_json());
    json_object_set_new(rec, "wall_seconds", json_real(e0_now() - t0));
    json_object_set_new(rec, "status", json_string(row ? "ok" : "failed"));
    json_object_set_new(rec, "reason", row ? json_null() : json_string(e.msg));
    json_object_set_new(rec, "row", row ? row : json_null());
    if (row)
        bench_progress("%s %d/%lld: ok, decode %.2f tok/s, first token %.3f s", label, k, (long long)o->rounds,
                       json_real_value(json_object_get(row, "decode_tokens_per_second")),
                       json_real_value(json_object_get(row, "prefill_seconds")));
    else bench_progress("%s %d/%lld: FAILED: %s", label, k, (long long)o->rounds, e.msg);
    return rec;
}

/* What an openai engine's /v1/models says about the model file, against --model: the identity's
 * "model_sha256" text, a refusal reason (another size) or a warning (not reported). */
static json_t *openai_model_check(const compare_opts *o, int i, const openai_engine *oe, double model_size, json_t *reasons,
                                  json_t *warnings) {
    const json_t *sz = json_object_get(oe->meta, "model_size"), *path = json_object_get(oe->meta, "model_path");
    char buf[1400];
    if (!json_is_integer(sz)) {
        snprintf(buf, sizeof buf, "model not verified: %s does not report its model file (only the id '%s')", o->name[i], oe->model);
        add_once(warnings, buf);
        return json_string("unverified: the server does not report its model file");
    }
    if ((double)json_integer_value(sz) != model_size) {
        snprintf(buf, sizeof buf, "model differs: %s serves %s (%lld bytes), --model is %s (%.0f bytes)", o->name[i],
                 json_string_value(path) ? json_string_value(path) : "?", (long long)json_integer_value(sz), o->model, model_size);
        add_once(reasons, buf);
        return json_string("differs: another file size");
    }
    snprintf(buf, sizeof buf, "model sha256 not verified for %s: it reports %s of the same size as --model", o->name[i],
             json_string_value(path) ? json_string_value(path) : "a file");
    add_once(warnings, buf);
    return json_string("unverified: the server reports a file of --model's size");
}

/* ---- --mode server ---- */

/* The requests of one load point, the same for every engine and round: request k's prompt is
 * the first plen[k] ids of the prompt, its output exactly olen[k] tokens (ignore_eos). */
typedef struct server_prompts {
    char **json; /* [n] "[id,id,...]" */
    int *plen, *olen, n;
    int64_t slot_context; /* the largest prompt + output, rounded up to 256 */
} server_prompts;

static void server_prompts_free(server_prompts *sp) {
    for (int k = 0; sp->json && k < sp->n; k++) free(sp->json[k]);
    free(sp->json);
    free(sp->plen);
    free(sp->olen);
    memset(sp, 0, sizeof *sp);
}

/* splitmix64, and a standard normal from two of its uniforms (Box-Muller) */
static uint64_t sm_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double sm_normal(uint64_t *s) {
    double u1 = ((double)(sm_next(s) >> 11) + 0.5) / 9007199254740992.0, u2 = ((double)(sm_next(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Log-normal lengths (the shape of ShareGPT-v3's prompt and reply token counts, whose pace the
 * design's server mode takes) with the given median and sigma 0.8, or the median itself
 * (--length-dist fixed); clamped to [1, cap]. */
#define LENGTH_SIGMA 0.8
static int draw_length(const compare_opts *o, uint64_t *s, int64_t median, int64_t cap) {
    double x = !strcmp(o->length_dist, "fixed") ? (double)median : (double)median * exp(LENGTH_SIGMA * sm_normal(s));
    int64_t n = (int64_t)llround(x);
    return (int)(n < 1 ? 1 : n > cap ? cap : n);
}

static int make_server_prompts(const compare_opts *o, const char *ids_json, server_prompts *sp) {
    json_t *ids = json_loads(ids_json, 0, NULL);
    int64_t n_ids = (int64_t)json_array_size(ids);
    sp->n = (int)o->requests;
    sp->json = calloc((size_t)sp->n, sizeof *sp->json);
    sp->plen = calloc((size_t)sp->n, sizeof *sp->plen);
    sp->olen = calloc((size_t)sp->n, sizeof *sp->olen);
    if (!ids || !n_ids || !sp->json || !sp->plen || !sp->olen) {
        json_decref(ids);
        return bench_error("out of memory (or no prompt ids) making the server requests");
    }
    uint64_t s = (uint64_t)o->seed * 0x9E3779B97F4A7C15ull + 1;
    int64_t most = 0;
    for (int k = 0; k < sp->n; k++) {
        sp->plen[k] = draw_length(o, &s, o->prompt_len < n_ids ? o->prompt_len : n_ids, n_ids);
        sp->olen[k] = draw_length(o, &s, o->output_len, 4 * o->output_len);
        json_t *a = json_array();
        for (int j = 0; j < sp->plen[k]; j++) json_array_append(a, json_array_get(ids, (size_t)j));
        sp->json[k] = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        if (!sp->json[k]) {
            json_decref(ids);
            return bench_error("out of memory making the server requests");
        }
        if (sp->plen[k] + sp->olen[k] > most) most = sp->plen[k] + sp->olen[k];
    }
    json_decref(ids);
    sp->slot_context = (most + 255) / 256 * 256;
    return 0;
}

static json_t *server_protocol_json(const compare_opts *o, const server_prompts *sp) {
    json_t *rates = json_array(), *conc = json_array(), *pl = json_array(), *ol = json_array();
    for (int k = 0; k < o->n_rates; k++) json_array_append_new(rates, json_real(o->rates[k]));
    for (int k = 0; k < o->n_conc; k++) json_array_append_new(conc, json_integer(o->conc[k]));
    for (int k = 0; k < sp->n; k++) json_array_append_new(pl, json_integer(sp->plen[k])), json_array_append_new(ol, json_integer(sp->olen[k]));
    return json_pack("{s:o, s:o, s:I, s:I, s:s, s:f, s:I, s:I, s:o, s:o, s:I, s:I, s:s}", "rates", rates, "concurrency", conc,
                     "requests_per_point", (json_int_t)o->requests, "seed", (json_int_t)o->seed, "length_distribution",
                     o->length_dist, "length_sigma", !strcmp(o->length_dist, "fixed") ? 0.0 : LENGTH_SIGMA, "prompt_len_median",
                     (json_int_t)o->prompt_len, "output_len_median", (json_int_t)o->output_len, "prompt_lengths", pl,
                     "output_lengths", ol, "parallel", (json_int_t)o->parallel, "slot_context", (json_int_t)sp->slot_context,
                     "requests", "streamed /v1/completions of token ids, greedy, ignore_eos, cache_prompt false; "
                                 "arrivals Poisson at the rate (a seeded schedule) or closed loop at the concurrency");
}

/* A load point's result as a compare row: the load fields, plus the row keys every report reads
 * (decode = output tokens/s under load, prefill_seconds = TTFT p50, itl p50/p99) and the terms
 * the server reports (its slot context, KV types, threads). */
static void server_row_fields(json_t *row, const openai_engine *oe, long long peak_rss) {
    const json_t *meta = oe->meta, *tt = json_object_get(row, "ttft_s"), *it = json_object_get(row, "itl_s");
    json_object_set_new(row, "decode_tokens_per_second", json_real(json_real_value(json_object_get(row, "output_token_throughput"))));
    if (json_is_object(tt)) json_object_set(row, "prefill_seconds", json_object_get(tt, "p50"));
    if (json_is_object(it))
        json_object_set_new(row, "itl", json_pack("{s:O, s:O, s:O}", "p50", json_object_get(it, "p50"), "p90",
                                                  json_object_get(it, "p90"), "p99", json_object_get(it, "p99")));
    json_object_set_new(row, "config", json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:s}", "context", json_object_get(meta, "n_ctx_slot"),
                                                 "kv_type_k", json_object_get(meta, "kv_type_k"), "kv_type_v",
                                                 json_object_get(meta, "kv_type_v"), "threads", json_object_get(meta, "threads"),
                                                 "parallel", json_object_get(meta, "n_slots"), "sampling", "greedy"));
    json_object_set_new(row, "engine", json_pack("{s:s, s:s, s:s, s:O?}", "name", "openai", "url", oe->url_text, "model_id", oe->model,
                                                 "owned_by", json_object_get(json_array_get(json_object_get(oe->models, "data"), 0), "owned_by")));
    json_object_set_new(row, "model", json_pack("{s:O?, s:O?}", "path", json_object_get(meta, "model_path"), "size",
                                                json_object_get(meta, "model_size")));
    if (peak_rss > 0) json_object_set_new(row, "memory", json_pack("{s:I}", "peak_rss_bytes", (json_int_t)peak_rss));
}

/* Round r of engine i in --mode server: its server (ours started here, or the given URL), then
 * every load point against it, each recorded like a process in procs[point]. */
static void run_server_engine(const compare_opts *o, int i, int r, const openai_engine *given, const server_prompts *sp,
                              double model_size, const char *raw, json_t **procs, char (*names)[160]) {
    server_proc srv = {.pid = -1};
    openai_engine own;
    memset(&own, 0, sizeof own);
    const openai_engine *oe = given;
    char why[1200] = "";
    if (!given->models) { /* started here on a free loopback port: edge0-infer serve, or llama-server */
        char np[32], ctx[32], th[32], log[4400];
        snprintf(np, sizeof np, "%lld", (long long)o->parallel);
        snprintf(ctx, sizeof ctx, "%lld", (long long)(o->parallel * sp->slot_context));
        snprintf(th, sizeof th, "%lld", (long long)o->threads);
        snprintf(log, sizeof log, "%s/serve-%s-%d.log", o->raw ? raw : o->out, o->name[i], r);
        char *m = (char *)o->model_of[i];
        /* the same slots, total context and threads; llama-server's batch threads (-tb) as well,
         * since its prompt processing does not use -t; both print "listening on http://..." */
        char *av_edge0[] = {(char *)o->cli, "serve", "-m", m, "--port", "0", "-np", np, "-c", ctx, "-t", th, NULL};
        char *av_llama[] = {(char *)o->llama_server, "-m", m, "--host", "127.0.0.1", "--port", "0", "-np", np, "-c", ctx,
                            "-t", th, "-tb", th, "--metrics", "--no-webui", NULL};
        const int llama = o->eng[i]->kind == ENG_LLAMACPP;
        e0_err e = {{0}};
        bench_progress("%s %d/%lld: starting %s -np %s -c %s -t %s", o->name[i], r, (long long)o->rounds,
                       llama ? "llama-server" : "edge0-infer serve", np, ctx, th);
        if (server_start(llama ? av_llama : av_edge0, log, o->timeout < 600 ? o->timeout : 600, &srv, &e) ||
            openai_open(srv.url, o->api_key, &own, &e)) {
            snprintf(why, sizeof why, "the server did not start: %s", e.msg);
            server_stop(&srv, 2);
        }
        oe = &own;
    }
    for (int p = 0; p < o->n_points; p++) {
        json_t *rec = json_pack("{s:s, s:i, s:s, s:o}", "configuration", names[p], "index", r, "url", oe->url_text, "started_utc",
                                bench_utc_now());
        json_t *before = e0_system_json(), *cond = conditions_check(before, model_size);
        json_object_set_new(rec, "before", before);
        json_object_set_new(rec, "conditions", cond);
        const char *refused = json_string_value(json_object_get(cond, "refused"));
        if (why[0] || refused || proc_interrupted()) {
            const char *reason = why[0] ? why : refused ? refused : "interrupted";
            bench_progress("%s %d/%lld: %s", names[p], r, (long long)o->rounds, reason);
            json_object_set_new(rec, "status", json_string(why[0] ? "failed" : refused ? "refused" : "interrupted"));
            json_object_set_new(rec, "reason", json_string(reason));
            json_array_append_new(procs[p], rec);
            continue;
        }
        int is_rate = p < o->n_rates;
        load_point_spec ls = {.url = oe->url_text, .model = oe->model, .api_key = o->api_key,
                              .prompt_json = (const char *const *)sp->json, .max_tokens = sp->olen, .n_prompts = sp->n,
                              .n_requests = sp->n, .max_inflight = is_rate ? 256 : (int)o->conc[p - o->n_rates],
                              .rate = is_rate ? o->rates[p] : 0, .seed = o->seed, .timeout = o->timeout, .duration = o->window};
        bench_progress("%s %d/%lld: running %d requests", names[p], r, (long long)o->rounds, sp->n);
        e0_err e = {{0}};
        double t0 = e0_now();
        json_t *row = load_point_run(&ls, &e);
        json_object_set_new(rec, "after", e0_system_json());
        json_object_set_new(rec, "wall_seconds", json_real(e0_now() - t0));
        int n_ok = (int)json_integer_value(json_object_get(json_object_get(row, "requests"), "ok"));
        if (row) server_row_fields(row, oe, server_peak_rss(&srv));
        json_object_set_new(rec, "status", json_string(row && n_ok > 0 ? "ok" : "failed"));
        json_object_set_new(rec, "reason", row && n_ok > 0 ? json_null() : json_string(row ? "no request completed" : e.msg));
        json_object_set_new(rec, "row", row ? row : json_null());
        json_array_append_new(procs[p], rec);
    }
    server_stop(&srv, 15);
    if (own.models) openai_close(&own);
}

/* ---- --mode depth ---- */

/* Depths past the model's context are lowered to fit it (a warning says so). */
static void cap_depths(compare_opts *o, json_t *warnings) {
    int64_t have = bench_model_context(o->cli, o->model);
    int64_t test = o->depth_prompt > o->ntok ? o->depth_prompt : o->ntok;
    for (int k = 0; have > 0 && k < o->n_depth; k++)
        if (o->depth[k] + test > have) {
            char w[256];
            int64_t d = have - test > 0 ? have - test : 0;
            snprintf(w, sizeof w, "depth %lld lowered to %lld: the model's context is %lld tokens", (long long)o->depth[k], (long long)d,
                     (long long)have);
            add_once(warnings, w);
            o->depth[k] = d;
        }
}

/* A llama-bench style row (`bench -d`, `llamacpp-bench -d`) with the keys the reports read:
 * prefill or decode tok/s = the test's median t/s, and its terms as "config". */
static void depth_row_fields(const compare_opts *o, json_t *rec, int sub) {
    json_t *row = json_object_get(rec, "row");
    if (!json_is_object(row)) return;
    json_object_set(row, depth_is_pp(o, sub) ? "prefill_tokens_per_second" : "decode_tokens_per_second", json_object_get(row, "median_ts"));
    json_object_set_new(row, "config", json_pack("{s:O?, s:O?, s:O?, s:O?, s:s}", "context", json_object_get(row, "n_ctx"),
                                                 "kv_type_k", json_object_get(row, "type_k"), "kv_type_v", json_object_get(row, "type_v"),
                                                 "threads", json_object_get(row, "n_threads"), "sampling", "none: pseudo-random ids"));
}

int bench_compare(int argc, char **argv) {
    compare_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse_args(argc, argv, &o);
    openai_engine oe[MAX_ENGINES];
    memset(oe, 0, sizeof oe);
    int rc = 1, n_open = 0;
    json_t *warnings = json_array(), *reasons = json_array(), *shas = json_array(), *engines = json_array();
    /* the configurations: every engine, times every batch size in --mode batch */
    int n_cfg = 0, cfg_eng[MAX_CFG], cfg_sub[MAX_CFG];
    int64_t cfg_batch[MAX_CFG];
    char cfg_name[MAX_CFG][160];
    json_t *processes[MAX_CFG] = {0};
    char *ids_json = NULL;
    server_prompts sp = {0};
    const int server = !strcmp(o.mode, "server"), depth = !strcmp(o.mode, "depth"), sustained = !strcmp(o.mode, "sustained");
    if (prc) {
        rc = prc == 2 ? 0 : 1;
        goto out;
    }
    char pbuf[4200], ids_path[4200];
    const char *prompt_path = prompt_path_of(o.prompt, pbuf, sizeof pbuf);
    struct stat st;
    if (stat(prompt_path, &st) != 0 || !S_ISREG(st.st_mode)) {
        bench_error("prompt %s: not a readable file (run from the source tree, or give a file)", prompt_path);
        goto out;
    }
    if (access(o.cli, X_OK) != 0) { /* its tokenizer makes the ids every engine gets */
        bench_error("%s is not an executable file (run make; edge0-infer tokenizes the prompt for every engine)", o.cli);
        goto out;
    }
    if (stat(o.model, &st) != 0 || !S_ISREG(st.st_mode)) {
        bench_error("model %s: not a readable file", o.model);
        goto out;
    }
    const double model_size = (double)gguf_model_size(o.model, (uint64_t)st.st_size); /* all files of a split model */
    for (int i = 0; i < o.n_eng; i++) {
        if (o.eng[i]->kind == ENG_OPENAI || (server && o.server_url[i])) {
            e0_err e;
            if (openai_open(o.url[i] ? o.url[i] : o.server_url[i], o.api_key, &oe[i], &e)) {
                bench_error("%s: %s", o.name[i], e.msg);
                goto out;
            }
            n_open = i + 1;
            continue;
        }
        if (stat(o.model_of[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            bench_error("model %s: not a readable file", o.model_of[i]);
            goto out;
        }
        o.model_bytes[i] = gguf_model_size(o.model_of[i], (uint64_t)st.st_size); /* once, not per process */
        const char *bin = o.eng[i]->kind == ENG_EDGE0 ? o.cli : server ? o.llama_server : o.llamacpp;
        if (access(bin, X_OK) != 0) {
            bench_error("%s: %s is not an executable file%s", o.name[i], bin,
                        o.eng[i]->kind == ENG_LLAMACPP ? " (run `make llamacpp`; it needs the npm registry)" : " (run make)");
            goto out;
        }
    }
    n_open = o.n_eng;
    if (bench_make_dir(o.out)) goto out;
    char raw[4200];
    snprintf(raw, sizeof raw, "%s/raw", o.out);
    if (o.raw && bench_make_dir(raw)) goto out;
    if (o.simd) {
        /* edge0 processes inherit E0_SIMD; llama.cpp gets a backend folder with only its AVX2 build */
        setenv("E0_SIMD", o.simd, 1);
        char lib[4096], link_path[4400];
        snprintf(lib, sizeof lib, "%s", o.llamacpp);
        char *slash = strrchr(lib, '/');
        if (slash) *slash = 0;
        else snprintf(lib, sizeof lib, ".");
        snprintf(o.backend_dir, sizeof o.backend_dir, "%s/llamacpp-avx2", o.out);
        snprintf(link_path, sizeof link_path, "%s/libggml-cpu-haswell.so", o.backend_dir);
        char target[4200];
        snprintf(target, sizeof target, "%s/../llamacpp/lib/libggml-cpu-haswell.so", lib);
        char *real = realpath(target, NULL);
        unlink(link_path);
        if (bench_make_dir(o.backend_dir) || !real || symlink(real, link_path) != 0) {
            free(real);
            bench_error("--simd avx2: cannot set up %s from %s", o.backend_dir, target);
            goto out;
        }
        free(real);
    }

    /* 1. the same model bytes for every engine: sha256 of each file; an openai engine's report */
    bench_progress("hashing the model file%s (cached by path, size and mtime)", o.n_eng > 1 ? "s" : "");
    json_t *local_sha = bench_sha_json(o.model, 1);
    for (int i = 0; i < o.n_eng; i++)
        json_array_append_new(shas, oe[i].models ? openai_model_check(&o, i, &oe[i], model_size, reasons, warnings)
                                    : o.model_of[i] == o.model ? json_incref(local_sha) : bench_sha_json(o.model_of[i], 1));
    for (int i = 0; i < o.n_eng; i++) {
        if (oe[i].models || json_equal(local_sha, json_array_get(shas, (size_t)i))) continue;
        char buf[1024];
        snprintf(buf, sizeof buf, "model sha256 differs: --model %s (%.16s...), %s runs %s (%.16s...)", o.model,
                 json_string_value(local_sha), o.name[i], o.model_of[i], json_string_value(json_array_get(shas, (size_t)i)));
        add_once(reasons, buf);
    }
    json_decref(local_sha);
    for (int i = 0; i < o.n_eng; i++)
        for (int b = 0; b < (o.n_batch ? o.n_batch : o.n_points ? o.n_points : 1); b++) {
            cfg_eng[n_cfg] = i;
            cfg_sub[n_cfg] = b;
            cfg_batch[n_cfg] = o.n_batch ? o.batch[b] : 1;
            if (o.n_batch) snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s b=%lld", o.name[i], (long long)cfg_batch[n_cfg]);
            else if (server && b < o.n_rates) snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s rate=%g", o.name[i], o.rates[b]);
            else if (server) snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s c=%lld", o.name[i], (long long)o.conc[b - o.n_rates]);
            else if (depth && depth_kind(&o, b) == DEPTH_COLD)
                snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s pp%lld cold (d%lld uncached)", o.name[i],
                         (long long)depth_tokens(&o, b), (long long)depth_of(&o, b));
            else if (depth)
                snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s %s%lld @ d%lld", o.name[i], depth_is_pp(&o, b) ? "pp" : "tg",
                         (long long)depth_tokens(&o, b), (long long)depth_of(&o, b));
            else snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s", o.name[i]);
            processes[n_cfg++] = json_array();
        }
    int64_t n_ids = 0;
    if (json_array_size(reasons) == 0) {
        if (make_ids(&o, prompt_path, ids_path, sizeof ids_path, &n_ids, warnings)) goto out;
        if (!(ids_json = ids_json_of(ids_path))) {
            bench_error("cannot read back %s", ids_path);
            goto out;
        }
        if (server && make_server_prompts(&o, ids_json, &sp)) goto out;
        if (depth) cap_depths(&o, warnings);
    }

    /* 2. rounds: every configuration once per round, in order */
    proc_install_signal_handlers();
    int total = (int)o.rounds * n_cfg, done = 0;
    for (int64_t r = 1; r <= o.rounds && json_array_size(reasons) == 0 && !proc_interrupted(); r++)
        for (int c = 0; c < n_cfg && !proc_interrupted(); c++) {
            int i = cfg_eng[c];
            json_t *rec = NULL;
            if (server) { /* one server per engine and round, every load point against it */
                if (cfg_sub[c] != 0) continue;
                run_server_engine(&o, i, (int)r, &oe[i], &sp, model_size, raw, &processes[c], &cfg_name[c]);
                done += o.n_points;
                if (done < total && o.cooldown > 0 && !proc_interrupted()) {
                    bench_progress("cooling down %g s", o.cooldown);
                    proc_sleep(o.cooldown);
                }
                continue;
            }
            if (o.eng[i]->kind == ENG_OPENAI) {
                rec = measure_openai(&o, &oe[i], cfg_name[c], (int)r, ids_json, cfg_batch[c], model_size);
            } else {
                char nums[9][32];
                char **av = engine_argv(&o, i, ids_path, nums, cfg_sub[c]);
                if (!av) break;
                bench_job j = {.label = cfg_name[c], .index = (int)r, .total = (int)o.rounds, .argv = av, .timeout = o.timeout,
                               .model_size = model_size, .raw_dir = o.raw ? raw : NULL};
                rec = bench_measure(&j);
                free(av);
                if (depth) depth_row_fields(&o, rec, cfg_sub[c]);
            }
            if (rec) json_array_append_new(processes[c], rec);
            if (++done < total && o.cooldown > 0 && !proc_interrupted()) {
                bench_progress("cooling down %g s", o.cooldown);
                proc_sleep(o.cooldown);
            }
        }
    if (proc_interrupted()) json_array_append_new(warnings, json_string("the comparison was interrupted; the report is partial"));
    for (int c = 0; c < n_cfg; c++) {
        json_t *cj = config_json(&o, cfg_eng[c], cfg_name[c], cfg_batch[c], processes[c],
                                 json_incref(json_array_get(shas, (size_t)cfg_eng[c])));
        if (server) {
            json_object_set_new(cj, "server", compare_server_summary(processes[c]));
            json_object_set_new(cj, "load_point", cfg_sub[c] < o.n_rates ? json_pack("{s:f}", "rate", o.rates[cfg_sub[c]])
                                                                         : json_pack("{s:I}", "concurrency", (json_int_t)o.conc[cfg_sub[c] - o.n_rates]));
        }
        if (sustained) json_object_set_new(cj, "sustained", compare_sustained_summary(processes[c]));
        if (depth)
            json_object_set_new(cj, "depth", json_pack("{s:I, s:s, s:I, s:I}", "depth", (json_int_t)depth_of(&o, cfg_sub[c]), "test",
                                                       depth_kind(&o, cfg_sub[c]) == DEPTH_COLD ? "pp_cold"
                                                       : depth_is_pp(&o, cfg_sub[c])            ? "pp"
                                                                                            : "tg",
                                                       "tokens", (json_int_t)depth_tokens(&o, cfg_sub[c]), "kv_tokens",
                                                       (json_int_t)depth_kv(&o, cfg_sub[c])));
        json_object_set_new(cj, "engine_name", json_string(o.name[cfg_eng[c]]));
        json_array_append_new(engines, cj);
        processes[c] = NULL;
    }
    /* 3. the terms every engine actually ran with */
    check_terms(engines, server || depth ? -1 : n_ids, reasons, warnings);
    char small[256];
    if (e0_small_n_warning((size_t)o.rounds, small, sizeof small)[0]) json_array_append_new(warnings, json_string(small));
    int all_ok = 1;
    size_t i;
    json_t *e;
    json_array_foreach(engines, i, e) all_ok &= json_integer_value(json_object_get(e, "ok")) > 0;
    /* --mode server: no request lost, and our serve's /metrics agree with the client */
    int server_consistent = 1;
    json_array_foreach(engines, i, e) {
        const json_t *s = json_object_get(e, "server"), *sm = json_object_get(s, "server_metrics");
        char w[600];
        if (s && json_is_false(json_object_get(json_object_get(s, "requests"), "accounted"))) {
            snprintf(w, sizeof w, "%s: requests lost: completed + failed + not sent != scheduled", json_string_value(json_object_get(e, "name")));
            json_array_append_new(warnings, json_string(w));
            server_consistent = 0;
        }
        if (json_is_object(sm) && !json_is_true(json_object_get(sm, "agree"))) {
            snprintf(w, sizeof w, "%s: the server's /metrics (%s) disagree with the client: %s", json_string_value(json_object_get(e, "name")),
                     json_string_value(json_object_get(sm, "dialect")),
                     json_string_value(json_array_get(json_object_get(sm, "disagreements"), 0)));
            json_array_append_new(warnings, json_string(w));
            if (json_is_true(json_object_get(sm, "strict"))) server_consistent = 0; /* our serve: a bug somewhere */
        }
    }
    json_t *names = json_array(), *batches = json_array();
    for (int c = 0; c < n_cfg; c++) json_array_append_new(names, json_string(cfg_name[c]));
    for (int b = 0; b < o.n_batch; b++) json_array_append_new(batches, json_integer(o.batch[b]));
    json_t *protocol = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:s, s:o, s:o, s:s, s:o}", "prompt", o.prompt,
                                 "prompt_file", prompt_path, "prompt_sha256", bench_sha_json(prompt_path, 0), "prompt_tokens",
                                 (json_int_t)n_ids, "warmup", (json_int_t)o.warmup, "ntok", (json_int_t)o.ntok, "runs",
                                 (json_int_t)o.rounds, "threads", (json_int_t)o.threads, "context", (json_int_t)o.context,
                                 "cooldown_seconds", o.cooldown, "mode", o.mode, "configs", names, "batch_sizes", batches, "order",
                                 "alternated: every configuration once per round", "memory_cap_percent",
                                 o.cap_percent ? json_integer(o.cap_percent) : json_null());
    json_object_set_new(protocol, "simd", o.simd ? json_string(o.simd) : json_string("each engine's best"));
    if (server) json_object_set_new(protocol, "server", server_protocol_json(&o, &sp));
    if (sustained) json_object_set_new(protocol, "duration_seconds", json_real(o.duration));
    if (depth) {
        json_t *d = json_array();
        for (int k = 0; k < o.n_depth; k++) json_array_append_new(d, json_integer(o.depth[k]));
        json_object_set_new(protocol, "depths", d);
        json_object_set_new(protocol, "depth_prompt_tokens", json_integer(o.depth_prompt));
        json_object_set_new(protocol, "depth_gen_tokens", json_integer(o.ntok));
        json_object_set_new(protocol, "depth_cold_rows", json_boolean(!o.no_cold));
    }
    json_t *first_id = json_object_get(json_array_get(engines, 0), "identity");
    json_t *identity = json_pack("{s:s, s:o, s:s, s:O, s:O?, s:O?}", "cli", o.cli, "cli_sha256", bench_sha_json(o.cli, 0),
                                 "model_path", o.model, "model_sha256", json_array_get(shas, 0), "engine",
                                 json_object_get(first_id, "engine"), "model", json_object_get(first_id, "model"));
    json_t *comparison = json_pack("{s:b, s:O, s:o}", "comparable", json_array_size(reasons) == 0, "refused", reasons,
                                   "first_over_engine", ratios_json(engines));
    json_t *report = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:O, s:o, s:O}", "format", REPORT_FORMAT, "kind", "compare",
                               /* configurations and warnings: O (still freed at out) */
                               "created_utc", bench_utc_now(), "harness", e0_build_json(), "protocol", protocol, "device",
                               e0_device_json(), "identity", identity, "configurations", engines, "comparison", comparison,
                               "warnings", warnings);
    if (!report) {
        bench_error("out of memory");
        goto out;
    }
    json_object_set_new(report, "summary", json_pack("{s:i, s:i}", "processes", done, "ok", all_ok));
    if (server) json_object_set_new(comparison, "server_metrics_consistent", json_boolean(server_consistent));
    int wrc = write_reports(&o, report);
    json_decref(report);
    if (wrc) goto out;
    if (json_array_size(reasons)) {
        size_t r;
        json_t *x;
        json_array_foreach(reasons, r, x) bench_error("comparison refused: %s", json_string_value(x));
    } else if (!all_ok) {
        bench_error("a configuration had no successful measurement (see %s/report.md)", o.out);
    } else if (!server_consistent) {
        bench_error("requests lost, or edge0-infer serve's /metrics disagree with the client (see %s/report.md)", o.out);
    } else {
        rc = 0;
    }
out:
    for (int c = 0; c < n_cfg; c++) json_decref(processes[c]);
    for (int k = 0; k < n_open; k++) openai_close(&oe[k]);
    for (int k = 0; k < o.n_eng; k++) free((char *)o.url[k]);
    free(ids_json);
    server_prompts_free(&sp);
    json_decref(engines);
    json_decref(warnings);
    json_decref(reasons);
    json_decref(shas);
    return rc;
}
