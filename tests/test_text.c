/* test_text.c — text in, text out through the CLI: `run` streams exactly the detokenized greedy
 * continuation, and `chat` holds a two-turn conversation through a pipe, reusing its KV cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "t.h"

static void test_run_text_matches_ids(void) {
    const char *B = t_build();
    char model[512], cmd[140000], ids[4096], gen[65536], text[65536], direct[65536];
    snprintf(model, sizeof model, "%s/golden/stories260K.gguf", t_shared());
    snprintf(cmd, sizeof cmd, "printf 'Once upon a time' | %s/bin/edge0-infer tokenize --model %s", B, model);
    CHECK(t_sh(cmd, ids, sizeof ids) == 0);
    for (char *p = ids; *p; p++)
        if (*p == ' ') *p = ',';
        else if (*p == '\n') *p = 0;
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model %s --tokens %s -n 60 --temp 0 --print-ids", B, model, ids);
    CHECK(t_sh(cmd, gen, sizeof gen) == 0);
    for (char *p = gen; *p; p++)
        if (*p == ' ') *p = ',';
        else if (*p == '\n') *p = 0;
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer detokenize --model %s --ids %s", B, model, gen);
    CHECK(t_sh(cmd, text, sizeof text) == 0);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run -m %s -p 'Once upon a time' --raw --temp 0 -n 60 2>/dev/null", B, model);
    CHECK(t_sh(cmd, direct, sizeof direct) == 0);
    CHECKF(strlen(text) > 100, "continuation too short: '%s'", text);
    CHECKF(!strcmp(text, direct), "run printed\n'%s'\nbut the detokenized greedy ids are\n'%s'", direct, text);
}

static void test_run_stop_and_sampling(void) {
    const char *B = t_build();
    char model[512], cmd[4096], a[65536], b[65536];
    snprintf(model, sizeof model, "%s/golden/stories260K.gguf", t_shared());
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run -m %s -p 'Once upon a time' --raw -n 40 -s 7 2>/dev/null", B, model);
    CHECK(t_sh(cmd, a, sizeof a) == 0);
    CHECK(t_sh(cmd, b, sizeof b) == 0);
    CHECKF(!strcmp(a, b) && strlen(a) > 20, "same seed must give the same text");
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run -m %s -p 'Once upon a time' --raw --temp 0 -n 60 --stop Lily 2>/dev/null", B, model);
    CHECK(t_sh(cmd, a, sizeof a) == 0);
    CHECKF(!strcmp(a, ", there was a little girl named "), "--stop: got '%s'", a);
}

static void test_chat_two_turns_pipe(void) {
    const char *B = t_build();
    char model[512], cmd[4096], out[65536], err[700];
    snprintf(model, sizeof model, "%s/chat-test.gguf", B);
    snprintf(err, sizeof err, "%s/chat-test.stderr", B);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen3moe --out %s --seed 3 --chat-template-file %s/templates/Qwen-Qwen2.5-7B-Instruct.jinja >/dev/null 2>&1",
             B, model, t_shared());
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "printf 'hello there\\nhow are you\\n' | %s/bin/edge0-infer chat -m %s -n 8 --temp 0 --verbose 2>%s", B, model, err);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    int lines = 0;
    for (char *p = out; *p; p++) lines += *p == '\n';
    CHECKF(lines == 2, "expected two answer lines, got %d: '%s'", lines, out);
    FILE *f = fopen(err, "r");
    char l1[256] = "", l2[256] = "";
    if (f) {
        if (!fgets(l1, sizeof l1, f)) l1[0] = 0;
        if (!fgets(l2, sizeof l2, f)) l2[0] = 0;
        fclose(f);
    }
    unsigned tot1, new1, reuse1, tot2, new2, reuse2;
    CHECK(sscanf(l1, "[prompt %u tokens, %u prefilled, %u reused", &tot1, &new1, &reuse1) == 3);
    CHECK(sscanf(l2, "[prompt %u tokens, %u prefilled, %u reused", &tot2, &new2, &reuse2) == 3);
    CHECKF(reuse1 == 0 && new1 == tot1, "turn 1 starts from an empty cache");
    /* all of turn 1's prompt is reused, but for at most one token at its end, where the answer's
     * first bytes may merge with it when the whole conversation is tokenized again */
    CHECKF(reuse2 + 1 >= tot1 && new2 < tot2, "turn 2 must reuse turn 1's tokens: %s", l2);
    /* a model without a template: a clear error */
    snprintf(cmd, sizeof cmd, "printf 'hi\\n' | %s/bin/edge0-infer chat -m %s/golden/stories260K.gguf 2>&1 >/dev/null", B, t_shared());
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "chat template"), "got rc %d: %s", rc, out);
}

int main(void) {
    if (!t_need_shared("golden/stories260K.gguf", "templates/Qwen-Qwen2.5-7B-Instruct.jinja", NULL)) return T_DONE();
    RUN(test_run_text_matches_ids);
    RUN(test_run_stop_and_sampling);
    RUN(test_chat_two_turns_pipe);
    return T_DONE();
}
