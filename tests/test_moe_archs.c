/* test_moe_archs.c — the MoE families beside qwen*moe / gpt-oss / deepseek2 (olmoe, granitemoe,
 * glm4moe) without llama.cpp (their differential test is test_llamacpp.c's synth/olmoe-*,
 * granitemoe-*, glm4moe-* cases): for a synth q8_0 model of each,
 *  - `info` names the architecture;
 *  - routed experts streamed through the expert cache with routing=actual give logits of a
 *    batched prefill and greedy ids of a decode byte-identical to experts=resident, for
 *    expert_slots = n_expert_used and more, expert_read cached and direct;
 *  - routing=predicted runs and decodes the asked number of ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

static const struct {
    const char *name, *args;
    int n_used;
} models[] = {
    {"olmoe", "--arch olmoe --n-expert 8 --n-expert-used 2", 2},
    {"granitemoe", "--arch granitemoe --n-expert 8 --n-expert-used 3", 3},
    {"glm4moe", "--arch glm4moe --n-layer 3 --mtp", 2},
    {"minimax-m2", "--arch minimax-m2 --n-expert 8 --n-expert-used 2", 2},
};

static int files_equal(const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static int count_ids(const char *s) {
    int n = 0;
    for (;;) {
        char *end;
        strtol(s, &end, 10);
        if (end == s) return n;
        n++;
        s = end;
    }
}

static void check_arch(int mi) {
    const char *B = t_build(), *name = models[mi].name;
    const char *toks = "1,17,99,200,3,45,511,260,7,8,9,10,300,301,302,44,45,46,47,1,2,3,4,5";
    const char *dec = "--tokens 1,17,99 -n 32 --temp 0 --print-ids -b 4";
    char model[512], ref[600], out[600], cmd[4096], ids_ref[8192], ids[8192];
    snprintf(model, sizeof model, "%s/moe-archs-%s.gguf", B, name);
    snprintf(ref, sizeof ref, "%s/moe-archs-%s-ref.bin", B, name);
    snprintf(out, sizeof out, "%s/moe-archs-%s-out.bin", B, name);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth %s --type q8_0 --seed 11 --out '%s' >/dev/null 2>&1", B,
             models[mi].args, model);
    CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer info --model '%s'", B, model);
    char info[16384];
    CHECKF(t_sh(cmd, info, sizeof info) == 0, "%s", cmd);
    char want[128];
    snprintf(want, sizeof want, "architecture:    %s\n", name);
    CHECKF(strstr(info, want), "%s: info says:\n%s", name, info);

    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' -b 7 --model-option experts=resident",
             B, model, toks, ref);
    CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=resident", B, model, dec);
    CHECKF(t_sh(cmd, ids_ref, sizeof ids_ref) == 0, "%s", cmd);
    const int slots[] = {models[mi].n_used, models[mi].n_used + 1, 8};
    const char *reads[] = {"cached", "direct"};
    for (int si = 0; si < 3; si++)
        for (int ri = 0; ri < 2; ri++) {
            char opts[256];
            snprintf(opts, sizeof opts, "--model-option experts=stream --model-option expert_slots=%d "
                     "--model-option expert_read=%s --model-option routing=actual", slots[si], reads[ri]);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' -b 7 %s", B, model, toks,
                     out, opts);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "%s: logits differ from resident with %s", name, opts);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s %s", B, model, dec, opts);
            CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
            CHECKF(!strcmp(ids, ids_ref), "%s: greedy ids differ from resident with %s:\n%s\n%s", name, opts, ids, ids_ref);
        }
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=stream --model-option expert_slots=%d "
             "--model-option routing=predicted", B, model, dec, models[mi].n_used + 1);
    CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
    CHECKF(count_ids(ids) == 32, "%s: routing=predicted printed %d ids: %s", name, count_ids(ids), ids);
    unlink(model);
    unlink(ref);
    unlink(out);
}

int main(void) {
    for (int mi = 0; mi < (int)(sizeof models / sizeof models[0]); mi++) {
        char label[128];
        snprintf(label, sizeof label, "%s: info, streamed experts identical to resident", models[mi].name);
        t_begin(label);
        check_arch(mi);
        t_end();
    }
    return T_DONE();
}
