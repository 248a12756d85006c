/* cmd_logits.c — `logits`: one batched prefill from position 0, every position's logits to a file
 * (or stdout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"

static void help(void) {
    puts("usage: edge0-infer logits --model F --tokens 1,2,3 --out FILE [-t N] [-c N]\n"
         "Runs one batched prefill of the tokens from position 0 and writes len(tokens) x n_vocab\n"
         "little-endian float32 values to FILE (- = stdout): row i = the logits after position i.");
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

int cmd_logits(int argc, char **argv) {
    cli_model_opts o = {0};
    const char *tokens_arg = NULL, *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help(), 0;
        else if (!strcmp(argv[i], "--tokens")) {
            if (!(tokens_arg = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) {
            if (!(out_path = cli_value(argc, argv, &i))) return 1;
        } else return cli_error("logits: unknown option '%s' (see --help)", argv[i]);
    }
    if (!tokens_arg) return cli_error("logits: --tokens is required");
    if (!out_path) return cli_error("logits: --out is required");
    bool to_stdout = !strcmp(out_path, "-");
    if (to_stdout && isatty(STDOUT_FILENO)) return cli_error("logits: --out - writes binary floats: redirect stdout to a file or pipe");
    e0_err e;
    int *ids, n;
    if (cli_parse_ids("--tokens", tokens_arg, &ids, &n, &e) < 0) return cli_error("%s", e.msg);
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&o, n, &m, &c)) return free(ids), 1;
    int status = 0;
    size_t count = (size_t)n * (size_t)m->hp.n_vocab;
    float *logits = malloc(count * sizeof(float));
    FILE *f = NULL;
    if (!logits) status = cli_error("out of memory for %zu logits", count);
    else if (e0_eval(c, ids, n, logits, &e) < 0) status = cli_error("%s", e.msg);
    else if (to_stdout) fwrite(logits, sizeof(float), count, stdout); /* write errors: checked at exit (main.c) */
    else if (!(f = fopen(out_path, "wb"))) status = cli_error("cannot write %s", out_path);
    else if (fwrite(logits, sizeof(float), count, f) != count) status = cli_error("cannot write %s", out_path);
    if (f && fclose(f) != 0 && !status) status = cli_error("cannot write %s", out_path);
    free(logits);
    free(ids);
    cli_unload(&o);
    return status;
}
