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
#include "measure/stats.h"
#include "measure/sysinfo.h"

#define MAX_ENGINES 8
#define MAX_IDS (1 << 20)

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
    "  --mode single|batch single: one sequence; batch: --batch-size B concurrent identical streams\n"
    "                      per measurement, openai engines only [single]\n"
    "  --batch-size LIST   batch sizes for --mode batch, at most 64 [1,4,16]\n"
    "  --simd avx2         both engines at the AVX2 level on a machine with AVX-512: edge0 with\n"
    "                      E0_SIMD=avx2, llama.cpp with only its haswell (AVX2) CPU backend\n"
    "  --memory-cap P      every process under a cgroup memory limit of P%% of the model file\n"
    "                      (page cache included; tools/memcap.sh: needs root and cgroup v1)\n"
    "  --raw               keep each process's stdout and stderr in DIR/raw/\n"
    "\n"
    "An openai engine is measured from the client (TTFT = prefill; requests carry cache_prompt\n"
    "false and ignore_eos); its model file and KV types are checked where /v1/models says them\n"
    "(edge0-infer serve does), else reported as not verified. The server workload (Poisson\n"
    "arrivals, goodput) is `edge0-bench load`.\n"
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
    const char *model, *out, *cli, *llamacpp, *prompt, *mode, *api_key, *simd;
    char backend_dir[4200]; /* --simd avx2: OUT/llamacpp-avx2 holding only libggml-cpu-haswell.so */
    const engine_def *eng[MAX_ENGINES];
    const char *model_of[MAX_ENGINES]; /* the file each engine runs */
    const char *url[MAX_ENGINES];      /* openai engines: the endpoint */
    char name[MAX_ENGINES][128];       /* "edge0", "llama.cpp", "openai@127.0.0.1:8080" */
    int n_eng;
    int64_t batch[8];                  /* --batch-size list (--mode batch) */
    int n_batch;
    int64_t rounds, warmup, ntok, threads, context, cap_percent;
    double cooldown, timeout;
    int raw;
    char cli_buf[4096], ll_buf[4096];
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

static int parse_args(int argc, char **argv, compare_opts *o) {
    e0_err e;
    const char *engines = "edge0,llama.cpp", *overrides[MAX_ENGINES];
    int n_over = 0;
    o->prompt = "medium";
    o->mode = "single";
    o->rounds = 3;
    o->warmup = 5;
    o->ntok = 50;
    o->cooldown = 10;
    o->timeout = 3600;
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
        if (i + 1 >= argc) return bench_error("%s needs a value (see edge0-bench compare --help)", a);
        v = argv[++i];
        const char **dst = !strcmp(a, "--model") ? &o->model : !strcmp(a, "--out") ? &o->out : !strcmp(a, "--cli") ? &o->cli
                         : !strcmp(a, "--llamacpp") ? &o->llamacpp : !strcmp(a, "--prompt") ? &o->prompt
                         : !strcmp(a, "--mode") ? &o->mode : !strcmp(a, "--engines") ? &engines
                         : !strcmp(a, "--api-key") ? &o->api_key : !strcmp(a, "--simd") ? &o->simd : NULL;
        int64_t *num = !strcmp(a, "--rounds") ? &o->rounds : !strcmp(a, "--warmup") ? &o->warmup : !strcmp(a, "--ntok") ? &o->ntok
                     : !strcmp(a, "--threads") ? &o->threads : !strcmp(a, "--context") ? &o->context
                     : !strcmp(a, "--memory-cap") ? &o->cap_percent : NULL;
        double *real = !strcmp(a, "--cooldown") ? &o->cooldown : !strcmp(a, "--timeout") ? &o->timeout : NULL;
        if (dst) *dst = v;
        else if (num && e0_parse_i64(v, !strcmp(a, "--warmup") ? 0 : 1, 1 << 24, num, a, &e)) return bench_error("%s", e.msg);
        else if (real && e0_parse_f64(v, !strcmp(a, "--timeout") ? 1 : 0, 7 * 86400, real, a, &e)) return bench_error("%s", e.msg);
        else if (!strcmp(a, "--batch-size")) {
            char b[256];
            snprintf(b, sizeof b, "%s", v);
            o->n_batch = 0;
            for (char *sv, *t = strtok_r(b, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
                if (o->n_batch == 8) return bench_error("--batch-size: at most 8 sizes");
                if (e0_parse_i64(t, 1, OPENAI_MAX_BATCH, &o->batch[o->n_batch++], a, &e)) return bench_error("%s", e.msg);
            }
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
    if (strcmp(o->mode, "single") && strcmp(o->mode, "batch"))
        return bench_error("--mode %s: single or batch (for the server workload see `edge0-bench load`)", o->mode);
    if (parse_engines(engines, o)) return 1;
    if (!strcmp(o->mode, "batch")) {
        if (!o->n_batch) o->n_batch = 3, o->batch[0] = 1, o->batch[1] = 4, o->batch[2] = 16;
        for (int i = 0; i < o->n_eng; i++)
            if (o->eng[i]->kind != ENG_OPENAI)
                return bench_error("--mode batch: %s has no batched decode (compare openai=URL endpoints, e.g. edge0-infer serve -np 16)",
                                   o->name[i]);
    } else if (o->n_batch) {
        return bench_error("--batch-size needs --mode batch");
    }
    if (o->simd && strcmp(o->simd, "avx2")) return bench_error("--simd: only avx2 (got '%s')", o->simd);
    if (o->n_eng * (o->n_batch ? o->n_batch : 1) < 2)
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

/* argv of one process of engine i (under tools/memcap.sh with --memory-cap); numbers in nums. */
static char **engine_argv(const compare_opts *o, int i, const char *ids_path, char nums[5][32]) {
    char **v = calloc(28, sizeof *v);
    if (!v) return NULL;
    snprintf(nums[0], 32, "%lld", (long long)o->warmup);
    snprintf(nums[1], 32, "%lld", (long long)o->ntok);
    snprintf(nums[2], 32, "%lld", (long long)o->threads);
    snprintf(nums[3], 32, "%lld", (long long)o->context);
    size_t n = 0;
    if (o->cap_percent) {
        struct stat st;
        long long size = stat(o->model_of[i], &st) == 0 ? (long long)st.st_size : 0;
        snprintf(nums[4], 32, "%lld", size / 100 * o->cap_percent);
        const char *cap[] = {"sh", "tools/memcap.sh", nums[4], o->model_of[i]};
        for (size_t k = 0; k < sizeof cap / sizeof *cap; k++) v[n++] = (char *)cap[k];
    }
    const engine_def *d = o->eng[i];
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

/* Every successful row of every engine against the first one's terms: a difference is a reason
 * to refuse; a term one side does not report (an openai server that does not say its KV type)
 * is a warning, "not verified". */
static void check_terms(json_t *engines, int64_t n_ids, json_t *reasons, json_t *warnings) {
    json_t *ref = NULL;
    const char *ref_name = NULL;
    size_t i, k;
    json_t *e, *p;
    json_array_foreach(engines, i, e) {
        json_array_foreach(json_object_get(e, "processes"), k, p) {
            if (strcmp(json_string_value(json_object_get(p, "status")), "ok")) continue;
            json_t *t = terms_of(json_object_get(p, "row"));
            const char *name = json_string_value(json_object_get(e, "name"));
            if (json_integer_value(json_object_get(t, "n_prompt")) != n_ids) {
                char buf[256];
                snprintf(buf, sizeof buf, "%s saw %lld prompt tokens, not the %lld ids given", name,
                         (long long)json_integer_value(json_object_get(t, "n_prompt")), (long long)n_ids);
                json_array_append_new(reasons, json_string(buf));
            }
            if (!ref) {
                ref = t, ref_name = name;
                continue;
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
    }
    json_decref(ref);
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
            if (json_equal(json_object_get(f, "batch_size"), json_object_get(e, "batch_size"))) {
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
    if (!rc) bench_progress("wrote %s/report.json, report.md, report.svg", o->out);
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

int bench_compare(int argc, char **argv) {
    compare_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse_args(argc, argv, &o);
    openai_engine oe[MAX_ENGINES];
    memset(oe, 0, sizeof oe);
    int rc = 1, n_open = 0;
    json_t *warnings = json_array(), *reasons = json_array(), *shas = json_array(), *engines = json_array();
    /* the configurations: every engine, times every batch size in --mode batch */
    int n_cfg = 0, cfg_eng[MAX_ENGINES * 8];
    int64_t cfg_batch[MAX_ENGINES * 8];
    char cfg_name[MAX_ENGINES * 8][160];
    json_t *processes[MAX_ENGINES * 8] = {0};
    char *ids_json = NULL;
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
    const double model_size = (double)st.st_size;
    for (int i = 0; i < o.n_eng; i++) {
        if (o.eng[i]->kind == ENG_OPENAI) {
            e0_err e;
            if (openai_open(o.url[i], o.api_key, &oe[i], &e)) {
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
        const char *bin = o.eng[i]->kind == ENG_EDGE0 ? o.cli : o.llamacpp;
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
        json_array_append_new(shas, o.eng[i]->kind == ENG_OPENAI ? openai_model_check(&o, i, &oe[i], model_size, reasons, warnings)
                                    : o.model_of[i] == o.model ? json_incref(local_sha) : bench_sha_json(o.model_of[i], 1));
    for (int i = 0; i < o.n_eng; i++) {
        if (o.eng[i]->kind == ENG_OPENAI || json_equal(local_sha, json_array_get(shas, (size_t)i))) continue;
        char buf[1024];
        snprintf(buf, sizeof buf, "model sha256 differs: --model %s (%.16s...), %s runs %s (%.16s...)", o.model,
                 json_string_value(local_sha), o.name[i], o.model_of[i], json_string_value(json_array_get(shas, (size_t)i)));
        add_once(reasons, buf);
    }
    json_decref(local_sha);
    for (int i = 0; i < o.n_eng; i++)
        for (int b = 0; b < (o.n_batch ? o.n_batch : 1); b++) {
            cfg_eng[n_cfg] = i;
            cfg_batch[n_cfg] = o.n_batch ? o.batch[b] : 1;
            if (o.n_batch) snprintf(cfg_name[n_cfg], sizeof cfg_name[n_cfg], "%s b=%lld", o.name[i], (long long)cfg_batch[n_cfg]);
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
    }

    /* 2. rounds: every configuration once per round, in order */
    proc_install_signal_handlers();
    int total = (int)o.rounds * n_cfg, done = 0;
    for (int64_t r = 1; r <= o.rounds && json_array_size(reasons) == 0 && !proc_interrupted(); r++)
        for (int c = 0; c < n_cfg && !proc_interrupted(); c++) {
            int i = cfg_eng[c];
            json_t *rec = NULL;
            if (o.eng[i]->kind == ENG_OPENAI) {
                rec = measure_openai(&o, &oe[i], cfg_name[c], (int)r, ids_json, cfg_batch[c], model_size);
            } else {
                char nums[5][32];
                char **av = engine_argv(&o, i, ids_path, nums);
                if (!av) break;
                bench_job j = {.label = cfg_name[c], .index = (int)r, .total = (int)o.rounds, .argv = av, .timeout = o.timeout,
                               .model_size = model_size, .raw_dir = o.raw ? raw : NULL};
                rec = bench_measure(&j);
                free(av);
            }
            if (rec) json_array_append_new(processes[c], rec);
            if (++done < total && o.cooldown > 0 && !proc_interrupted()) {
                bench_progress("cooling down %g s", o.cooldown);
                proc_sleep(o.cooldown);
            }
        }
    if (proc_interrupted()) json_array_append_new(warnings, json_string("the comparison was interrupted; the report is partial"));
    for (int c = 0; c < n_cfg; c++) {
        json_array_append_new(engines, config_json(&o, cfg_eng[c], cfg_name[c], cfg_batch[c], processes[c],
                                                   json_incref(json_array_get(shas, (size_t)cfg_eng[c]))));
        processes[c] = NULL;
    }
    /* 3. the terms every engine actually ran with */
    check_terms(engines, n_ids, reasons, warnings);
    char small[256];
    if (e0_small_n_warning((size_t)o.rounds, small, sizeof small)[0]) json_array_append_new(warnings, json_string(small));
    int all_ok = 1;
    size_t i;
    json_t *e;
    json_array_foreach(engines, i, e) all_ok &= json_integer_value(json_object_get(e, "ok")) > 0;
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
    int wrc = write_reports(&o, report);
    json_decref(report);
    if (wrc) goto out;
    if (json_array_size(reasons)) {
        size_t r;
        json_t *x;
        json_array_foreach(reasons, r, x) bench_error("comparison refused: %s", json_string_value(x));
    } else if (!all_ok) {
        bench_error("a configuration had no successful measurement (see %s/report.md)", o.out);
    } else {
        rc = 0;
    }
out:
    for (int c = 0; c < n_cfg; c++) json_decref(processes[c]);
    for (int k = 0; k < n_open; k++) openai_close(&oe[k]);
    for (int k = 0; k < o.n_eng; k++) free((char *)o.url[k]);
    free(ids_json);
    json_decref(engines);
    json_decref(warnings);
    json_decref(reasons);
    json_decref(shas);
    return rc;
}
