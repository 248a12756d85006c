/* test_cgroup.c — a Qwen3-30B-A3B-shape model (2 of its 48 layers, full-size experts, vocabulary
 * cut to 8000, Q4_K: ~720 MB) runs to completion inside a memory cgroup (v1, page cache included)
 * limited to a quarter of the file's size, in both routing modes, with its peak RSS under the
 * limit: the dense weights stay resident and the experts stream through the slot cache the budget
 * allows. Needs root and the cgroup v1 memory controller (as on this project's machines). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

static char model[600], cg[256];
static long long limit;

static void run_capped(const char *routing) {
    char cmd[4096], *out = malloc(1 << 20);
    snprintf(cmd, sizeof cmd,
             "sh -c 'echo $$ > %s/cgroup.procs && exec %s/bin/edge0-infer bench --model %s --prompt short --raw "
             "--warmup 2 --ntok 16 --model-option routing=%s' 2>%s/cgroup-%s.stderr",
             cg, t_build(), model, routing, t_build(), routing);
    int rc = t_sh(cmd, out, 1 << 20);
    CHECKF(rc == 0, "routing=%s under a %lld-byte cgroup exited %d (stderr in %s/cgroup-%s.stderr)", routing, limit, rc,
           t_build(), routing);
    json_error_t je;
    json_t *row = json_loads(out, JSON_DISABLE_EOF_CHECK, &je);
    CHECKF(row != NULL, "no JSON row: %s", je.text);
    if (row) {
        json_t *mem = json_object_get(row, "memory"), *io = json_object_get(row, "io"), *cfg = json_object_get(row, "config");
        long long peak = json_integer_value(json_object_get(mem, "peak_rss_bytes"));
        json_t *cgj = json_object_get(mem, "cgroup");
        long long cg_peak = json_integer_value(json_object_get(cgj, "peak_bytes"));
        CHECKF(peak > 0 && peak < limit, "peak RSS %lld not under the limit %lld", peak, limit);
        CHECKF(!strcmp(json_string_value(json_object_get(cfg, "experts")), "stream"), "experts must stream");
        CHECKF(!strcmp(json_string_value(json_object_get(cfg, "routing")), routing), "routing");
        CHECKF(json_integer_value(json_object_get(io, "bytes_read")) > 0, "experts were read from the file");
        CHECKF(json_integer_value(json_object_get(row, "n_decode")) == 16, "16 decode steps");
        /* memory budget honesty: every buffer the engine allocated fits the budget it derived */
        long long ledger = json_integer_value(json_object_get(json_object_get(mem, "ledger_peak_bytes"), "total"));
        long long budget = json_integer_value(json_object_get(json_object_get(row, "memory_budget"), "bytes"));
        CHECKF(ledger > 0 && budget > 0 && ledger <= budget, "ledger peak %lld above the memory budget %lld", ledger, budget);
        printf("  routing=%s: limit %.0f MiB, peak RSS %.0f MiB, cgroup peak %.0f MiB, %lld slots, decode %.2f tok/s, "
               "%.1f MB read per token, cache hit rate %s\n",
               routing, limit / 1048576.0, peak / 1048576.0, cg_peak / 1048576.0,
               (long long)json_integer_value(json_object_get(cfg, "expert_slots")),
               json_real_value(json_object_get(row, "decode_tokens_per_second")),
               json_real_value(json_object_get(io, "bytes_read_per_token")) / 1e6,
               json_is_real(json_object_get(io, "cache_hit_rate")) ? "measured" : "n/a");
        json_decref(row);
    }
    free(out);
}

int main(void) {
    char cmd[2048];
    t_begin("cgroup v1 memory controller available");
    int have = access("/sys/fs/cgroup/memory/cgroup.procs", W_OK) == 0;
    CHECKF(have, "this test needs root and the cgroup v1 memory controller at /sys/fs/cgroup/memory");
    t_end();
    if (!have) return T_DONE();

    t_begin("synth Qwen3-30B-A3B-shape model (2 layers)");
    /* cached across builds (the ASan suite uses the same file): build/test-models/ */
    snprintf(model, sizeof model, "build/test-models/qwen3-30b-a3b-2l-v8k-q4k.gguf");
    snprintf(cmd, sizeof cmd, "mkdir -p build/test-models && { test -f %s || %s/bin/edge0-infer synth --arch qwen3moe "
             "--shape qwen3-30b-a3b --n-layer 2 --n-vocab 8000 --type q4_k --out %s >/dev/null; }",
             model, t_build(), model);
    CHECK(system(cmd) == 0);
    struct stat st;
    CHECK(stat(model, &st) == 0);
    t_end();
    limit = (long long)st.st_size / 4;

    snprintf(cg, sizeof cg, "/sys/fs/cgroup/memory/e0-test-%d", (int)getpid());
    t_begin("create the cgroup");
    CHECK(mkdir(cg, 0755) == 0);
    snprintf(cmd, sizeof cmd, "echo %lld > %s/memory.limit_in_bytes", limit, cg);
    CHECK(system(cmd) == 0);
    t_end();

    t_begin("routing=actual under a quarter of the file size");
    run_capped("actual");
    t_end();
    t_begin("routing=predicted under a quarter of the file size");
    run_capped("predicted");
    t_end();
    rmdir(cg);
    return T_DONE();
}
