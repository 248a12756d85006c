/* test_streaming_types.c — routed experts of the newer tensor types (IQ4_NL, IQ4_XS, MXFP4, NVFP4,
 * TQ1_0, TQ2_0, Q1_0, Q2_0) streamed through the expert cache: with routing=actual, the logits of
 * a batched prefill and the greedy ids of a decode are byte-identical to experts=resident, for
 * expert_slots = n_expert_used and one more, expert_read cached and direct (O_DIRECT into the
 * slots). Every model's expert size is not a multiple of the 4096-byte page (checked), so the
 * direct reads start and end inside pages. Models are `edge0-infer synth` qwen3moe files (8
 * experts, 2 used) in each type, through the CLI as users run it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "t.h"

static const char *const types[] = {"iq4_nl", "iq4_xs", "mxfp4", "nvfp4", "tq1_0", "tq2_0", "q1_0", "q2_0"};

static int files_equal(const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* Bytes of one expert's slice of blk.0.ffn_gate_exps (0 if not found). */
static uint64_t expert_bytes(const char *path) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    if (!f) return 0;
    const gguf_tensor *t = gguf_find_tensor(f, "blk.0.ffn_gate_exps.weight");
    uint64_t n = t && t->n_dims == 3 && t->ne[2] ? t->nbytes / t->ne[2] : 0;
    gguf_close(f);
    return n;
}

static void check_type(const char *type) {
    const char *B = t_build();
    char model[512], ref[600], out[600], cmd[4096], ids_ref[8192], ids[8192];
    snprintf(model, sizeof model, "%s/stream-%s.gguf", B, type);
    snprintf(ref, sizeof ref, "%s/stream-%s-ref.bin", B, type);
    snprintf(out, sizeof out, "%s/stream-%s-out.bin", B, type);
    /* experts n_ff_exp wide: 320 (five 64-element blocks) unless the type's block is 128 or 256 */
    const int uses_256 = !strcmp(type, "iq4_xs") || !strncmp(type, "tq", 2) || !strcmp(type, "q1_0");
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen3moe --type %s --n-ff-exp %d --seed 5 --out '%s' >/dev/null 2>&1",
             B, type, uses_256 ? 256 : 320, model);
    CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
    const uint64_t eb = expert_bytes(model);
    CHECKF(eb > 0 && eb % 4096 != 0, "%s: expert slice of %llu bytes (want a size that is not a page multiple)", type,
           (unsigned long long)eb);
    const char *tokens = "1,17,99,200,3,45,511,260,7,8,9,10,300,301,302,44,45,46,47,1,2,3,4,5,6,100,101,102,103,104,105";
    const char *dec = "--tokens 1,17,99 -n 32 --temp 0 --print-ids";
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' --model-option experts=resident", B, model,
             tokens, ref);
    CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=resident", B, model, dec);
    CHECKF(t_sh(cmd, ids_ref, sizeof ids_ref) == 0, "%s", cmd);
    static const int slots[] = {2, 3};
    static const char *const reads[] = {"cached", "direct"};
    for (int si = 0; si < 2; si++)
        for (int ri = 0; ri < 2; ri++) {
            char opts[256];
            snprintf(opts, sizeof opts, "--model-option experts=stream --model-option expert_slots=%d --model-option expert_read=%s "
                     "--model-option routing=actual%s", slots[si], reads[ri], si == 0 && ri == 1 ? " --model-option prefetch=on" : "");
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' %s", B, model, tokens, out, opts);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "%s: logits differ from resident with %s", type, opts);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s %s", B, model, dec, opts);
            CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
            CHECKF(!strcmp(ids, ids_ref), "%s: greedy ids differ from resident with %s:\n%s\n%s", type, opts, ids, ids_ref);
        }
    printf("  %s: experts of %llu bytes, streamed == resident\n", type, (unsigned long long)eb);
    unlink(model);
    unlink(ref);
    unlink(out);
}

static void test_actual_identical_new_types(void) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i]);
}

int main(void) {
    RUN(test_actual_identical_new_types);
    return T_DONE();
}
