/* cmd_chat.c — `chat`: an interactive conversation on stdin/stdout (a terminal or a pipe).
 * Every turn renders the whole conversation with the model's chat template, keeps the longest
 * prefix of tokens already in the KV cache and prefills only the rest. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/options.h"
#include "generate.h"
#include "text/prompt.h"

static void help(void) {
    puts("usage: edge0-infer chat -m F [--system TEXT] [-n N] [-c N] [-t N] [--temp T] [--top-k K] [--top-p P]\n"
         "                        [--min-p P] [--repeat-penalty R] [-s SEED]\n"
         "Reads one user message per line from stdin and answers on stdout.\n"
         "Commands: /reset (forget the conversation), /exit (or end of input).\n"
         "--verbose reports on stderr how many prompt tokens each turn prefilled.");
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

/* Prompt tokens of a conversation holding only the system message (if any) and this one; 0 when
 * it cannot be rendered. */
static size_t message_tokens(const e0_model *m, const e0_tokenizer *tok, const char *system, const char *msg, size_t len) {
    json_t *msgs = json_array();
    if (system) json_array_append_new(msgs, e0_chat_message("system", system, strlen(system)));
    json_array_append_new(msgs, e0_chat_message("user", msg, len));
    char *text = NULL;
    size_t text_len, n = 0;
    e0_tokens t = {0};
    e0_err e;
    if (e0_render_chat(m, tok, msgs, true, &text, &text_len, &e) == 0 && e0_tokenize_prompt(tok, text, text_len, true, &t, &e) == 0)
        n = t.n;
    free(text);
    e0_tokens_free(&t);
    json_decref(msgs);
    return n;
}

int cmd_chat(int argc, char **argv) {
    cli_model_opts o = {0};
    e0_sampler_params sp = e0_sampler_defaults();
    const char *system = NULL;
    int64_t n_predict = -1;
    bool seed_given = false, verbose = false;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *f = argv[i], *v;
        double d;
        int64_t n;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), 0;
        if (!strcmp(f, "--verbose")) {
            verbose = true;
            continue;
        }
        if (strcmp(f, "--system") && strcmp(f, "-n") && strcmp(f, "--temp") && strcmp(f, "--top-k") && strcmp(f, "--top-p") &&
            strcmp(f, "--min-p") && strcmp(f, "--repeat-penalty") && strcmp(f, "-s") && strcmp(f, "--seed"))
            return cli_error("chat: unknown option '%s' (see --help)", f);
        if (!(v = cli_value(argc, argv, &i))) return 1;
        if (!strcmp(f, "--system")) system = v;
        else if (!strcmp(f, "-n")) {
            if (e0_parse_i64(v, -1, 1 << 24, &n_predict, f, &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(f, "--top-k")) {
            if (e0_parse_i64(v, 0, 1 << 24, &n, f, &e) < 0) return cli_error("%s", e.msg);
            sp.top_k = (int)n;
        } else if (!strcmp(f, "-s") || !strcmp(f, "--seed")) {
            if (e0_parse_i64(v, 0, INT64_MAX, &n, f, &e) < 0) return cli_error("%s", e.msg);
            sp.seed = (uint64_t)n;
            seed_given = true;
        } else {
            if (e0_parse_f64(v, 0, !strcmp(f, "--temp") || !strcmp(f, "--repeat-penalty") ? 100 : 1, &d, f, &e) < 0)
                return cli_error("%s", e.msg);
            if (!strcmp(f, "--temp")) sp.temp = (float)d;
            else if (!strcmp(f, "--top-p")) sp.top_p = (float)d;
            else if (!strcmp(f, "--min-p")) sp.min_p = (float)d;
            else if (d <= 0) return cli_error("--repeat-penalty must be > 0");
            else sp.repeat_penalty = (float)d;
        }
    }
    if (!seed_given) sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&o, 0, &m, &c)) return 1;
    size_t tlen;
    e0_tokenizer *tok = e0_model_tokenizer(m, &e);
    e0_sampler *s = e0_sampler_new(&sp, m->hp.n_vocab);
    int status = 0;
    if (!tok) status = cli_error("%s", e.msg);
    else if (!e0_model_chat_template(m, &tlen)) status = cli_error("chat: the model has no chat template (use run --raw)");
    else if (!s) status = cli_error("out of memory");
    bool tty = isatty(STDIN_FILENO);
    json_t *msgs = json_array();
    if (system) json_array_append_new(msgs, e0_chat_message("system", system, strlen(system)));
    size_t n_sys = json_array_size(msgs);
    int32_t *cached = malloc((size_t)e0_ctx_n_ctx(c) * sizeof *cached); /* tokens in the KV cache */
    int n_cached = 0;
    char *line = NULL;
    size_t cap = 0;
    while (!status && cli_stdout_ok()) { /* a lost stdout ends the conversation (main reports it) */
        if (tty) fputs("> ", stdout), fflush(stdout);
        ssize_t len = getline(&line, &cap, stdin);
        if (len < 0) break;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            while (json_array_size(msgs) > n_sys) json_array_remove(msgs, json_array_size(msgs) - 1);
            n_cached = 0;
            e0_ctx_truncate(c, 0);
            e0_sampler_reset(s);
            printf("[conversation reset]\n");
            fflush(stdout);
            continue;
        }
        if (!len) continue;
        if (json_array_append_new(msgs, e0_chat_message("user", line, (size_t)len)) < 0) {
            status = cli_error("out of memory");
            break;
        }
        char *text = NULL;
        size_t text_len;
        e0_tokens t = {0};
        if (e0_render_chat(m, tok, msgs, true, &text, &text_len, &e) < 0 ||
            e0_tokenize_prompt(tok, text, text_len, true, &t, &e) < 0) {
            status = cli_error("%s", e.msg);
            free(text);
            e0_tokens_free(&t);
            break;
        }
        free(text);
        if ((int)t.n >= e0_ctx_n_ctx(c)) {
            /* not sent: the conversation stays as it was */
            json_array_remove(msgs, json_array_size(msgs) - 1);
            size_t alone = message_tokens(m, tok, system, line, (size_t)len);
            if (json_array_size(msgs) == n_sys || alone >= (size_t)e0_ctx_n_ctx(c))
                fprintf(stderr, "[the message is too long for the context (%zu tokens, context %d): not sent; raise -c or shorten it]\n",
                        alone ? alone : t.n, e0_ctx_n_ctx(c));
            else
                fprintf(stderr, "[the context is full (%zu of %d tokens with this message): /reset to start a new conversation]\n",
                        t.n, e0_ctx_n_ctx(c));
            e0_tokens_free(&t);
            continue;
        }
        /* Reuse the cached prefix; keep at least one new token so there are fresh logits. */
        int keep = 0;
        while (keep < n_cached && keep < (int)t.n - 1 && cached[keep] == t.ids[keep]) keep++;
        e0_ctx_truncate(c, keep);
        if (e0_eval(c, (int *)t.ids + keep, (int)t.n - keep, NULL, &e) < 0) {
            status = cli_error("%s", e.msg);
            e0_tokens_free(&t);
            break;
        }
        if (verbose) fprintf(stderr, "[prompt %zu tokens, %zu prefilled, %d reused from the cache]\n", t.n, t.n - (size_t)keep, keep);
        memcpy(cached, t.ids, t.n * sizeof *cached);
        n_cached = (int)t.n;
        e0_tokens_free(&t);
        gen_opts go = {.n_predict = n_predict, .echo = true};
        gen_result r;
        if (gen_run(c, tok, s, &go, &r, &e) < 0) {
            status = cli_error("%s", e.msg);
            free(r.text);
            break;
        }
        if (r.output_lost) {
            free(r.text);
            break;
        }
        printf("\n");
        if (r.context_full) printf("[the context is full: /reset to start a new conversation]\n");
        fflush(stdout);
        if (json_array_append_new(msgs, e0_chat_message("assistant", r.text, r.text_len)) < 0) status = cli_error("out of memory");
        /* The KV cache now also holds the generated tokens, but the next render may tokenize the
         * answer differently: only the prompt part is trusted as the cached prefix. */
        free(r.text);
    }
    free(line);
    free(cached);
    json_decref(msgs);
    e0_sampler_free(s);
    e0_tokenizer_free(tok);
    cli_unload(&o);
    return status;
}
