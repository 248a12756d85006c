/* cmd_logits.c — `logits`: one batched prefill from position 0, every position's logits to a file
 * (or stdout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"

/* --routes: experts [n_pos][n_layer][k], -1 where a layer has no routed experts. */
typedef struct {
    int *ids;
    int n_pos, n_layer, k;
} route_table;

static void log_route(void *user, int layer, int pos, const int *experts, int k) {
    route_table *t = user;
    if (pos < 0 || pos >= t->n_pos || layer < 0 || layer >= t->n_layer || k != t->k) return;
    int *dst = t->ids + ((size_t)pos * (size_t)t->n_layer + (size_t)layer) * (size_t)k;
    for (int i = 0; i < k; i++) { /* insertion sort: ascending */
        int j = i;
        for (; j > 0 && dst[j - 1] > experts[i]; j--) dst[j] = dst[j - 1];
        dst[j] = experts[i];
    }
}

static int write_routes(const char *path, const route_table *t) {
    FILE *f = fopen(path, "w");
    if (!f) return cli_error("cannot write %s", path);
    for (int p = 0; p < t->n_pos; p++) {
        int first = 1;
        for (int l = 0; l < t->n_layer; l++) {
            const int *e = t->ids + ((size_t)p * (size_t)t->n_layer + (size_t)l) * (size_t)t->k;
            if (e[0] < 0) continue;
            fprintf(f, "%s%d:", first ? "" : " ", l);
            for (int i = 0; i < t->k; i++) fprintf(f, "%s%d", i ? "," : "", e[i]);
            first = 0;
        }
        fputc('\n', f);
    }
    if (ferror(f) | (fclose(f) != 0)) return cli_error("cannot write %s", path);
    return 0;
}

static void help(void) {
    puts("usage: edge0-infer logits --model F --tokens 1,2,3 --out FILE [--routes FILE] [-t N] [-c N]\n"
         "Runs one batched prefill of the tokens from position 0 and writes len(tokens) x n_vocab\n"
         "little-endian float32 values to FILE (- = stdout): row i = the logits after position i.\n"
         "  --routes FILE   the experts each position was computed with: line i holds, for every MoE\n"
         "                  layer L in order, \"L:e,e,...\" (the layer's experts, ascending), space-separated\n"
         "                  (what tools/llamacpp_ref.c logits --routes writes for llama.cpp)");
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

int cmd_logits(int argc, char **argv) {
    cli_model_opts o = {0};
    const char *tokens_arg = NULL, *out_path = NULL, *routes_path = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return help(), 0;
        else if (!strcmp(argv[i], "--tokens")) {
            if (!(tokens_arg = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--out") || !strcmp(argv[i], "-o")) {
            if (!(out_path = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--routes")) {
            if (!(routes_path = cli_value(argc, argv, &i))) return 1;
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
    /* a model without routed experts logs nothing: one slot per layer, all -1, empty lines */
    route_table rt = {.n_pos = n, .n_layer = (int)m->hp.n_layer, .k = m->hp.n_expert_used > 0 ? (int)m->hp.n_expert_used : 1};
    size_t n_route = (size_t)n * (size_t)rt.n_layer * (size_t)rt.k;
    if (routes_path && (rt.ids = malloc(n_route * sizeof *rt.ids))) {
        memset(rt.ids, 0xff, n_route * sizeof *rt.ids); /* -1 */
        e0_ctx_set_route_log(c, log_route, &rt);
    }
    if (!logits) status = cli_error("out of memory for %zu logits", count);
    else if (routes_path && !rt.ids) status = cli_error("out of memory for the routing log (%zu entries)", n_route);
    else if (e0_eval(c, ids, n, logits, &e) < 0) status = cli_error("%s", e.msg);
    else if (to_stdout) fwrite(logits, sizeof(float), count, stdout); /* write errors: checked at exit (main.c) */
    else if (!(f = fopen(out_path, "wb"))) status = cli_error("cannot write %s", out_path);
    else if (fwrite(logits, sizeof(float), count, f) != count) status = cli_error("cannot write %s", out_path);
    if (f && fclose(f) != 0 && !status) status = cli_error("cannot write %s", out_path);
    if (!status && routes_path) status = write_routes(routes_path, &rt);
    free(rt.ids);
    free(logits);
    free(ids);
    cli_unload(&o);
    return status;
}
