/* common.c — helpers every command uses: the error exit, flag values, token-id lists; the flags
 * shared by the commands that load a model (-m/--model, -t, -c), and loading. main.c and the
 * cmd_*.c files call these; nothing here calls them back. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("edge0-infer: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_error("%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_ids(const char *s, int **ids, int *n, e0_err *e) {
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        if (*p == ',') cap++;
    int *v = malloc(cap * sizeof *v);
    if (!v) return e0_fail(e, "out of memory");
    int count = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 0 || x > 0x7fffffff || (*end && *end != ',')) {
            free(v);
            return e0_fail(e, "--tokens: bad token id list '%s' (expected comma-separated ids)", s);
        }
        v[count++] = (int)x;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            free(v);
            return e0_fail(e, "--tokens: trailing comma in '%s'", s);
        }
    }
    if (count == 0) {
        free(v);
        return e0_fail(e, "--tokens: empty token list");
    }
    *ids = v;
    *n = count;
    return 0;
}


int cli_model_flag(cli_model_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    e0_err e;
    int64_t n;
    if (!o->options_init) {
        e0_options_init(&o->opt);
        o->options_init = true;
    }
    if (!strcmp(a, "--model-option")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (e0_options_parse(&o->opt, v, &e) < 0) return cli_error("%s", e.msg), -1;
        return 1;
    }
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
    if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (e0_parse_i64(v, 1, 1 << 16, &n, a, &e) < 0) return cli_error("%s", e.msg), -1;
        o->n_batch = (int)n;
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

int cli_load(cli_model_opts *o, int min_ctx, e0_model **m, e0_ctx **c) { return cli_load_ex(o, min_ctx, 0, m, c); }

void cli_unload(cli_model_opts *o) { e0_close(&o->session); }

/* Loading progress on a terminal: "loading F: 42%" rewritten in place. */
static void show_progress(void *user, uint64_t done, uint64_t total) {
    static int last = -1;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (pct == last) return;
    last = pct;
    fprintf(stderr, "\rloading %s: %3d%%%s", (const char *)user, pct, done == total ? "\n" : "");
}

int cli_load_ex(cli_model_opts *o, int min_ctx, int prefill_threads, e0_model **m, e0_ctx **c) {
    e0_err e;
    if (!o->model) return cli_error("--model is required");
    e0_model_params mp = {.experts_resident = true};
    if (isatty(STDERR_FILENO)) {
        mp.progress = show_progress;
        mp.progress_user = (void *)o->model;
    }
    if (!o->options_init) {
        e0_options_init(&o->opt);
        o->options_init = true;
    }
    e0_ctx_params p = {.n_ctx = o->n_ctx, .n_threads = o->threads, .n_threads_prefill = prefill_threads, .n_batch = o->n_batch};
    if (!p.n_ctx && min_ctx > 4096) {
        /* the default context (min(model, 4096)) grows to what the command needs, up to the model's */
        e0_model *probe = e0_model_load(o->model, NULL, false, &e);
        if (!probe) return cli_error("%s", e.msg);
        p.n_ctx = (int)(min_ctx < probe->hp.n_ctx_train ? min_ctx : probe->hp.n_ctx_train);
        e0_model_free(probe);
    }
    if (e0_open(o->model, &o->opt, &p, &mp, &o->session, &e) < 0) {
        if (mp.progress) fputc('\n', stderr);
        return cli_error("%s", e.msg);
    }
    *m = o->session.m;
    *c = o->session.c;
    return 0;
}
