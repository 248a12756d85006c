/* cmd_run.c — `run`: generate from a prompt. (Token-id mode; text mode arrives with the tokenizer.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    puts("usage: edge0-infer run --model F --tokens 1,2,3 -n N [--temp 0] [--print-ids] [-t N] [-c N]\n"
         "  --tokens LIST   prompt as comma-separated token ids\n"
         "  -n N            number of tokens to generate (exactly N with --print-ids)\n"
         "  --temp T        sampling temperature (0 = greedy)\n"
         "  --print-ids     print the generated ids space-separated on one line; never stops at EOS");
}

static int argmax(const float *x, int64_t n) {
    int best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = (int)i;
    return best;
}

int cmd_run(int argc, char **argv) {
    cli_model_opts o = {0};
    const char *tokens_arg = NULL;
    int64_t n_gen = 16;
    double temp = 0.8;
    bool print_ids = false;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *a = argv[i], *v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return help(), 0;
        else if (!strcmp(a, "--tokens")) {
            if (!(tokens_arg = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 0, 1 << 24, &n_gen, a, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(a, "--temp")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_f64(v, 0, 100, &temp, a, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(a, "--print-ids")) print_ids = true;
        else return cli_error("run: unknown option '%s' (see --help)", a);
    }
    if (!tokens_arg) return cli_error("run: --tokens is required (text prompts are not supported yet)");
    if (temp != 0) return cli_error("run: only --temp 0 (greedy) is supported yet");
    int *ids, n;
    if (cli_parse_ids(tokens_arg, &ids, &n, &e) < 0) return cli_error("%s", e.msg);
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&o, n + (int)n_gen, &m, &c)) return free(ids), 1;
    int status = 0;
    if (e0_eval(c, ids, n, NULL, &e) < 0) status = cli_error("%s", e.msg);
    for (int64_t k = 0; k < n_gen && !status; k++) {
        int next = argmax(e0_ctx_logits(c), m->hp.n_vocab);
        printf(k ? " %d" : "%d", next);
        if (k + 1 < n_gen && e0_eval(c, &next, 1, NULL, &e) < 0) status = cli_error("%s", e.msg);
    }
    if (print_ids || n_gen) putchar('\n');
    free(ids);
    e0_ctx_free(c);
    e0_model_free(m);
    return status;
}
