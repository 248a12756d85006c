/* common.c — helpers every command uses: the error exit, flag values, token-id lists; the flags
 * shared by the commands that load a model (-m/--model, -t, -c, -b, -ctk/-ctv, --mlock; llama.cpp's
 * -ngl, -fa, --jinja, --no-mmap taken with a note), and
 * loading; the sampling and stopping flags of run and chat (cli_gen_flag); the one check of
 * stdout's write errors at exit. main.c and the cmd_*.c files call these; nothing here calls them
 * back. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/cpus.h"
#include "cli.h"
#include "quant/quant.h"
#include "text/json_schema.h"

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

/* The defaults of what cli_model_flag sets, once. */
void cli_model_opts_init(cli_model_opts *o) {
    if (o->options_init) return;
    e0_options_init(&o->opt);
    o->type_k = o->type_v = E0_TYPE_F16; /* llama.cpp's default */
    o->options_init = true;
}

void cli_kv_flags_help(void) {
    puts("  -ctk, --cache-type-k T                        KV cache type of keys: f32, f16, bf16, q8_0, q4_0 (default f16)\n"
         "  -ctv, --cache-type-v T                        ... of values (f32: exact; q8_0/q4_0 need head_dim % 32 == 0)");
}

/* -ngl's values: a count, a comma list of counts (llama-bench), auto or all. */
static bool ngl_value(const char *v) {
    if (!strcmp(v, "auto") || !strcmp(v, "all")) return true;
    bool digit = false;
    for (const char *p = v; *p; p++) {
        if (isdigit((unsigned char)*p)) digit = true;
        else if (*p != ',' || !digit) return false;
        else digit = false;
    }
    return digit;
}

/* -fa's values: on, off, auto (llama-cli), 0, 1 or a comma list of them (llama-bench). */
static bool fa_value(const char *v) {
    if (!strcmp(v, "on") || !strcmp(v, "off") || !strcmp(v, "auto")) return true;
    /* llama-bench's list: 0 or 1, then any number of ",0" / ",1" */
    if (*v != '0' && *v != '1') return false;
    for (v++; *v; v += 2)
        if (v[0] != ',' || (v[1] != '0' && v[1] != '1')) return false;
    return true;
}

int cli_model_flag(cli_model_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    e0_err e;
    int64_t n;
    cli_model_opts_init(o);
    if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        bool is_k = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k");
        if (e0_kv_type_parse(v, is_k ? &o->type_k : &o->type_v, &e) < 0) return cli_error("%s: %s", a, e.msg), -1;
        return 1;
    }
    if (!strcmp(a, "--model-option")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (e0_options_parse(&o->opt, v, &e) < 0) return cli_error("%s", e.msg), -1;
        return 1;
    }
    if (!strcmp(a, "--mlock")) {
        o->mlock = true;
        return 1;
    }
    if (!strcmp(a, "--no-mmap")) {
        fprintf(stderr, "note: --no-mmap changes nothing: the engine always reads the model file, it never maps it\n");
        return 1;
    }
    /* llama.cpp flags without a meaning here, taken (values checked) with a note each so that a
     * llama.cpp command line runs unchanged */
    if (!strcmp(a, "-ngl") || !strcmp(a, "--gpu-layers") || !strcmp(a, "--n-gpu-layers")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (!ngl_value(v)) return cli_error("%s: '%.40s' is not a layer count (N, a list N,M,..., auto or all)", a, v), -1;
        fprintf(stderr, "note: %s changes nothing: this engine runs on the CPU, nothing is offloaded\n", a);
        return 1;
    }
    if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
        if (*i + 1 < argc && fa_value(argv[*i + 1])) ++*i; /* llama-cli: on|off|auto; llama-bench: 0|1 lists; old: none */
        fprintf(stderr, "note: %s changes nothing: the engine chooses its attention kernel (tiled, flash-attention style)\n", a);
        return 1;
    }
    if (!strcmp(a, "--jinja")) {
        fprintf(stderr, "note: --jinja changes nothing: chat templates are always rendered as Jinja\n");
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
    cli_model_opts_init(o);
    /* never more threads than usable CPUs unless forced (one warning line); the defaults too */
    int threads = o->threads > 0 ? e0_threads_cap_warn(o->threads, "-t") : e0_default_threads();
    if (prefill_threads > 0) prefill_threads = e0_threads_cap_warn(prefill_threads, "--prefill-threads");
    e0_ctx_params p = {.n_ctx = o->n_ctx, .n_threads = threads, .n_threads_prefill = prefill_threads, .n_batch = o->n_batch,
                       .type_k = o->type_k, .type_v = o->type_v};
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
    if (o->mlock) {
        /* what is loaded now: the dense weights, resident experts or the expert cache, the KV cache */
        if (o->session.streamed)
            fprintf(stderr, "note: --mlock: experts stream from disk; locking the resident weights and the expert cache\n");
        if (mlockall(MCL_CURRENT) != 0)
            fprintf(stderr, "warning: --mlock: %s (see ulimit -l); going on unlocked\n", strerror(errno));
    }
    return 0;
}

const char cli_model_flags_help[] =
    "  --mlock              lock the loaded weights in RAM (with streamed experts: the resident part)\n"
    "  --no-mmap            accepted for llama.cpp users; the engine always reads, never maps\n"
    "  -ngl N, -fa [on|off], --jinja\n"
    "                       accepted for llama.cpp users with a note: CPU only, attention kernel\n"
    "                       chosen by the engine, templates always Jinja\n";

void cli_gen_init(cli_gen_flags *g) {
    memset(g, 0, sizeof *g);
    g->sp = e0_sampler_defaults();
    g->n_predict = -1;
}

const char cli_gen_help[] =
    "  -n, --n-predict N    tokens to generate (default -1: until end of generation or the context is full)\n"
    "  --temp T             temperature (default 0.8; 0 = greedy)\n"
    "  --top-k K            (default 40; 0 = off)\n"
    "  --top-p P            (default 0.95; 1 = off)\n"
    "  --min-p P            (default 0.05; 0 = off)\n"
    "  --repeat-penalty R   divide a recent token's logit by R (default 1.0 = off)\n"
    "  --repeat-last-n N    how many recent tokens the penalties look at (default 64; 0 = off, -1 = context)\n"
    "  --presence-penalty P subtract P from a recent token's logit (default 0 = off)\n"
    "  --frequency-penalty F subtract F per occurrence among the recent tokens (default 0 = off)\n"
    "  -l, --logit-bias ID+B add B (-100..100; ID-inf: never) to token ID's logit, e.g. 15043+1, 15043-inf\n"
    "                       (repeatable, at most 300 tokens)\n"
    "  -s, --seed S         random seed (default: from the clock)\n"
    "  --stop TEXT          stop when TEXT is generated (repeatable, at most 16)\n"
    "  --ignore-eos         do not stop at end-of-generation tokens\n"
    "  --grammar GBNF       the output must match this grammar (llama.cpp's GBNF; rule 'root')\n"
    "  --grammar-file F     the same, from a file (e.g. llama.cpp's grammars/json.gbnf)\n"
    "  -j, --json-schema S  the output must be JSON valid for this JSON schema (keywords it cannot\n"
    "                       enforce, such as multipleOf, are refused; pattern is enforced)\n"
    "  -jf, --json-schema-file F  the same, from a file\n"
    "  -sys, --system-prompt TEXT  a system message (also --system)\n"
    "  --chat-template-file F      a Jinja chat template instead of the model's\n"
    "  -v, --verbose        more detail on stderr\n";

int cli_gen_flag(cli_gen_flags *g, int argc, char **argv, int *i) {
    const char *f = argv[*i], *v;
    e0_err e;
    int64_t n;
    double d;
    if (!strcmp(f, "--ignore-eos")) return g->ignore_eos = true, 1;
    if (!strcmp(f, "-v") || !strcmp(f, "--verbose")) return g->verbose = true, 1;
    static const char *const with_value[] = {"-n", "--n-predict", "--temp", "--top-k", "--top-p", "--min-p",
                                             "--repeat-penalty", "--repeat-last-n", "--presence-penalty",
                                             "--frequency-penalty", "-s", "--seed", "--stop", "-sys",
                                             "--system-prompt", "--system", "--chat-template-file", "-l", "--logit-bias",
                                             "--grammar", "--grammar-file", "-j", "--json-schema", "-jf",
                                             "--json-schema-file"};
    bool known = false;
    for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(f, with_value[k]);
    if (!known) return 0;
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (!strcmp(f, "-sys") || !strcmp(f, "--system-prompt") || !strcmp(f, "--system")) g->system = v;
    else if (!strcmp(f, "--chat-template-file")) g->chat_template_file = v;
    else if (!strcmp(f, "--grammar")) g->grammar_arg = v;
    else if (!strcmp(f, "--grammar-file")) g->grammar_file = v;
    else if (!strcmp(f, "-j") || !strcmp(f, "--json-schema")) g->json_schema = v;
    else if (!strcmp(f, "-jf") || !strcmp(f, "--json-schema-file")) g->json_schema_file = v;
    else if (!strcmp(f, "--stop")) {
        if (g->n_stop == CLI_MAX_STOP) return cli_error("at most %d --stop strings", CLI_MAX_STOP), -1;
        if (!*v) return cli_error("--stop needs a non-empty string"), -1;
        g->stop[g->n_stop++] = v;
    } else if (!strcmp(f, "-l") || !strcmp(f, "--logit-bias")) { /* llama.cpp's TOKEN_ID(+/-)BIAS */
        const char *sign = v + strspn(v, "0123456789");
        char id_text[24];
        if (sign == v || (*sign != '+' && *sign != '-') || (size_t)(sign - v) >= sizeof id_text)
            return cli_error("%s: '%s' is not TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 15043-inf)", f, v), -1;
        memcpy(id_text, v, (size_t)(sign - v));
        id_text[sign - v] = 0;
        if (e0_parse_i64(id_text, 0, INT32_MAX, &n, f, &e) < 0) return cli_error("%s", e.msg), -1;
        if (!strcmp(sign, "-inf")) d = -INFINITY;
        else if (e0_parse_f64(sign, -100, 100, &d, f, &e) < 0) return cli_error("%s (or TOKEN_ID-inf: never)", e.msg), -1;
        if (g->sp.n_bias == E0_MAX_LOGIT_BIAS) return cli_error("at most %d %s", E0_MAX_LOGIT_BIAS, f), -1;
        g->sp.bias[g->sp.n_bias++] = (e0_logit_bias){(int32_t)n, (float)d};
    } else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) {
        if (e0_parse_i64(v, -1, 1 << 24, &g->n_predict, f, &e) < 0) return cli_error("%s", e.msg), -1;
    } else if (!strcmp(f, "--top-k")) {
        if (e0_parse_i64(v, 0, 1 << 24, &n, f, &e) < 0) return cli_error("%s", e.msg), -1;
        g->sp.top_k = (int)n;
    } else if (!strcmp(f, "--repeat-last-n")) {
        if (e0_parse_i64(v, -1, 1 << 24, &n, f, &e) < 0) return cli_error("%s", e.msg), -1;
        g->sp.repeat_last_n = (int)n;
    } else if (!strcmp(f, "-s") || !strcmp(f, "--seed")) {
        if (e0_parse_i64(v, 0, INT64_MAX, &n, f, &e) < 0) return cli_error("%s", e.msg), -1;
        g->sp.seed = (uint64_t)n;
        g->seed_given = true;
    } else if (!strcmp(f, "--presence-penalty") || !strcmp(f, "--frequency-penalty")) {
        /* llama.cpp allows negative values (encouraging repeats) */
        if (e0_parse_f64(v, -100, 100, &d, f, &e) < 0) return cli_error("%s", e.msg), -1;
        if (f[2] == 'p') g->sp.presence_penalty = (float)d;
        else g->sp.frequency_penalty = (float)d;
    } else {
        double hi = !strcmp(f, "--temp") || !strcmp(f, "--repeat-penalty") ? 100 : 1;
        if (e0_parse_f64(v, 0, hi, &d, f, &e) < 0) return cli_error("%s", e.msg), -1;
        if (!strcmp(f, "--temp")) g->sp.temp = (float)d;
        else if (!strcmp(f, "--top-p")) g->sp.top_p = (float)d;
        else if (!strcmp(f, "--min-p")) g->sp.min_p = (float)d;
        else {
            if (d <= 0) return cli_error("--repeat-penalty must be > 0"), -1;
            g->sp.repeat_penalty = (float)d;
        }
    }
    return 1;
}

int cli_gen_finish(cli_gen_flags *g, int n_ctx, int64_t n_vocab) {
    if (!g->seed_given) g->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (g->sp.repeat_last_n < 0) g->sp.repeat_last_n = n_ctx;
    for (int i = 0; i < g->sp.n_bias; i++)
        if (g->sp.bias[i].id >= n_vocab)
            return cli_error("--logit-bias: token %d is not in the model's vocabulary (0..%lld)", g->sp.bias[i].id,
                             (long long)n_vocab - 1);
    if (!!g->grammar_arg + !!g->grammar_file + !!g->json_schema + !!g->json_schema_file > 1)
        return cli_error("give one of --grammar, --grammar-file, --json-schema and --json-schema-file");
    e0_err e;
    const char *what = g->grammar_file ? g->grammar_file : "--grammar";
    if (g->grammar_file && !(g->grammar_text = e0_read_file(g->grammar_file, E0_GRAMMAR_MAX_TEXT, &g->grammar_len, &e)))
        return cli_error("%s", e.msg);
    if (g->grammar_arg && !(g->grammar_text = strdup(g->grammar_arg))) return cli_error("out of memory");
    if (g->grammar_arg) g->grammar_len = strlen(g->grammar_arg);
    if (g->json_schema || g->json_schema_file) { /* the schema's grammar */
        what = g->json_schema_file ? g->json_schema_file : "--json-schema";
        json_error_t je;
        size_t n = 0;
        char *file = g->json_schema_file ? e0_read_file(g->json_schema_file, E0_GRAMMAR_MAX_TEXT, &n, &e) : NULL;
        if (g->json_schema_file && !file) return cli_error("%s", e.msg);
        json_t *schema = file ? json_loadb(file, n, JSON_DECODE_ANY, &je) : json_loads(g->json_schema, JSON_DECODE_ANY, &je);
        free(file);
        if (!schema) return cli_error("%s: not JSON: %s (line %d, column %d)", what, je.text, je.line, je.column);
        g->grammar_text = e0_json_schema_grammar(schema, &g->grammar_len, &e);
        json_decref(schema);
        if (!g->grammar_text) return cli_error("%s: %s", what, e.msg);
    }
    if (g->grammar_text && !(g->grammar = e0_grammar_parse(g->grammar_text, g->grammar_len, &e))) {
        if (!strcmp(what, "--grammar")) cli_error("--%s", e.msg); /* "--grammar: line L, column C: ..." */
        else cli_error("%s: %s", what, e.msg);
        return cli_gen_free(g), 1;
    }
    return 0;
}

void cli_gen_free(cli_gen_flags *g) {
    e0_grammar_free(g->grammar);
    free(g->grammar_text);
    g->grammar = NULL;
    g->grammar_text = NULL;
}

char *cli_read_stdin(const char *cmd, size_t max, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        cli_error("out of memory");
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) { /* room for the NUL */
            if (cap >= max) {
                free(buf);
                cli_error("%s: input larger than %u MiB", cmd, (unsigned)(max >> 20));
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                cli_error("out of memory");
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, stdin);
        n += k;
        if (k == 0) {
            if (ferror(stdin)) {
                free(buf);
                cli_error("%s: error reading stdin", cmd);
                return NULL;
            }
            break;
        }
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int cli_parse_ids(const char *what, const char *s, int **ids, int *n, e0_err *e) {
    size_t count = 0, cap = 0;
    int *v = NULL;
    const char *p = s;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *item = p;
        size_t item_len = strcspn(item, ", \t\n\r\v\f");
        long long x = 0;
        while (isdigit((unsigned char)*p) && x <= INT_MAX) x = x * 10 + (*p++ - '0');
        if (p == item || x > INT_MAX || (*p && *p != ',' && !isspace((unsigned char)*p))) {
            free(v);
            return e0_fail(e, "%s: '%.*s' is not a token id (ids are numbers from 0, separated by commas or spaces)",
                           what, (int)(item_len > 40 ? 40 : item_len ? item_len : 1), item);
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            int *nv = realloc(v, cap * sizeof *v);
            if (!nv) return free(v), e0_fail(e, "out of memory");
            v = nv;
        }
        v[count++] = (int)x;
        while (isspace((unsigned char)*p)) p++;
        if (*p == ',') {
            p++;
            while (isspace((unsigned char)*p)) p++;
            if (!*p || *p == ',') return free(v), e0_fail(e, "%s: a comma with no token id after it", what);
        }
    }
    if (count == 0) return free(v), e0_fail(e, "%s: no token ids", what);
    *ids = v;
    *n = (int)count;
    return 0;
}

/* stdout's write errors. stdio keeps the error flag but not its cause, and drops the buffer, so
 * the first failed flush seen here records errno. */
static int stdout_errno;

bool cli_stdout_ok(void) {
    if (fflush(stdout) != 0 && !stdout_errno) stdout_errno = errno ? errno : EIO;
    return !ferror(stdout);
}

/* SIGPIPE: a write to a pipe whose reader went away. Caught (not fatal): the write fails with
 * EPIPE, and the flag tells cli_stdout_close that this was the end of a `| head`. */
static volatile sig_atomic_t reader_gone;
static void on_sigpipe(int sig) { (void)sig, reader_gone = 1; }

void cli_stdout_init(void) { signal(SIGPIPE, on_sigpipe); }

int cli_stdout_close(int status) {
    bool ok = cli_stdout_ok(), gone = reader_gone || stdout_errno == EPIPE;
    if (fclose(stdout) != 0 && ok && errno != EBADF) { /* EBADF: run with stdout closed, nothing to write */
        ok = false;
        stdout_errno = errno;
    }
    if (ok || gone) return status; /* `| head`: the reader has all it wanted */
    if (stdout_errno) cli_error("cannot write to stdout: %s (the output is incomplete)", strerror(stdout_errno));
    else cli_error("cannot write to stdout (the output is incomplete)");
    return 1;
}
