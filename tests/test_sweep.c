/* test_sweep.c — end to end: `edge0-bench sweep` with 2 runs and a 1 s cool-down drives the real
 * `edge0-infer bench` on a small model (env E0_SWEEP_MODEL, default a small synth qwen3moe with a
 * chat template, written into the build dir; the one-sentence prompt with a few decode steps),
 * then checks report.json / report.md / report.svg and their fields, and that `report compare`
 * accepts the report against itself and refuses a copy whose protocol differs.
 * Needs the engine's `bench` command: it fails until that exists. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "measure/sysinfo.h"
#include "t.h"

static char dir[256];

static int sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *name) {
    char p[512];
    e0_err e;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return e0_read_text(p, 1 << 24, &e);
}

static int positive(const json_t *row, const char *key) {
    json_t *v = json_object_get(row, key);
    return json_is_number(v) && json_number_value(v) > 0;
}

static void test_sweep_end_to_end(void) {
    char model[512], cmd[4096];
    const char *env = getenv("E0_SWEEP_MODEL");
    snprintf(model, sizeof model, "%s", env ? env : "");
    if (!env) {
        snprintf(model, sizeof model, "%s/sweep-model.gguf", dir);
        snprintf(cmd, sizeof cmd, "'%s/bin/edge0-infer' synth --arch qwen3moe --n-layer 2 --seed 5 --out '%s' "
                 "--chat-template-file tools/demo-template.jinja > /dev/null 2>&1", t_build(), model);
        CHECKF(sh(cmd) == 0, "synth failed: %s", cmd);
    }
    snprintf(cmd, sizeof cmd,
             "'%s/bin/edge0-bench' sweep --cli '%s/bin/edge0-infer' --model '%s' --configs predicted --prompt short "
             "--warmup 2 --ntok 24 --runs 2 --cooldown 1 --out '%s/out' --raw 2> '%s/sweep.err'",
             t_build(), t_build(), model, dir, dir);
    int rc = sh(cmd);
    char *log = slurp("sweep.err");
    CHECKF(rc == 0, "sweep exit %d; stderr:\n%s", rc, log ? log : "");
    CHECK(log && strstr(log, "predicted 2/2") != NULL); /* progress lines */
    free(log);

    char path[512];
    snprintf(path, sizeof path, "%s/out/report.json", dir);
    json_error_t je;
    json_t *r = json_load_file(path, 0, &je);
    CHECKF(r != NULL, "report.json: %s", je.text);
    if (!r) return;
    CHECK(!strcmp(json_string_value(json_object_get(r, "format")), "edge0-bench-report/1"));
    json_t *proto = json_object_get(r, "protocol");
    CHECK(json_integer_value(json_object_get(proto, "runs")) == 2);
    CHECK(json_number_value(json_object_get(proto, "cooldown_seconds")) == 1.0);
    CHECK(!strcmp(json_string_value(json_object_get(proto, "prompt_file")), "short-story-prompt.txt"));
    json_t *id = json_object_get(r, "identity");
    CHECK(json_string_length(json_object_get(id, "model_sha256")) == 64);
    json_t *eng = json_object_get(id, "engine");
    CHECK(json_is_object(eng) && json_object_get(eng, "git_commit") && json_object_get(eng, "binary_sha256"));
    CHECK(json_is_object(json_object_get(id, "model")));
    json_t *dev = json_object_get(r, "device");
    CHECK(json_object_get(dev, "cpu_model") && json_object_get(dev, "logical_cores"));

    json_t *cfg = json_array_get(json_object_get(r, "configurations"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(cfg, "name")), "predicted"));
    CHECK(json_is_object(json_object_get(cfg, "effective_config")));
    json_t *procs = json_object_get(cfg, "processes");
    CHECK(json_array_size(procs) == 2);
    size_t i;
    json_t *p;
    json_array_foreach(procs, i, p) {
        CHECKF(!strcmp(json_string_value(json_object_get(p, "status")), "ok"), "process %zu: %s", i,
               json_string_value(json_object_get(p, "reason")));
        json_t *row = json_object_get(p, "row");
        CHECK(positive(row, "prefill_seconds") && positive(row, "decode_tokens_per_second"));
        CHECK(positive(row, "prefill_tokens_per_second"));
        CHECK(json_integer_value(json_object_get(row, "n_decode")) == 24);
        CHECK(json_integer_value(json_object_get(row, "n_prompt")) > 0);
        json_t *mem = json_object_get(row, "memory");
        CHECK(json_is_integer(json_object_get(mem, "peak_rss_bytes")));
        CHECK(e0_is_unavailable(json_object_get(mem, "pss_peak")));
        CHECK(json_is_object(json_object_get(row, "itl")));
        CHECK(json_object_get(row, "energy") && json_object_get(row, "system") && json_object_get(row, "config"));
        CHECK(json_is_object(json_object_get(p, "before")) && json_is_object(json_object_get(p, "after")));
        CHECK(json_is_array(json_object_get(json_object_get(p, "conditions"), "warnings")));
    }
    json_t *dec = json_object_get(json_object_get(cfg, "metrics"), "decode_tokens_per_second");
    double mn = json_number_value(json_object_get(dec, "min")), mx = json_number_value(json_object_get(dec, "max"));
    double md = json_number_value(json_object_get(dec, "median"));
    CHECK(json_integer_value(json_object_get(dec, "n")) == 2 && mn > 0 && mn <= md && md <= mx);
    json_decref(r);

    char *md_text = slurp("out/report.md"), *svg = slurp("out/report.svg");
    CHECK(md_text && strstr(md_text, "| `predicted` |") && strstr(md_text, "tokens/s"));
    CHECK(svg && !strncmp(svg, "<?xml", 5) && strstr(svg, "<svg") && strstr(svg, "<circle") && strstr(svg, "</svg>"));
    free(md_text);
    free(svg);
    char *raw = slurp("out/raw/predicted-1.stdout");
    CHECK(raw && strchr(raw, '{'));
    free(raw);

    /* The report compares with itself, and refuses a copy run with another protocol. */
    snprintf(cmd, sizeof cmd, "'%s/bin/edge0-bench' report compare '%s/out/report.json' --baseline '%s/out/report.json' > /dev/null",
             t_build(), dir, dir);
    CHECK(sh(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "sed 's/\"ntok\": 24/\"ntok\": 25/' '%s/out/report.json' > '%s/other.json' && "
             "'%s/bin/edge0-bench' report compare '%s/other.json' --baseline '%s/out/report.json' 2> '%s/cmp.err'",
             dir, dir, t_build(), dir, dir, dir);
    CHECK(sh(cmd) == 1);
    char *cmp = slurp("cmp.err");
    CHECKF(cmp && strstr(cmp, "protocol differs: ntok"), "%s", cmp ? cmp : "");
    free(cmp);

    /* --configs all on a model that fits in memory: actual and direct have predicted's effective
     * configuration (experts resident): measured once each and marked, not three configurations.
     * ctx16384 on a 2048-context model: left out up front (all), refused with one line (alone). */
    snprintf(cmd, sizeof cmd, "'%s/bin/edge0-infer' info -m '%s' | grep -q 'context length:  2048$'", t_build(), model);
    if (sh(cmd) != 0) {
        t_skip("the sweep model's context is not 2048 (E0_SWEEP_MODEL)");
        return;
    }
    snprintf(cmd, sizeof cmd,
             "'%s/bin/edge0-bench' sweep --cli '%s/bin/edge0-infer' --model '%s' --configs all --prompt short "
             "--warmup 0 --ntok 4 --runs 2 --cooldown 0 --out '%s/all' 2> '%s/all.err'", t_build(), t_build(), model, dir, dir);
    rc = sh(cmd);
    log = slurp("all.err");
    CHECKF(rc == 0, "sweep --configs all: exit %d\n%s", rc, log ? log : "");
    CHECKF(log && !strstr(log, "ctx16384 1/") && strstr(log, "ctx16384 left out"), "%s", log ? log : "");
    free(log);
    snprintf(path, sizeof path, "%s/all/report.json", dir);
    r = json_load_file(path, 0, &je);
    CHECKF(r != NULL, "report.json: %s", je.text);
    if (!r) return;
    json_t *cfgs = json_object_get(r, "configurations");
    CHECKF(json_array_size(cfgs) == 3, "%zu configurations", json_array_size(cfgs));
    json_array_foreach(cfgs, i, p) {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *same = json_string_value(json_object_get(p, "same_as"));
        size_t n = json_array_size(json_object_get(p, "processes"));
        if (name && !strcmp(name, "predicted")) CHECKF(!same && n == 2, "predicted: %zu processes", n);
        else CHECKF(same && !strcmp(same, "predicted") && n == 1, "%s: same_as %s, %zu processes", name, same ? same : "null", n);
    }
    char *w = json_dumps(json_object_get(r, "warnings"), 0);
    CHECKF(w && strstr(w, "configuration actual: its effective configuration is the same as predicted's"), "%s", w ? w : "");
    free(w);
    json_decref(r);
    snprintf(cmd, sizeof cmd,
             "'%s/bin/edge0-bench' sweep --cli '%s/bin/edge0-infer' --model '%s' --configs ctx16384 --prompt short "
             "--warmup 0 --ntok 4 --runs 2 --cooldown 0 --out '%s/ctx' 2> '%s/ctx.err'", t_build(), t_build(), model, dir, dir);
    rc = sh(cmd);
    log = slurp("ctx.err");
    CHECKF(rc == 1 && log && strstr(log, "context is 2048 tokens, less than 16384") && !strstr(log, "running") &&
               !strchr(strchr(log, '\n') ? strchr(log, '\n') + 1 : "", '\n'),
           "exit %d: %s", rc, log ? log : "");
    free(log);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/e0-test-sweep-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    RUN(test_sweep_end_to_end);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    return T_DONE();
}
