/* common.c — flags shared by the commands that load a model (-m/--model, -t, -c), and loading. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_model_flag(cli_model_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    e0_err e;
    int64_t n;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        o->model = v;
        return 1;
    }
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (e0_parse_i64(v, 1, 1024, &n, a, &e) < 0) return cli_error("%s", e.msg), -1;
        o->threads = (int)n;
        return 1;
    }
    if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size") || !strcmp(a, "--context")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (e0_parse_i64(v, 1, 1 << 24, &n, a, &e) < 0) return cli_error("%s", e.msg), -1;
        o->n_ctx = (int)n;
        return 1;
    }
    return 0;
}

int cli_load(const cli_model_opts *o, int min_ctx, e0_model **m, e0_ctx **c) { return cli_load_ex(o, min_ctx, 0, m, c); }

/* Loading progress on a terminal: "loading F: 42%" rewritten in place. */
static void show_progress(void *user, uint64_t done, uint64_t total) {
    static int last = -1;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (pct == last) return;
    last = pct;
    fprintf(stderr, "\rloading %s: %3d%%%s", (const char *)user, pct, done == total ? "\n" : "");
}

int cli_load_ex(const cli_model_opts *o, int min_ctx, int prefill_threads, e0_model **m, e0_ctx **c) {
    e0_err e;
    if (!o->model) return cli_error("--model is required");
    e0_model_params mp = {.experts_resident = true};
    if (isatty(STDERR_FILENO)) {
        mp.progress = show_progress;
        mp.progress_user = (void *)o->model;
    }
    *m = e0_model_load(o->model, &mp, true, &e);
    if (!*m && mp.progress) fputc('\n', stderr);
    if (!*m) return cli_error("%s", e.msg);
    e0_ctx_params p = {.n_ctx = o->n_ctx, .n_threads = o->threads, .n_threads_prefill = prefill_threads};
    if (!p.n_ctx) {
        int64_t def = (*m)->hp.n_ctx_train < 4096 ? (*m)->hp.n_ctx_train : 4096;
        if (def < min_ctx) def = min_ctx < (*m)->hp.n_ctx_train ? min_ctx : (*m)->hp.n_ctx_train;
        p.n_ctx = (int)def;
    }
    *c = e0_ctx_new(*m, &p, &e);
    if (!*c) {
        e0_model_free(*m);
        *m = NULL;
        return cli_error("%s", e.msg);
    }
    return 0;
}
