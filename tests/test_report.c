/* test_report.c — `edge0-bench report render/compare` and `edge0-bench ab` on inputs made here:
 * report JSONs written by the test (a baseline, a matching report, and ones whose protocol,
 * device, model or effective configuration differ) and A/B commands that print fixed rows.
 * compare must refuse (exit 1, saying why) what is not comparable and accept what matches. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "measure/sysinfo.h"
#include "t.h"

static char dir[256];

/* Run a shell command; stdout and stderr into *out / *err (malloc'd). Returns the exit status. */
static int run(const char *cmd, char **out, char **err) {
    char full[4096], po[400], pe[400];
    snprintf(po, sizeof po, "%s/out.txt", dir);
    snprintf(pe, sizeof pe, "%s/err.txt", dir);
    snprintf(full, sizeof full, "%s >'%s' 2>'%s'", cmd, po, pe);
    int st = system(full);
    e0_err e;
    *out = e0_read_text(po, 1 << 22, &e);
    *err = e0_read_text(pe, 1 << 22, &e);
    if (!*out) *out = strdup("");
    if (!*err) *err = strdup("");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const char *bench_bin(void) {
    static char p[512];
    snprintf(p, sizeof p, "%s/bin/edge0-bench", t_build());
    return p;
}

typedef struct variant {
    int runs;
    const char *cpu;
    const char *routing;
    const char *model_sha;
    double decode[3];
} variant;

static json_t *process(int k, double decode, const char *routing) {
    json_t *row = json_pack("{s:f, s:f, s:f, s:i, s:i, s:{s:I}, s:{s:f, s:f}, s:{s:s, s:i}}", "prefill_seconds",
                            2.5 + 0.01 * k, "prefill_tokens_per_second", 250.0 - k, "decode_tokens_per_second",
                            decode, "n_prompt", 627, "n_decode", 100, "memory", "peak_rss_bytes",
                            (json_int_t)3000000000LL, "itl", "p50", 1.0 / decode, "p99", 1.2 / decode, "config",
                            "routing", routing, "threads", 4);
    return json_pack("{s:s, s:i, s:s, s:n, s:o, s:{s:[], s:n}, s:{s:[f,f,f], s:s}}", "configuration", "predicted",
                     "index", k, "status", "ok", "reason", "row", row, "conditions", "warnings", "refused",
                     "before", "load_avg", 0.1, 0.1, 0.1, "kernel", "Linux test");
}

/* A report like `sweep` writes, with the summaries computed as sweep does (median/min/max). */
static void write_report(const char *name, const variant *v) {
    json_t *procs = json_array();
    double mn = 1e9, mx = 0;
    for (int k = 0; k < 3; k++) {
        json_array_append_new(procs, process(k + 1, v->decode[k], v->routing));
        if (v->decode[k] < mn) mn = v->decode[k];
        if (v->decode[k] > mx) mx = v->decode[k];
    }
    double s[3] = {v->decode[0], v->decode[1], v->decode[2]};
    double med = s[0] + s[1] + s[2] - mn - mx;
    json_t *metrics = json_pack("{s:{s:i, s:f, s:f, s:f, s:s}, s:s, s:{s:i, s:f, s:f, s:f, s:s}}",
                                "decode_tokens_per_second", "n", 3, "median", med, "min", mn, "max", mx, "unit",
                                "tokens/s", "prefill_seconds", "unavailable: not in this fixture",
                                "memory.peak_rss_bytes", "n", 3, "median", 36677600.0, "min", 36677600.0, "max",
                                36677600.0, "unit", "bytes");
    json_t *cfg = json_pack("{s:s, s:[], s:{s:s, s:i}, s:b, s:i, s:i, s:i, s:o, s:o}", "name", "predicted", "args",
                            "effective_config", "routing", v->routing, "threads", 4, "effective_config_consistent",
                            1, "ok", 3, "failed", 0, "refused", 0, "processes", procs, "metrics", metrics);
    json_t *r = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s, s:i, s:i, s:i, s:f, s:[s], s:[]},"
                          " s:{s:s, s:i, s:i, s:I, s:s}, s:{s:s, s:s, s:s, s:s, s:{s:s, s:b}}, s:[o], s:[]}",
                          "format", "edge0-bench-report/1", "created_utc", "2026-11-29T12:00:00Z", "harness",
                          "git_commit", "h", "protocol", "prompt", "medium", "prompt_file",
                          "library-report-prompt-head.txt", "prompt_sha256", "00", "warmup", 10, "ntok", 100, "runs",
                          v->runs, "cooldown_seconds", 30.0, "configs", "predicted", "options", "device",
                          "cpu_model", v->cpu, "logical_cores", 8, "physical_cores", 4, "memory_total_bytes",
                          (json_int_t)16000000000LL, "machine", "x86_64", "identity", "cli", "build/bin/edge0-infer",
                          "cli_sha256", "aa", "model_path", "m.gguf", "model_sha256", v->model_sha, "engine",
                          "git_commit", "c1", "git_dirty", 0, "configurations", cfg, "warnings");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECKF(r && json_dump_file(r, path, JSON_INDENT(1)) == 0, "writing %s", path);
    json_decref(r);
}

static const variant BASE = {3, "Test CPU", "predicted", "m1", {20.0, 20.5, 21.0}};

static int compare(const char *name, char **out, char **err) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' report compare '%s/%s' --baseline '%s/base.json'", bench_bin(), dir, name, dir);
    return run(cmd, out, err);
}

static void test_render(void) {
    write_report("base.json", &BASE);
    char cmd[1024], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' report render '%s/base.json'", bench_bin(), dir);
    CHECK(run(cmd, &out, &err) == 0);
    CHECKF(strstr(out, "| Configuration | First token | Prefill | Decode |") != NULL, "%s", out);
    CHECKF(strstr(out, "20.0 to 21.0 tokens/s (median 20.5)") != NULL, "%s", out);
    CHECK(strstr(out, "Test CPU") != NULL);
    CHECK(strstr(out, "unavailable: not in this fixture") != NULL);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' report render '%s/missing.json'", bench_bin(), dir);
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "missing.json") != NULL);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "echo '{\"format\":\"other\"}' > '%s/other.json' && '%s' report render '%s/other.json'",
             dir, bench_bin(), dir);
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "not an edge0-bench report") != NULL);
    free(out), free(err);
}

static void test_compare_accepts_matching(void) {
    write_report("base.json", &BASE);
    variant same = BASE;
    same.decode[0] = 20.2, same.decode[1] = 20.4, same.decode[2] = 20.9;
    write_report("same.json", &same);
    char *out, *err;
    CHECKF(compare("same.json", &out, &err) == 0, "%s", err);
    CHECKF(strstr(out, "decode_tokens_per_second") && strstr(out, "within the noise"), "%s", out);
    CHECKF(strstr(out, "[20.0 tokens/s to 21.0 tokens/s]") != NULL, "%s", out); /* the baseline's range */
    /* sizes in units, not 3.66776e+07 bytes */
    CHECKF(strstr(out, "34.98 MiB [34.98 MiB to 34.98 MiB]") && !strstr(out, "e+07"), "%s", out);
    free(out), free(err);
    variant faster = BASE;
    faster.decode[0] = 23.0, faster.decode[1] = 23.5, faster.decode[2] = 24.0;
    write_report("faster.json", &faster);
    CHECK(compare("faster.json", &out, &err) == 0);
    CHECKF(strstr(out, "better, beyond the noise") != NULL, "%s", out);
    CHECK(strstr(out, "+14.6%") != NULL); /* 23.5 vs 20.5 */
    free(out), free(err);
}

/* Worse beyond the noise: exit 2 (documented); a tiny change with tight, non-overlapping ranges
 * is within the noise (not "worse"); a report compared with itself is "no change", also when
 * one of its configurations has no successful process. */
static void test_compare_noise_and_exit(void) {
    write_report("base.json", &BASE);
    variant slower = BASE;
    slower.decode[0] = 17.0, slower.decode[1] = 17.5, slower.decode[2] = 18.0;
    write_report("slower.json", &slower);
    char *out, *err;
    int rc = compare("slower.json", &out, &err);
    CHECKF(rc == 2 && strstr(out, "WORSE, beyond the noise"), "rc %d: %s%s", rc, out, err);
    free(out), free(err);
    /* +0.1%: 20.0/20.0/20.0 vs 20.02/20.02/20.02 (the ranges do not overlap) */
    variant tight = BASE, tight2 = BASE;
    tight.decode[0] = tight.decode[1] = tight.decode[2] = 20.0;
    tight2.decode[0] = tight2.decode[1] = tight2.decode[2] = 19.98;
    write_report("base.json", &tight);
    write_report("tight.json", &tight2);
    rc = compare("tight.json", &out, &err);
    CHECKF(rc == 0 && strstr(out, "-0.1%: within the noise") && !strstr(out, "WORSE"), "rc %d: %s%s", rc, out, err);
    free(out), free(err);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' report compare '%s/tight.json' --baseline '%s/tight.json' --threshold 0", bench_bin(), dir, dir);
    rc = run(cmd, &out, &err);
    CHECKF(rc == 0 && strstr(out, "no change"), "rc %d: %s%s", rc, out, err);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' report compare '%s/tight.json' --baseline '%s/base.json' --threshold 0", bench_bin(), dir, dir);
    rc = run(cmd, &out, &err);
    CHECKF(rc == 2 && strstr(out, "WORSE"), "--threshold 0: rc %d: %s%s", rc, out, err);
    free(out), free(err);
    /* itself, with a configuration that never succeeded (no effective configuration) */
    snprintf(cmd, sizeof cmd,
             "sed 's/\"effective_config\": {/\"effective_config\": \"unavailable: no successful process\", \"x\": {/' '%s/tight.json' > '%s/failed.json'"
             " && '%s' report compare '%s/failed.json' --baseline '%s/failed.json'", dir, dir, bench_bin(), dir, dir);
    rc = run(cmd, &out, &err);
    CHECKF(rc == 0 && strstr(out, "no change"), "rc %d: %s%s", rc, out, err);
    free(out), free(err);
}

static void expect_refusal(const char *name, const variant *v, const char *why) {
    write_report("base.json", &BASE);
    write_report(name, v);
    char *out, *err;
    CHECKF(compare(name, &out, &err) == 1, "%s should be refused", name);
    CHECKF(strstr(err, "refusing to compare") && strstr(err, why), "%s: stderr: %s", name, err);
    CHECK(out[0] == 0);
    free(out), free(err);
}

static void test_compare_refuses(void) {
    variant v = BASE;
    v.runs = 5;
    expect_refusal("protocol.json", &v, "the protocol differs: runs is 5 here and 3 in the baseline");
    v = BASE;
    v.cpu = "Other CPU";
    expect_refusal("device.json", &v, "the device differs: cpu_model");
    v = BASE;
    v.routing = "actual";
    expect_refusal("config.json", &v, "the effective configuration of predicted differs: routing");
    v = BASE;
    v.model_sha = "m2";
    expect_refusal("model.json", &v, "the model differs");
    char cmd[1024], *out, *err;
    snprintf(cmd, sizeof cmd, "'%s' report compare '%s/base.json'", bench_bin(), dir);
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "--baseline") != NULL);
    free(out), free(err);
}

static void test_ab(void) {
    char cmd[2048], *out, *err;
    /* B is faster in every pair: a verdict. */
    snprintf(cmd, sizeof cmd,
             "'%s' ab --runs 3 --a 'echo \"{\\\"decode_tokens_per_second\\\": 10}\"' "
             "--b 'echo noise; echo \"{\\\"decode_tokens_per_second\\\": 12}\"' --json '%s/ab.json'",
             bench_bin(), dir);
    CHECKF(run(cmd, &out, &err) == 0, "%s", err);
    CHECKF(strstr(out, "median 1.2000") && strstr(out, "verdict: B's decode_tokens_per_second is higher"), "%s", out);
    free(out), free(err);
    char path[400];
    snprintf(path, sizeof path, "%s/ab.json", dir);
    json_t *j = json_load_file(path, 0, NULL);
    CHECK(j && json_array_size(json_object_get(j, "pairs")) == 3);
    json_decref(j);
    /* Two pairs are not enough for a verdict. */
    snprintf(cmd, sizeof cmd,
             "'%s' ab --runs 2 --a 'echo \"{\\\"decode_tokens_per_second\\\": 10}\"' "
             "--b 'echo \"{\\\"decode_tokens_per_second\\\": 12}\"'", bench_bin());
    CHECK(run(cmd, &out, &err) == 0 && strstr(out, "verdict: none: 2 pair(s)") != NULL);
    free(out), free(err);
    /* Ratios on both sides of 1: no verdict. B alternates 9 / 11 using a counter file. */
    snprintf(cmd, sizeof cmd,
             "rm -f '%s/n'; '%s' ab --runs 4 --metric itl.p50 --a 'echo \"{\\\"itl\\\": {\\\"p50\\\": 10}}\"' "
             "--b 'echo x >> \"%s/n\"; n=$(wc -l < \"%s/n\"); echo \"{\\\"itl\\\": {\\\"p50\\\": $((8 + n %% 2 * 3))}}\"'",
             dir, bench_bin(), dir, dir);
    CHECK(run(cmd, &out, &err) == 0);
    CHECKF(strstr(out, "verdict: none: the ratios range from 0.8000 to 1.1000") != NULL, "%s", out);
    free(out), free(err);
    /* A failing side skips its pair; no pair at all is exit 1. */
    snprintf(cmd, sizeof cmd, "'%s' ab --runs 2 --a 'exit 3' --b 'echo {}'", bench_bin());
    CHECK(run(cmd, &out, &err) == 1 && strstr(out, "A failed: exit status 3") != NULL);
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' ab --a x --runs 2", bench_bin());
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "needs --a, --b and --runs") != NULL);
    free(out), free(err);
}

static void test_help_and_errors(void) {
    static const char *sub[] = {"sweep --help", "report --help", "ab --help", "--help"};
    char cmd[1024], *out, *err;
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        snprintf(cmd, sizeof cmd, "'%s' %s", bench_bin(), sub[i]);
        CHECKF(run(cmd, &out, &err) == 0 && strstr(out, "usage: edge0-bench"), "%s", sub[i]);
        free(out), free(err);
    }
    snprintf(cmd, sizeof cmd, "'%s' sweep --cli /bin/true --model /nonexistent --out '%s/x'", bench_bin(), dir);
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "edge0-bench: ") && strstr(err, "/nonexistent"));
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' sweep --cli /bin/true --model x --out y --configs fast", bench_bin());
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "unknown configuration 'fast'"));
    free(out), free(err);
    snprintf(cmd, sizeof cmd, "'%s' sweep --cli /bin/true --model x --out y --runs 0", bench_bin());
    CHECK(run(cmd, &out, &err) == 1 && strstr(err, "--runs"));
    free(out), free(err);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/e0-test-report-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    RUN(test_render);
    RUN(test_compare_accepts_matching);
    RUN(test_compare_refuses);
    RUN(test_compare_noise_and_exit);
    RUN(test_ab);
    RUN(test_help_and_errors);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    return T_DONE();
}
