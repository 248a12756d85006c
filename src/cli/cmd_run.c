/* cmd_run.c — `run`: generate from a prompt. Text mode applies the model's chat template (unless
 * --raw or the model has none), streams the generated text to stdout and prints a timing summary
 * on stderr. Token mode (--tokens ... --print-ids) prints exactly -n greedy ids: a verification
 * path that never stops at EOS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"
#include "engine/experts.h"
#include "generate.h"
#include "text/prompt.h"

static void help(void) {
    puts("usage: edge0-infer run -m F (-p TEXT | --user-file F | --tokens 1,2,3) [options]\n"
         "  -m, --model F        GGUF model\n"
         "  -p, --prompt TEXT    the user's message\n"
         "  --user-file F        the user's message from a file\n"
         "  --system TEXT        a system message (chat template only)\n"
         "  --raw                no chat template: the text is the prompt as is\n"
         "  --tokens LIST        the prompt as token ids, separated by commas or spaces (no template)\n"
         "  --print-ids          print generated ids (space-separated, one line) instead of text;\n"
         "                       exactly -n of them, never stopping at EOS\n"
         "  -n N                 tokens to generate (default: until end of generation or the context is full)\n"
         "  -c, --ctx-size N     context length (default min(model context, 4096))\n"
         "  -t, --threads N      threads (default: physical cores)\n"
         "  --temp T             temperature (default 0.8; 0 = greedy)\n"
         "  --top-k K            (default 40; 0 = off)\n"
         "  --top-p P            (default 0.95; 1 = off)\n"
         "  --min-p P            (default 0.05; 0 = off)\n"
         "  --repeat-penalty R   (default 1.0 = off), over the last 64 tokens\n"
         "  -s, --seed S         random seed (default: from the clock)\n"
         "  --stop TEXT          stop when TEXT is generated (repeatable)\n"
         "  --ignore-eos         do not stop at end-of-generation tokens");
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

typedef struct {
    cli_model_opts o;
    const char *prompt, *user_file, *system, *tokens;
    bool raw, print_ids, ignore_eos, seed_given;
    int64_t n_predict;
    e0_sampler_params sp;
    const char *stop[16];
    int n_stop;
} run_args;

static int parse(run_args *a, int argc, char **argv) {
    e0_err e;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&a->o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *f = argv[i], *v = NULL;
        double d;
        int64_t n;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), -1;
        if (!strcmp(f, "--raw")) { a->raw = true; continue; }
        if (!strcmp(f, "--print-ids")) { a->print_ids = true; continue; }
        if (!strcmp(f, "--ignore-eos")) { a->ignore_eos = true; continue; }
        static const char *const with_value[] = {"-p", "--prompt", "--user-file", "--system", "--tokens", "-n", "--n-predict",
                                                 "--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "-s",
                                                 "--seed", "--stop"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(f, with_value[k]);
        if (!known) return cli_error("run: unknown option '%s' (see --help)", f);
        if (!(v = cli_value(argc, argv, &i))) return 1;
        if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) a->prompt = v;
        else if (!strcmp(f, "--user-file")) a->user_file = v;
        else if (!strcmp(f, "--system")) a->system = v;
        else if (!strcmp(f, "--tokens")) a->tokens = v;
        else if (!strcmp(f, "--stop")) {
            if (a->n_stop == 16) return cli_error("run: at most 16 --stop strings");
            if (!*v) return cli_error("run: --stop needs a non-empty string");
            a->stop[a->n_stop++] = v;
        } else if (!strcmp(f, "-n") || !strcmp(f, "--n-predict")) {
            if (e0_parse_i64(v, -1, 1 << 24, &a->n_predict, f, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(f, "--top-k")) {
            if (e0_parse_i64(v, 0, 1 << 24, &n, f, &e) < 0) return cli_error("%s", e.msg);
            a->sp.top_k = (int)n;
        } else if (!strcmp(f, "-s") || !strcmp(f, "--seed")) {
            if (e0_parse_i64(v, 0, INT64_MAX, &n, f, &e) < 0) return cli_error("%s", e.msg);
            a->sp.seed = (uint64_t)n;
            a->seed_given = true;
        } else {
            double lo = 0, hi = !strcmp(f, "--temp") ? 100 : !strcmp(f, "--repeat-penalty") ? 100 : 1;
            if (e0_parse_f64(v, lo, hi, &d, f, &e) < 0) return cli_error("%s", e.msg);
            if (!strcmp(f, "--temp")) a->sp.temp = (float)d;
            else if (!strcmp(f, "--top-p")) a->sp.top_p = (float)d;
            else if (!strcmp(f, "--min-p")) a->sp.min_p = (float)d;
            else {
                if (d <= 0) return cli_error("--repeat-penalty must be > 0");
                a->sp.repeat_penalty = (float)d;
            }
        }
    }
    int sources = !!a->prompt + !!a->user_file + !!a->tokens;
    if (sources != 1) return cli_error("run: give exactly one of -p, --user-file or --tokens");
    if (a->print_ids && !a->tokens && a->n_predict < 0) return cli_error("run: --print-ids needs -n");
    if (a->tokens && a->system) return cli_error("run: --system needs a text prompt");
    return 0;
}

/* Token mode: exactly n ids (greedy or sampled), never stopping at EOS. */
static int run_ids(run_args *a) {
    e0_err e;
    int *ids, n;
    if (cli_parse_ids("--tokens", a->tokens, &ids, &n, &e) < 0) return cli_error("%s", e.msg);
    int64_t n_gen = a->n_predict < 0 ? 16 : a->n_predict;
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&a->o, n + (int)n_gen, &m, &c)) return free(ids), 1;
    e0_sampler *s = e0_sampler_new(&a->sp, m->hp.n_vocab);
    int status = s ? 0 : cli_error("out of memory");
    for (int i = 0; i < n && s; i++) e0_sampler_accept(s, ids[i]);
    if (!status && e0_eval(c, ids, n, NULL, &e) < 0) status = cli_error("%s", e.msg);
    for (int64_t k = 0; k < n_gen && !status; k++) {
        int next = e0_sample(s, e0_ctx_logits(c));
        e0_sampler_accept(s, next);
        printf(k ? " %d" : "%d", next);
        if (!cli_stdout_ok()) break; /* the reader went away or the output is lost: main says which */
        if (k + 1 < n_gen && e0_eval(c, &next, 1, NULL, &e) < 0) status = cli_error("%s", e.msg);
    }
    if (!status) putchar('\n');
    e0_sampler_free(s);
    free(ids);
    cli_unload(&a->o);
    return status;
}

/* What streaming experts cost (when they stream): reads, cache and prediction hit rates, waits. */
static void print_stream_summary(const e0_session *ses, int n_tokens) {
    fprintf(stderr, "memory ledger peak: %.1f MiB (dense %.1f, experts %.1f, staging %.1f, KV %.1f, scratch %.1f)\n",
            e0_mem_total_peak() / 1048576.0, e0_mem_peak(E0_MEM_DENSE) / 1048576.0, e0_mem_peak(E0_MEM_EXPERTS) / 1048576.0,
            e0_mem_peak(E0_MEM_STAGING) / 1048576.0, e0_mem_peak(E0_MEM_KV) / 1048576.0, e0_mem_peak(E0_MEM_SCRATCH) / 1048576.0);
    if (!ses->xc) return;
    const e0_experts_stats *x = e0_experts_get_stats(ses->xc);
    uint64_t hits = 0, total = 0;
    for (int64_t il = 0; il < ses->m->hp.n_layer; il++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(ses->c, (int)il, &h, &t);
        hits += h;
        total += t;
    }
    fprintf(stderr, "experts streamed (%lld slots/layer, %s routing): %.1f MB read (%.1f MB/token), %llu reads, "
                    "cache hit rate %.3f, prediction hit rate ",
            (long long)ses->opt.expert_slots, ses->opt.routing == E0_ROUTING_PREDICTED ? "predicted" : "actual",
            x->bytes_read / 1e6, n_tokens ? x->bytes_read / 1e6 / n_tokens : 0.0, (unsigned long long)x->reads,
            x->requests ? (double)x->hits / (double)x->requests : 0.0);
    if (total) fprintf(stderr, "%.3f", (double)hits / (double)total);
    else fprintf(stderr, "n/a");
    fprintf(stderr, ", waited %.2f s for reads\n", x->wait_seconds);
}

int cmd_run(int argc, char **argv) {
    run_args a = {.n_predict = -1, .sp = e0_sampler_defaults()};
    int rc = parse(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (!a.seed_given) a.sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (a.tokens) return run_ids(&a);
    if (a.print_ids) return cli_error("run: --print-ids needs --tokens");

    e0_err e;
    char *text = NULL;
    if (a.user_file && !(text = e0_read_file(a.user_file, 64 << 20, NULL, &e))) return cli_error("%s", e.msg);
    e0_model *m;
    e0_ctx *c;
    double t_load = e0_now();
    if (cli_load(&a.o, 0, &m, &c)) return free(text), 1;
    t_load = e0_now() - t_load;
    e0_tokenizer *tok = e0_model_tokenizer(m, &e);
    e0_prompt p = {0};
    e0_sampler *s = NULL;
    int status = 0;
    if (!tok) status = cli_error("%s", e.msg);
    else if (e0_prompt_build_ex(m, tok, a.system, text ? text : a.prompt, a.raw, &p, &e) < 0) status = cli_error("%s", e.msg);
    else if (!(s = e0_sampler_new(&a.sp, m->hp.n_vocab))) status = cli_error("out of memory");
    double t_prompt = e0_now();
    if (!status && e0_eval(c, p.ids, p.n, NULL, &e) < 0) status = cli_error("%s", e.msg);
    t_prompt = e0_now() - t_prompt;
    if (!status) {
        for (int i = 0; i < p.n; i++) e0_sampler_accept(s, p.ids[i]);
        gen_opts go = {.n_predict = a.n_predict, .ignore_eos = a.ignore_eos, .stop = a.stop, .n_stop = a.n_stop, .echo = true};
        gen_result r;
        if (gen_run(c, tok, s, &go, &r, &e) < 0) status = cli_error("%s", e.msg);
        else {
            if (r.context_full) fprintf(stderr, "\n[context full: %d tokens; raise -c]", e0_ctx_n_ctx(c));
            fprintf(stderr, "\n\nload %.2f s | prompt %d tokens, %.2f s, %.1f tok/s | generated %d tokens, %.2f s, %.1f tok/s | "
                            "peak memory %.1f MiB\n",
                    t_load, p.n, t_prompt, p.n / t_prompt, r.n_generated, r.seconds,
                    r.seconds > 0 ? r.n_generated / r.seconds : 0.0, gen_peak_rss() / 1048576.0);
            print_stream_summary(&a.o.session, p.n + r.n_generated);
        }
        free(r.text);
    }
    e0_sampler_free(s);
    e0_prompt_free(&p);
    e0_tokenizer_free(tok);
    cli_unload(&a.o);
    free(text);
    return status;
}
