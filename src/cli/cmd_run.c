/* cmd_run.c — `run`: generate from a prompt. Text mode applies the model's chat template (unless
 * --raw or the model has none), streams the generated text to stdout and prints a timing summary
 * on stderr. Id mode (--print-ids, the prompt from --tokens or text) prints exactly -n ids: a
 * verification path that never stops at EOS. -cnv/-i hand over to `chat`. Sampling and stop
 * flags: cli_gen_flag (common.c), shared with chat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"
#include "engine/experts.h"
#include "generate.h"
#include "text/jinja/jinja.h"
#include "text/prompt.h"

static void help(void) {
    puts("usage: edge0-infer run -m F (-p TEXT | -f F | --tokens 1,2,3) [options]\n"
         "  -m, --model F        GGUF model (split into files: the first, NAME-00001-of-0000N.gguf)\n"
         "  -p, --prompt TEXT    the user's message\n"
         "  -f, --file F         the user's message from a file (also --user-file)\n"
         "  --raw                no chat template: the text is the prompt as is\n"
         "  --tokens LIST        the prompt as token ids, separated by commas or spaces (no template)\n"
         "  --print-ids          print generated ids (space-separated, one line) instead of text;\n"
         "                       exactly -n of them (default 16), never stopping at EOS\n"
         "  -cnv, -i             (--conversation, --interactive) start `chat` instead, with the same\n"
         "                       flags; -p TEXT becomes the system prompt, as in llama.cpp\n"
         "  -c, --ctx-size N     context length (default min(model context, 4096))\n"
         "  -t, --threads N      threads for prefill and decode (default: the physical cores, at most the\n"
         "                       usable CPUs: affinity mask and cgroup CPU quota; a larger N is lowered\n"
         "                       to them with a warning unless E0_FORCE_THREADS=1 is set)");
    fputs(cli_gen_help, stdout);
    fputs(cli_model_flags_help, stdout);
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    puts("routing=replay is a measurement mode. Every MoE layer takes its experts from the trace's recorded\n"
         "  routing of a trained model (model layer l uses trace layer floor(l * Lt / Lm), tokens cycle through the\n"
         "  trace) instead of its own router; reads, cache, prefetch, timing and accounting are those of a real run.\n"
         "  It shows what streaming costs under real routing: bytes and reads per token, cache and prediction hit\n"
         "  rates, stall time, tok/s. It shows NOTHING about output quality: the text generated is meaningless.\n"
         "  replay_predict=P measures predicted routing with a predictor right with probability P; without it\n"
         "  nothing is predicted or read ahead. Every output labels the run as a replay (config.routing).");
    cli_kv_flags_help();
}

typedef struct {
    cli_model_opts o;
    cli_gen_flags g;
    const char *prompt, *user_file, *tokens;
    bool raw, print_ids;
} run_args;

static int parse(run_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&a->o, argc, argv, &i);
        if (!r) r = cli_gen_flag(&a->g, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *f = argv[i], *v = NULL;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), -1;
        if (!strcmp(f, "--raw")) { a->raw = true; continue; }
        if (!strcmp(f, "--print-ids")) { a->print_ids = true; continue; }
        static const char *const with_value[] = {"-p", "--prompt", "--user-file", "-f", "--file", "--tokens"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(f, with_value[k]);
        if (!known) return cli_error("run: unknown option '%s' (see --help)", f);
        if (!(v = cli_value(argc, argv, &i))) return 1;
        if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) a->prompt = v;
        else if (!strcmp(f, "--tokens")) a->tokens = v;
        else a->user_file = v;
    }
    int sources = !!a->prompt + !!a->user_file + !!a->tokens;
    if (sources != 1) return cli_error("run: give exactly one of -p, -f/--file or --tokens");
    if (a->tokens && a->g.system) return cli_error("run: --system needs a text prompt");
    if (a->tokens && a->g.chat_template_file) return cli_error("run: --chat-template-file needs a text prompt");
    if (a->raw && a->g.chat_template_file) return cli_error("run: --raw and --chat-template-file contradict each other");
    return 0;
}

/* NUL-terminated copy of a special token's text ("" when the vocabulary has none). */
static char *special_text(const e0_tokenizer *tok, int32_t id) {
    size_t n = 0;
    const char *t = id >= 0 ? e0_tok_text(tok, id, &n) : NULL;
    char *s = malloc(n + 1);
    if (s) {
        if (n) memcpy(s, t, n);
        s[n] = 0;
    }
    return s;
}

/* The prompt from text: the model's chat template (or --chat-template-file, or none with --raw). */
static int build_prompt(const run_args *a, const e0_model *m, const e0_tokenizer *tok, const char *user, e0_prompt *p,
                        e0_err *e) {
    if (!a->g.chat_template_file) return e0_prompt_build_ex(m, tok, a->g.system, user, a->raw, p, e);
    size_t tlen, len;
    char *tmpl = e0_read_file(a->g.chat_template_file, 4u << 20, &tlen, e), *text = NULL;
    if (!tmpl) return -1;
    json_t *msgs = json_array();
    if (a->g.system) json_array_append_new(msgs, e0_chat_message("system", a->g.system, strlen(a->g.system)));
    json_array_append_new(msgs, e0_chat_message("user", user, strlen(user)));
    char *bos = special_text(tok, e0_tok_bos(tok)), *eos = special_text(tok, e0_tok_eos(tok));
    int rc = bos && eos ? jinja_render_chat(tmpl, tlen, msgs, true, bos, eos, &text, &len, e) : e0_fail(e, "out of memory");
    if (rc < 0) rc = e0_fail(e, "%s: %s", a->g.chat_template_file, e->msg);
    e0_tokens t = {0};
    if (rc == 0) rc = e0_tokenize_prompt(tok, text, len, true, &t, e);
    if (rc == 0 && t.n == 0) rc = e0_fail(e, "the prompt is empty");
    free(tmpl), free(text), free(bos), free(eos);
    json_decref(msgs);
    if (rc < 0) return e0_tokens_free(&t), -1;
    p->ids = (int *)t.ids;
    p->n = (int)t.n;
    p->templated = true;
    return 0;
}

static void print_stream_summary(const e0_session *ses, int n_tokens);

/* Id mode: exactly n ids (greedy or sampled) after the prompt ids, never stopping at EOS. The
 * prompt is --tokens, or the text prompt's ids when tok is given (the model is already loaded).
 * When experts stream, the streaming summary (memory line included) follows on stderr. */
static int run_ids(run_args *a) {
    e0_err e;
    int *ids = NULL, n = 0;
    if (a->tokens && cli_parse_ids("--tokens", a->tokens, &ids, &n, &e) < 0) return cli_error("%s", e.msg);
    int64_t n_gen = a->g.n_predict < 0 ? 16 : a->g.n_predict;
    if (a->g.grammar_arg || a->g.grammar_file) return free(ids), cli_error("--grammar constrains text output, not --tokens / --print-ids");
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&a->o, n + (int)n_gen, &m, &c)) return free(ids), 1;
    int status = 0;
    if (!a->tokens) { /* a text prompt: its ids through the template, as in text mode */
        char *text = NULL;
        e0_tokenizer *tok = e0_model_tokenizer(m, &e);
        e0_prompt p = {0};
        if (a->user_file && !(text = e0_read_file(a->user_file, 64 << 20, NULL, &e))) status = cli_error("%s", e.msg);
        else if (!tok || build_prompt(a, m, tok, text ? text : a->prompt, &p, &e) < 0) status = cli_error("%s", e.msg);
        ids = p.ids;
        n = p.n;
        free(text);
        e0_tokenizer_free(tok);
        if (!status && n + n_gen > e0_ctx_n_ctx(c))
            status = cli_error("run: %d prompt tokens and %lld to generate do not fit the context (%d): raise -c", n,
                               (long long)n_gen, e0_ctx_n_ctx(c));
    }
    if (!status && cli_gen_finish(&a->g, e0_ctx_n_ctx(c), m->hp.n_vocab)) status = 1;
    e0_sampler *s = status ? NULL : e0_sampler_new(&a->g.sp, m->hp.n_vocab);
    if (!status && !s) status = cli_error("out of memory");
    for (int i = 0; i < n && s; i++) e0_sampler_accept(s, ids[i]);
    if (!status && e0_eval(c, ids, n, NULL, &e) < 0) status = cli_error("%s", e.msg);
    for (int64_t k = 0; k < n_gen && !status; k++) {
        int next = e0_sample(s, e0_ctx_logits(c));
        e0_sampler_accept(s, next);
        printf(k ? " %d" : "%d", next);
        if (!cli_stdout_ok()) break; /* the reader went away or the output is lost: main says which */
        if (k + 1 < n_gen && e0_decode(c, next, &e) < 0) status = cli_error("%s", e.msg);
    }
    if (!status) putchar('\n');
    if (!status && a->o.session.xc) print_stream_summary(&a->o.session, n + (int)n_gen);
    e0_sampler_free(s);
    free(ids);
    cli_unload(&a->o);
    return status;
}

/* -cnv / -i: llama.cpp's conversation mode is `chat` here. The same arguments go to chat, less
 * -cnv/-i; -p TEXT becomes the system prompt (llama.cpp's meaning of -p in conversation mode). */
static int to_chat(int argc, char **argv) {
    char **v = calloc((size_t)argc + 1, sizeof *v);
    if (!v) return cli_error("out of memory");
    int n = 0;
    v[n++] = "chat";
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-cnv") || !strcmp(f, "-i") || !strcmp(f, "--conversation") || !strcmp(f, "--interactive")) continue;
        v[n++] = !strcmp(f, "-p") || !strcmp(f, "--prompt") ? "--system" : argv[i];
    }
    fprintf(stderr, "note: run %s: starting a conversation (edge0-infer chat)\n", "-cnv");
    int rc = cmd_chat(n, v);
    free(v);
    return rc;
}

/* What streaming experts cost (when they stream): reads, cache and prediction hit rates, waits. */
static void print_stream_summary(const e0_session *ses, int n_tokens) {
    fprintf(stderr, "memory ledger peak: %.1f MiB (dense %.1f, experts %.1f, staging %.1f, KV %.1f, scratch %.1f)\n",
            e0_mem_total_peak() / 1048576.0, e0_mem_peak(E0_MEM_DENSE) / 1048576.0, e0_mem_peak(E0_MEM_EXPERTS) / 1048576.0,
            e0_mem_peak(E0_MEM_STAGING) / 1048576.0, e0_mem_peak(E0_MEM_KV) / 1048576.0, e0_mem_peak(E0_MEM_SCRATCH) / 1048576.0);
    if (e0_mem_peak(E0_MEM_RECURRENT))
        fprintf(stderr, "recurrent state (hybrid model's DeltaNet layers): %.1f MiB\n", e0_mem_peak(E0_MEM_RECURRENT) / 1048576.0);
    bool within = e0_mem_total_peak() <= ses->budget;
    fprintf(stderr, "memory: peak RSS %.1f MiB = the ledger's buffers as far as touched + code, libraries, thread stacks "
                    "and file pages mapped; ledger peak %.1f MiB = every engine buffer allocated, %s the budget of "
                    "%.1f MiB (%s)%s\n",
            gen_peak_rss() / 1048576.0, e0_mem_total_peak() / 1048576.0, within ? "within" : "ABOVE",
            ses->budget / 1048576.0, ses->budget_source ? ses->budget_source : "?",
            within ? "" : ": experts=resident or expert_slots given explicitly override it");
    if (!ses->xc) return;
    const e0_experts_stats *x = e0_experts_get_stats(ses->xc);
    uint64_t hits = 0, total = 0;
    for (int64_t il = 0; il < ses->m->hp.n_layer; il++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(ses->c, (int)il, &h, &t);
        hits += h;
        total += t;
    }
    char routing[512], slots[96];
    fprintf(stderr, "experts streamed (%s, %s%s%s): %.1f MB read (%.1f MB/token), %llu reads, "
                    "cache hit rate %.3f, prediction hit rate ",
            e0_session_slots_text(ses, slots, sizeof slots), ses->trace ? "routing: " : "", e0_session_routing_label(ses, routing, sizeof routing),
            ses->trace ? "" : " routing",
            x->bytes_read / 1e6, n_tokens ? x->bytes_read / 1e6 / n_tokens : 0.0, (unsigned long long)x->reads,
            x->requests ? (double)x->hits / (double)x->requests : 0.0);
    if (total) fprintf(stderr, "%.3f", (double)hits / (double)total);
    else fprintf(stderr, "n/a");
    fprintf(stderr, ", waited %.2f s for reads\n", x->wait_seconds);
}

int cmd_run(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-cnv") || !strcmp(argv[i], "-i") || !strcmp(argv[i], "--conversation") ||
            !strcmp(argv[i], "--interactive"))
            return to_chat(argc, argv);
    run_args a = {0};
    cli_gen_init(&a.g);
    int rc = parse(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.tokens || a.print_ids) return run_ids(&a);

    e0_err e;
    char *text = NULL;
    if (a.user_file && !(text = e0_read_file(a.user_file, 64 << 20, NULL, &e))) return cli_error("%s", e.msg);
    e0_model *m;
    e0_ctx *c;
    double t_load = e0_now();
    if (cli_load(&a.o, 0, &m, &c)) return free(text), 1;
    t_load = e0_now() - t_load;
    if (cli_gen_finish(&a.g, e0_ctx_n_ctx(c), m->hp.n_vocab)) return cli_unload(&a.o), free(text), 1;
    if (a.g.verbose) {
        json_t *cfg = e0_session_config_json(&a.o.session);
        char *j = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        fprintf(stderr, "config: %s\n", j ? j : "?");
        free(j);
        json_decref(cfg);
    }
    e0_tokenizer *tok = e0_model_tokenizer(m, &e);
    e0_prompt p = {0};
    e0_sampler *s = NULL;
    int status = 0;
    if (!tok) status = cli_error("%s", e.msg);
    else if (build_prompt(&a, m, tok, text ? text : a.prompt, &p, &e) < 0) status = cli_error("%s", e.msg);
    else if (!(s = e0_sampler_new(&a.g.sp, m->hp.n_vocab))) status = cli_error("out of memory");
    if (!status && a.g.verbose) fprintf(stderr, "prompt: %d tokens%s\n", p.n, p.templated ? " (chat template applied)" : "");
    double t_prompt = e0_now();
    if (!status && e0_eval(c, p.ids, p.n, NULL, &e) < 0) status = cli_error("%s", e.msg);
    t_prompt = e0_now() - t_prompt;
    if (!status) {
        for (int i = 0; i < p.n; i++) e0_sampler_accept(s, p.ids[i]);
        gen_opts go = {.n_predict = a.g.n_predict, .ignore_eos = a.g.ignore_eos, .stop = a.g.stop, .n_stop = a.g.n_stop,
                       .echo = true, .grammar = a.g.grammar};
        gen_result r;
        if (gen_run(c, tok, s, &go, &r, &e) < 0) status = cli_error("%s", e.msg);
        else {
            if (r.context_full) fprintf(stderr, "\n[context full: %d tokens; raise -c]", e0_ctx_n_ctx(c));
            char routing[512];
            const e0_session *ses = &a.o.session;
            fprintf(stderr, "\n\nload %.2f s | prompt %d tokens, %.2f s, %.1f tok/s | generated %d tokens, %.2f s, %.1f tok/s | "
                            "peak memory %.1f MiB%s%s%s\n",
                    t_load, p.n, t_prompt, p.n / t_prompt, r.n_generated, r.seconds,
                    r.seconds > 0 ? r.n_generated / r.seconds : 0.0, gen_peak_rss() / 1048576.0,
                    ses->trace ? " | ROUTING REPLAYED (" : "", ses->trace ? e0_session_routing_label(ses, routing, sizeof routing) : "",
                    ses->trace ? "; measurement only, the text means nothing)" : "");
            print_stream_summary(&a.o.session, p.n + r.n_generated);
        }
        free(r.text);
    }
    e0_sampler_free(s);
    e0_prompt_free(&p);
    e0_tokenizer_free(tok);
    cli_gen_free(&a.g);
    cli_unload(&a.o);
    free(text);
    return status;
}
