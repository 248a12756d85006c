/* test_compare.c — `edge0-bench compare` (bench/compare.c) end to end on a small golden model:
 * edge0 against the pinned llama.cpp (skipped, with the reason, when it cannot be installed
 * because the npm registry is unreachable): the report files and fields (both engines, their
 * processes alternated, the same prompt token ids seen by each, the model's real sha256, the
 * ratios, the Markdown comparison and the SVG), `report render` on it, and the refusal of unlike
 * comparisons: a model file with another sha256 for one engine is refused before anything runs
 * (exit 1, the reason in the message and the report). The openai adapter against our own
 * `serve` on a free loopback port: edge0 (CLI) vs openai= in single mode (the same terms, the
 * model checked by the file size the server reports), openai batch sizes, a different context
 * refused. Bad arguments: one clear error, exit 1. */
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

static char bench_bin[1024], model[1024], other[1024], dir[1024], ll_skip[1200];
static char lb[1024], ll_bin[1100]; /* the build dir holding llama.cpp (as test_llamacpp.c finds it), its llamacpp-bench */
static char out[1 << 16];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192], full[8300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    return t_sh(full, out, sizeof out);
}

static json_t *load_report(const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/report.json", dir, name);
    json_t *r = json_load_file(path, 0, NULL);
    CHECKF(r != NULL, "no report %s", path);
    return r;
}

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

static void test_edge0_vs_llamacpp(void) {
    if (ll_skip[0]) {
        t_skip("%s", ll_skip);
        return;
    }
    int rc = sh("'%s' compare --model '%s' --out '%s/ok' --engines edge0,llama.cpp --rounds 2 --warmup 1 --ntok 6 "
                "--cooldown 0 --prompt short --threads 2 --llamacpp '%s' --simd avx2",
                bench_bin, model, dir, ll_bin);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    /* alternated: edge0 1/2, llama.cpp 1/2, edge0 2/2, llama.cpp 2/2 */
    const char *a = strstr(out, "edge0 1/2: running"), *b = a ? strstr(a, "llama.cpp 1/2: running") : NULL,
               *c = b ? strstr(b, "edge0 2/2: running") : NULL, *d = c ? strstr(c, "llama.cpp 2/2: running") : NULL;
    CHECKF(d != NULL, "processes not alternated: %s", out);
    json_t *r = load_report("ok");
    if (!r) return;
    CHECK(!strcmp(json_string_value(get(r, "kind")), "compare"));
    CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
    char sha[128] = "";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sha256sum '%s' | cut -c1-64", model);
    t_sh(cmd, sha, sizeof sha);
    sha[64] = 0;
    const json_t *cfgs = get(r, "configurations");
    CHECK(json_array_size(cfgs) == 2);
    long long n_ids = (long long)json_integer_value(get(get(r, "protocol"), "prompt_tokens"));
    CHECK(n_ids > 10);
    for (size_t i = 0; i < json_array_size(cfgs); i++) {
        const json_t *e = json_array_get(cfgs, i), *id = get(e, "identity");
        CHECK(!strcmp(json_string_value(get(e, "name")), i ? "llama.cpp" : "edge0"));
        CHECK(json_integer_value(get(e, "ok")) == 2 && json_array_size(get(e, "processes")) == 2);
        CHECKF(json_string_value(get(id, "model_sha256")) && !strcmp(json_string_value(get(id, "model_sha256")), sha),
               "sha %s vs %s", json_string_value(get(id, "model_sha256")), sha);
        CHECK(json_integer_value(get(get(id, "terms"), "n_prompt")) == n_ids);
        CHECK(!strcmp(json_string_value(get(get(id, "terms"), "kv_type_k")), "f16"));
        CHECK(json_is_object(get(id, "engine")));
        /* --simd avx2: edge0 at the AVX2 level, llama.cpp with only its AVX2 CPU backend */
        if (i == 0) CHECK(json_string_value(get(get(id, "engine"), "simd")) && !strcmp(json_string_value(get(get(id, "engine"), "simd")), "avx2"));
        else CHECK(json_string_value(get(get(id, "engine"), "system_info")) &&
                   strstr(json_string_value(get(get(id, "engine"), "system_info")), "AVX512") == NULL);
        CHECK(json_is_object(get(get(e, "metrics"), "decode_tokens_per_second")));
    }
    const json_t *ratio = get(get(get(r, "comparison"), "first_over_engine"), "llama.cpp");
    CHECK(json_is_number(get(ratio, "decode_tokens_per_second")) && json_number_value(get(ratio, "decode_tokens_per_second")) > 0);
    /* two rounds: the small-n warning */
    int small = 0;
    for (size_t i = 0; i < json_array_size(get(r, "warnings")); i++)
        small |= strstr(json_string_value(json_array_get(get(r, "warnings"), i)), "p95") != NULL;
    CHECK(small);
    json_decref(r);
    CHECK(sh("grep -c '## Comparison' '%s/ok/report.md'", dir) == 0 && atoi(out) == 1);
    CHECK(sh("head -c 200 '%s/ok/report.svg'", dir) == 0 && strstr(out, "<svg ") != NULL);
    CHECK(sh("'%s' report render '%s/ok/report.json'", bench_bin, dir) == 0 && strstr(out, "## Comparison") != NULL);
}

static void test_refuses_other_model(void) {
    if (ll_skip[0]) {
        t_skip("%s", ll_skip);
        return;
    }
    int rc = sh("'%s' compare --model '%s' --out '%s/refused' --engines edge0,llama.cpp --engine-model 'llama.cpp=%s' "
                "--rounds 1 --cooldown 0 --prompt short --llamacpp '%s'",
                bench_bin, model, dir, other, ll_bin);
    CHECKF(rc == 1, "exit %d: %s", rc, out);
    CHECKF(strstr(out, "comparison refused: model sha256 differs") != NULL, "%s", out);
    CHECK(strstr(out, "running") == NULL); /* refused before any process */
    json_t *r = load_report("refused");
    if (!r) return;
    CHECK(json_is_false(get(get(r, "comparison"), "comparable")));
    CHECK(json_array_size(get(get(r, "comparison"), "refused")) == 1);
    json_decref(r);
    CHECK(sh("grep -c 'Refused' '%s/refused/report.md'", dir) == 0 && atoi(out) == 1);
}

/* `edge0-infer serve --port 0 ARGS` in the background: its pid, url filled (0 when it listens). */
static pid_t start_serve(const char *args, char *url, size_t cap) {
    char log[1200], cmd[4096];
    snprintf(log, sizeof log, "%s/serve.log", dir);
    snprintf(cmd, sizeof cmd, "exec %s/bin/edge0-infer serve --port 0 %s 2>%s", t_build(), args, log);
    unlink(log);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600 && pid > 0; i++) {
        FILE *f = fopen(log, "r");
        char line[1024];
        int port = 0;
        while (f && fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "listening on http://127.0.0.1:");
            if (p) port = atoi(p + strlen("listening on http://127.0.0.1:"));
        }
        if (f) fclose(f);
        if (port > 0) {
            snprintf(url, cap, "http://127.0.0.1:%d", port);
            return pid;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) return -1;
        usleep(100000);
    }
    return -1;
}

static void stop_serve(pid_t pid) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static void test_openai_adapter(void) {
    char url[128], args[2048];
    snprintf(args, sizeof args, "-m '%s' -np 4 -c 1024 -t 2", model);
    pid_t pid = start_serve(args, url, sizeof url);
    CHECKF(pid > 0, "serve did not start (see %s/serve.log)", dir);
    if (pid <= 0) return;
    /* the CLI with the serve's per-slot context (1024 / 4) against the server */
    int rc = sh("'%s' compare --model '%s' --out '%s/openai' --engines edge0,openai=%s --rounds 2 --warmup 1 --ntok 6 "
                "--cooldown 0 --prompt short --threads 2 --context 256",
                bench_bin, model, dir, url);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *r = load_report("openai");
    if (r) {
        CHECK(json_is_true(get(get(r, "comparison"), "comparable")));
        const json_t *cfgs = get(r, "configurations");
        CHECK(json_array_size(cfgs) == 2);
        const json_t *oe = json_array_get(cfgs, 1);
        CHECK(!strncmp(json_string_value(get(oe, "name")), "openai@127.0.0.1:", 17));
        CHECK(json_integer_value(get(oe, "ok")) == 2);
        const json_t *t0 = get(get(json_array_get(cfgs, 0), "identity"), "terms"), *t1 = get(get(oe, "identity"), "terms");
        CHECKF(json_equal(t0, t1), "terms differ");
        CHECK(json_integer_value(get(t1, "n_prompt")) == json_integer_value(get(get(r, "protocol"), "prompt_tokens")));
        int unverified = 0;
        for (size_t i = 0; i < json_array_size(get(r, "warnings")); i++)
            unverified |= strstr(json_string_value(json_array_get(get(r, "warnings"), i)), "model sha256 not verified") != NULL;
        CHECK(unverified);
        json_decref(r);
    }
    /* batch sizes of one engine */
    rc = sh("'%s' compare --model '%s' --out '%s/batch' --engines openai=%s --mode batch --batch-size 1,3 --rounds 1 "
            "--warmup 1 --ntok 6 --cooldown 0 --prompt short",
            bench_bin, model, dir, url);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    r = load_report("batch");
    if (r) {
        const json_t *cfgs = get(r, "configurations");
        CHECK(json_array_size(cfgs) == 2);
        CHECK(json_integer_value(get(json_array_get(cfgs, 1), "batch_size")) == 3);
        const json_t *row = get(json_array_get(get(json_array_get(cfgs, 1), "processes"), 0), "row");
        CHECK(json_integer_value(get(row, "batch_size")) == 3 && json_number_value(get(row, "decode_tokens_per_second")) > 0);
        json_decref(r);
    }
    /* a different context is refused (the CLI's 512 against the slot's 256) */
    rc = sh("'%s' compare --model '%s' --out '%s/ctx' --engines edge0,openai=%s --rounds 1 --warmup 1 --ntok 4 --cooldown 0 "
            "--prompt short --threads 2 --context 512",
            bench_bin, model, dir, url);
    CHECKF(rc == 1 && strstr(out, "comparison refused: context"), "exit %d: %s", rc, out);
    /* batch mode on a CLI engine: refused up front */
    CHECK(sh("'%s' compare --model '%s' --out '%s/bad' --engines edge0,openai=%s --mode batch", bench_bin, model, dir, url) == 1);
    stop_serve(pid);
}

static void test_bad_arguments(void) {
    static const char *const bad[] = {"--engines edge0", "--engines edge0,edge0", "--engines edge0,vllm",
                                      "--engines edge0,openai=https://127.0.0.1:8080", "--mode server", "--rounds 0",
                                      "--engines edge0,openai", "--batch-size 4",
                                      "--engine-model nosuch=x.gguf", "--bogus 1", "--rounds"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = sh("'%s' compare --model '%s' --out '%s/bad' %s", bench_bin, model, dir, bad[i]);
        int lines = 0;
        for (const char *p = out; *p; p++) lines += *p == '\n';
        CHECKF(rc == 1 && lines == 1 && strstr(out, "edge0-bench: "), "compare %s: exit %d: %s", bad[i], rc, out);
    }
    CHECK(sh("'%s' compare --out '%s/bad'", bench_bin, dir) == 1 && strstr(out, "--model"));
    CHECK(sh("'%s' compare --help", bench_bin) == 0 && strstr(out, "alternating"));
}

int main(void) {
    snprintf(bench_bin, sizeof bench_bin, "%s/bin/edge0-bench", t_build());
    snprintf(dir, sizeof dir, "%s/test-compare", t_build());
    mkdir(dir, 0755);
    if (!t_need_shared("golden/qwen3moe.gguf", "golden/qwen2moe.gguf", NULL)) return T_DONE();
    snprintf(model, sizeof model, "%s/golden/qwen3moe.gguf", t_shared());
    snprintf(other, sizeof other, "%s/golden/qwen2moe.gguf", t_shared());
    /* llama.cpp: what `make llamacpp` installs (tools/llamacpp.sh; exit 3 = registry unreachable) */
    char cmd[4096];
    /* $E0_LLAMACPP, else the build dir when it has the install, else build/ (the asan build reuses it) */
    const char *env = getenv("E0_LLAMACPP");
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/llamacpp", t_build());
    struct stat st;
    snprintf(lb, sizeof lb, "%s", env && *env ? env : stat(probe, &st) == 0 ? t_build() : "build");
    snprintf(ll_bin, sizeof ll_bin, "%s/bin/llamacpp-bench", lb);
    snprintf(cmd, sizeof cmd, "sh tools/llamacpp.sh '%s' >'%s/llamacpp-setup.log' 2>&1", lb, dir);
    int rc = t_sh(cmd, NULL, 0);
    if (rc == 3) snprintf(ll_skip, sizeof ll_skip, "llama.cpp could not be installed: npm registry unreachable (%s/llamacpp-setup.log)", dir);
    t_begin("llamacpp/install");
    CHECKF(rc == 0 || rc == 3, "tools/llamacpp.sh failed (%d): see %s/llamacpp-setup.log", rc, dir);
    if (rc == 3) t_skip("%s", ll_skip);
    t_end();
    if (rc != 0 && !ll_skip[0]) snprintf(ll_skip, sizeof ll_skip, "llama.cpp install failed (counted above)");
    RUN(test_edge0_vs_llamacpp);
    RUN(test_refuses_other_model);
    RUN(test_openai_adapter);
    RUN(test_bad_arguments);
    return T_DONE();
}
