/* test_bench_llama.c — `bench` with llama-bench's flags (src/cli/cmd_bench_llama.c), run on the
 * built binary with ../shared/golden models: the tests each list combination makes (pp, tg, pg,
 * depths, threads, KV types), the fields of the json/jsonl/csv outputs and the markdown table,
 * the repetition samples and their statistics, and one clear error (exit 1) for bad lists,
 * formats, all-zero tests and a context too small. Also the prompt-driven `bench` (cmd_bench.c):
 * its aggregate over --runs and its prefill progress. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "t.h"

static char bin[1024], dense[1024], moe[1024];
static char out[1 << 18];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' bench %s 2>&1", bin, args);
    return t_sh(cmd, out, sizeof out);
}

/* The json output's rows (NULL + a failed check when it does not parse). */
static json_t *rows_of(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    CHECKF(json_is_array(j), "not a JSON array: %s (%.200s)", je.text, text);
    return json_is_array(j) ? j : (json_decref(j), NULL);
}

static const char *str(json_t *row, const char *k) { return json_string_value(json_object_get(row, k)); }
static long long num(json_t *row, const char *k) { return (long long)json_integer_value(json_object_get(row, k)); }

static void test_json_rows(void) {
    CHECK(run("-m '%s' -p 16,8 -n 4 -pg 8,2 -d 0,5 -r 3 -o json", dense) == 0);
    json_t *rows = rows_of(strchr(out, '[') ? strchr(out, '[') : out);
    if (!rows) return;
    /* per depth: pp16, pp8, tg4, pp8+tg2 */
    static const char *const names[] = {"pp16", "pp8", "tg4", "pp8+tg2", "pp16 @ d5", "pp8 @ d5", "tg4 @ d5", "pp8+tg2 @ d5"};
    CHECKF(json_array_size(rows) == 8, "%zu rows", json_array_size(rows));
    for (size_t i = 0; i < json_array_size(rows) && i < 8; i++) {
        json_t *r = json_array_get(rows, i);
        CHECKF(str(r, "test") && !strcmp(str(r, "test"), names[i]), "row %zu is '%s', expected '%s'", i, str(r, "test"), names[i]);
        CHECK(num(r, "n_depth") == (i < 4 ? 0 : 5));
        CHECK(num(r, "repetitions") == 3);
        json_t *sts = json_object_get(r, "samples_ts"), *sns = json_object_get(r, "samples_ns");
        CHECK(json_array_size(sts) == 3 && json_array_size(sns) == 3);
        /* avg_ts is the mean of the samples; stddev their sample standard deviation */
        double mean = 0, var = 0;
        for (size_t k = 0; k < 3; k++) mean += json_real_value(json_array_get(sts, k)) / 3;
        for (size_t k = 0; k < 3; k++) var += pow(json_real_value(json_array_get(sts, k)) - mean, 2) / 2;
        double avg = json_real_value(json_object_get(r, "avg_ts")), sd = json_real_value(json_object_get(r, "stddev_ts"));
        CHECKF(avg > 0 && fabs(avg - mean) <= 1e-9 * mean, "avg_ts %g, samples' mean %g", avg, mean);
        CHECKF(fabs(sd - sqrt(var)) <= 1e-6 * (1 + sd), "stddev_ts %g, samples' %g", sd, sqrt(var));
        double lo = json_real_value(json_object_get(r, "min_ts")), hi = json_real_value(json_object_get(r, "max_ts")),
               med = json_real_value(json_object_get(r, "median_ts"));
        CHECKF(lo <= med && med <= hi && lo <= avg && avg <= hi, "min %g median %g mean %g max %g", lo, med, avg, hi);
        /* t/s of a sample = tokens / seconds */
        long long ns0 = (long long)json_integer_value(json_array_get(sns, 0));
        double ts0 = json_real_value(json_array_get(sts, 0));
        long long n_tok = num(r, "n_prompt") + num(r, "n_gen");
        CHECKF(ns0 > 0 && fabs(ts0 - n_tok / (ns0 * 1e-9)) <= 1e-3 * ts0, "sample: %lld ns, %g t/s for %lld tokens", ns0, ts0, n_tok);
        CHECK(str(r, "type_k") && !strcmp(str(r, "type_k"), "f16"));
        CHECK(str(r, "experts") && !strcmp(str(r, "experts"), "none"));
        CHECK(num(r, "model_size") > 0 && num(r, "model_n_params") > 0);
        CHECK(num(r, "n_ctx") >= 5 + 16);
    }
    json_decref(rows);
}

static void test_combinations(void) {
    CHECK(run("-m '%s' -p 8 -n 2 -t 1,2 -ctk f32,f16 -r 1 --no-warmup -o jsonl --progress", moe) == 0);
    int n = 0, t1 = 0, f32 = 0;
    for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (*line != '{') {
            CHECKF(!strncmp(line, "bench: ", 7), "unexpected line: %.120s", line); /* --progress lines */
            continue;
        }
        json_t *r = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
        CHECK(r != NULL);
        if (!r) continue;
        n++;
        t1 += num(r, "n_threads") == 1;
        f32 += !strcmp(str(r, "type_k") ? str(r, "type_k") : "", "f32");
        CHECK(str(r, "experts") && !strcmp(str(r, "experts"), "resident"));
        CHECK(json_is_false(json_object_get(r, "warmup")));
        json_decref(r);
    }
    CHECKF(n == 8 && t1 == 4 && f32 == 4, "%d rows, %d with 1 thread, %d with f32 keys", n, t1, f32);
    CHECK(strstr(out, "bench: combination 4/4, test 2/2: tg2") != NULL);
    CHECK(strstr(out, "repetition 1/1") != NULL);
}

/* Ranges as llama-bench writes them. */
static void test_ranges(void) {
    CHECK(run("-m '%s' -p 2-8*2 -n 1-3+2 -r 1 --no-warmup -o jsonl", dense) == 0);
    static const char *const names[] = {"\"pp2\"", "\"pp4\"", "\"pp8\"", "\"tg1\"", "\"tg3\""};
    const char *p = out;
    for (size_t i = 0; i < 5; i++) {
        const char *q = strstr(p, names[i]);
        CHECKF(q != NULL, "no %s in order in %.400s", names[i], out);
        if (q) p = q;
    }
    CHECK(strstr(out, "\"pp16\"") == NULL && strstr(out, "\"tg2\"") == NULL);
    CHECK(run("-m '%s' -p 8-2 -r 1", dense) == 1 && strstr(out, "goes down"));
    CHECK(run("-m '%s' -p 0-8*2 -r 1", dense) == 1);
    CHECK(run("-m '%s' -p 1-100000 -r 1", dense) == 1 && strstr(out, "at most"));
}

static void test_md_and_csv(void) {
    CHECK(run("-m '%s' -p 8 -n 2 -r 2", moe) == 0);
    CHECK(strstr(out, "| model ") == out);
    CHECK(strstr(out, "|            test |") != NULL && strstr(out, " experts  |") != NULL);
    CHECK(strstr(out, " pp8 | ") != NULL && strstr(out, " tg2 | ") != NULL && strstr(out, " ± ") != NULL);
    CHECK(run("-m '%s' -p 8 -n 0 -r 2 -o csv", dense) == 0);
    const char *hdr = "build_commit,model_filename,model_type,model_size,model_n_params,backend,n_threads,n_batch,"
                      "type_k,type_v,experts,n_prompt,n_gen,n_depth,test,test_time,repetitions,avg_ns,stddev_ns,avg_ts,stddev_ts\n";
    CHECKF(!strncmp(out, hdr, strlen(hdr)), "csv header: %.300s", out);
    const char *row = strchr(out, '\n') ? strchr(out, '\n') + 1 : "";
    int commas = 0;
    for (const char *p = row; *p && *p != '\n'; p++) commas += *p == ',';
    CHECKF(commas == 20, "%d commas in the row %.300s", commas, row);
    CHECK(strstr(row, "\"pp8\"") != NULL);
}

static void test_errors(void) {
    static const char *const bad[] = {"-p abc -r 1", "-p 8,,x -r 1", "-o xml -r 1", "-pg 8 -r 1", "-p 8 -r 0",
                                      "-t 0 -r 1", "-ctk q9_0 -r 1", "-p 0 -n 0", "-p 100000 -c 64 -r 1",
                                      "-p 8 --frobnicate"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = run("-m '%s' %s", dense, bad[i]);
        CHECKF(rc == 1, "bench %s: exit %d", bad[i], rc);
        int lines = 0;
        for (const char *p = out; *p; p++) lines += *p == '\n';
        CHECKF(lines == 1 && strstr(out, "edge0-infer: "), "bench %s: %s", bad[i], out);
    }
    CHECK(run("-p 8") == 1 && strstr(out, "--model"));
    CHECK(run("-p 8 --help") == 0 && strstr(out, "llama-bench"));
}

/* The prompt-driven bench: one JSON row per run, the medians and ranges over --runs, and prefill
 * progress lines with --progress (stderr is not a terminal here). */
static void test_prompt_bench_runs(void) {
    CHECK(run("-m '%s' --prompt short --runs 3 --ntok 4 --warmup 0 --progress -b 32", moe) == 0);
    int rows = 0, progress = 0;
    for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        rows += *line == '{';
        progress += !strncmp(line, "prefill: ", 9);
    }
    CHECKF(rows == 3 && progress >= 3, "%d rows, %d progress lines: %.600s", rows, progress, out);
    CHECK(strstr(out, "3 runs: prefill median ") != NULL && strstr(out, "decode median ") != NULL);
    CHECK(run("-m '%s' --prompt short --runs 1 --ntok 4 --warmup 0", moe) == 0);
    CHECK(strstr(out, "runs: prefill median") == NULL && strstr(out, "prefill: ") == NULL);
}

int main(void) {
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    if (!t_need_shared("golden/stories260K.gguf", "golden/qwen3moe.gguf", NULL)) return T_DONE();
    snprintf(dense, sizeof dense, "%s/golden/stories260K.gguf", t_shared());
    snprintf(moe, sizeof moe, "%s/golden/qwen3moe.gguf", t_shared());
    RUN(test_json_rows);
    RUN(test_combinations);
    RUN(test_ranges);
    RUN(test_md_and_csv);
    RUN(test_errors);
    RUN(test_prompt_bench_runs);
    return T_DONE();
}
