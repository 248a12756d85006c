/* cmd_chat.c — `chat`: a conversation on stdin/stdout (a terminal or a pipe). Every turn renders
 * the whole conversation with the chat template (the model's, or --chat-template-file), keeps
 * the longest prefix of tokens already in the KV cache and prefills only the rest. The model's
 * text alone goes to stdout; every control message (hint, /help, notices, errors) to stderr.
 * At a terminal: line editing and history (lineedit.c), Ctrl-C stops a reply (SIGINT sets a flag
 * that the prefill and the generation loop check), commands (/help, /reset, /exit, /quit) are
 * never sent to the model, a line ending in \ continues the message, and when the context is
 * full the oldest turns are dropped (context shift; the system message stays). */
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "cli.h"
#include "engine/options.h"
#include "generate.h"
#include "lineedit.h"
#include "text/jinja/jinja.h"
#include "text/prompt.h"

#define MAX_TEMPLATE_BYTES (4u << 20)

static void help(void) {
    puts("usage: edge0-infer chat -m F [-sys TEXT] [--chat-template-file F] [-n N] [-c N] [-t N] [sampling flags]\n"
         "A conversation: one user message per line from stdin, the answers on stdout; control messages\n"
         "(hints, notices, errors) go to stderr.\n"
         "The system message (-sys) is kept through context shifts; -n is the most tokens per reply;\n"
         "--chat-template-file F is for a model without a template (or to override the model's);\n"
         "-v/--verbose reports on stderr how many prompt tokens each turn prefilled.\n"
         "  --verbose-prompt          print each turn's rendered prompt on stderr\n"
         "Commands (a line by itself, never sent to the model): /help, /reset (forget the conversation),\n"
         "/exit or /quit (or end of input). A line ending in \\ continues the message on the next line.\n"
         "At a terminal: line editing and history (arrow keys, Up/Down; ~/.editrc is read), Ctrl-C stops a\n"
         "reply (the part already written stays in the conversation), Ctrl-C at an empty prompt or Ctrl-D exits.\n"
         "Context shift: when the conversation, the new message and room for the reply (-n, or a quarter of\n"
         "the context, at most half) do not fit in the context (-c), the oldest turns are dropped (the\n"
         "system message stays) and the conversation is prefilled again; a single message longer than\n"
         "the context is refused.");
    fputs(cli_gen_help, stdout);
    puts("common model flags: -m/--model F, -t/--threads N, -c/--ctx-size N, -b/--batch-size N (prefill chunk), and");
    fputs(e0_options_help(), stdout);
    cli_kv_flags_help();
}

static const char HINT[] = "chat: type a message and press Enter; /help for commands; Ctrl-C stops a reply; Ctrl-D exits";
static const char COMMANDS[] =
    "commands: /help this text; /reset forget the conversation (the system message stays); /exit or /quit leave\n"
    "  a line ending in \\ continues the message on the next line; Ctrl-C stops a reply (kept in the conversation);\n"
    "  Ctrl-C at an empty prompt, or Ctrl-D, exits";

/* Set by the SIGINT handler (at a terminal); cleared before each prompt. */
static volatile sig_atomic_t g_interrupt;
static void on_sigint(int sig) {
    (void)sig;
    g_interrupt = 1;
}

/* A control message on stderr, after whatever the model wrote. */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    fflush(stdout);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

typedef struct chat {
    e0_ctx *c;
    const e0_tokenizer *tok;
    e0_sampler *s;
    const char *tmpl; /* the chat template */
    size_t tlen;
    json_t *msgs;     /* the conversation: [system], user, assistant, user, ... */
    size_t n_sys;     /* 1 with a system message, else 0 */
    int32_t *cached;  /* the tokens in the KV cache */
    int n_cached;
    const cli_gen_flags *g; /* sampling, -n, stop strings, --ignore-eos */
    bool verbose, verbose_prompt;
} chat;

static const char *special_text(const e0_tokenizer *tok, int32_t id) {
    size_t len;
    const char *t = id >= 0 ? e0_tok_text(tok, id, &len) : NULL;
    return t ? t : "";
}

/* Render `msgs` with the generation prompt and tokenize; *text (may be NULL) gets the text. */
static int render(const chat *ch, const json_t *msgs, e0_tokens *t, char **text_out, e0_err *e) {
    char *text = NULL;
    size_t len;
    memset(t, 0, sizeof *t);
    int rc = jinja_render_chat(ch->tmpl, ch->tlen, msgs, true, special_text(ch->tok, e0_tok_bos(ch->tok)),
                               special_text(ch->tok, e0_tok_eos(ch->tok)), &text, &len, e);
    if (rc == 0) rc = e0_tokenize_prompt(ch->tok, text, len, true, t, e);
    if (rc < 0) e0_tokens_free(t);
    if (rc == 0 && text_out) *text_out = text;
    else free(text);
    return rc;
}

/* Prompt tokens of the system message (if any) and this user message alone; -1 on error. */
static long alone_tokens(const chat *ch, const char *msg, size_t len, e0_err *e) {
    json_t *msgs = json_array();
    if (!msgs) return e0_fail(e, "out of memory");
    if (ch->n_sys) json_array_append(msgs, json_array_get(ch->msgs, 0));
    json_array_append_new(msgs, e0_chat_message("user", msg, len));
    long n = -1;
    e0_tokens t;
    if (json_array_size(msgs) != ch->n_sys + 1) e0_fail(e, "out of memory");
    else if (render(ch, msgs, &t, NULL, e) == 0) n = (long)t.n, e0_tokens_free(&t);
    json_decref(msgs);
    return n;
}

/* Forget the conversation (the system message stays). */
static void chat_reset(chat *ch) {
    while (json_array_size(ch->msgs) > ch->n_sys) json_array_remove(ch->msgs, json_array_size(ch->msgs) - 1);
    ch->n_cached = 0;
    e0_ctx_truncate(ch->c, 0);
    e0_sampler_reset(ch->s);
}

/* Drop the oldest turn (its user message and the replies up to the next user message). */
static void drop_oldest_turn(chat *ch) {
    json_array_remove(ch->msgs, ch->n_sys);
    while (json_array_size(ch->msgs) > ch->n_sys + 1) {
        const char *role = json_string_value(json_object_get(json_array_get(ch->msgs, ch->n_sys), "role"));
        if (role && !strcmp(role, "user")) break;
        json_array_remove(ch->msgs, ch->n_sys);
    }
}

/* One turn: the user's message, then the reply on stdout. 0 (also when the message was refused
 * or the turn interrupted), 1 when stdout was lost, -1 on an error (in e). */
static int chat_turn(chat *ch, const char *msg, size_t len, e0_err *e) {
    const int n_ctx = e0_ctx_n_ctx(ch->c);
    long alone = alone_tokens(ch, msg, len, e);
    if (alone < 0) return -1;
    if (alone >= n_ctx) { /* not sent: the conversation stays as it was */
        note("[the message is too long for the context (%ld tokens, context %d): not sent; raise -c or shorten it]", alone,
             n_ctx);
        return 0;
    }
    if (json_array_append_new(ch->msgs, e0_chat_message("user", msg, len)) < 0) return e0_fail(e, "out of memory");
    /* Context shift: drop the oldest turns until the prompt and room for the reply fit. */
    int64_t room = ch->g->n_predict >= 0 ? ch->g->n_predict : n_ctx / 4;
    if (room > n_ctx / 2) room = n_ctx / 2;
    e0_tokens t;
    char *text = NULL;
    int dropped = 0;
    for (;;) {
        if (render(ch, ch->msgs, &t, &text, e) < 0) {
            json_array_remove(ch->msgs, json_array_size(ch->msgs) - 1);
            return -1;
        }
        if ((int64_t)t.n + room <= n_ctx || json_array_size(ch->msgs) <= ch->n_sys + 1) break;
        e0_tokens_free(&t);
        free(text);
        drop_oldest_turn(ch);
        dropped++;
    }
    if (dropped)
        note("[context shift: the %d oldest turn%s dropped to make room (the system message stays); prefilling again]", dropped,
             dropped == 1 ? " was" : "s were");
    if (ch->verbose_prompt) note("[rendered prompt, %zu tokens]\n%s\n[end of prompt]", t.n, text);
    free(text);
    /* Reuse the cached prefix; keep at least one new token so there are fresh logits. The prefill
     * goes in batch-sized pieces (as e0_eval does it) so that Ctrl-C can stop it between them. */
    int keep = 0;
    while (keep < ch->n_cached && keep < (int)t.n - 1 && ch->cached[keep] == t.ids[keep]) keep++;
    e0_ctx_truncate(ch->c, keep);
    keep = e0_ctx_pos(ch->c); /* sliding-window models and a recurrent state (hybrid models) may restart at 0 */
    memcpy(ch->cached, t.ids, t.n * sizeof *ch->cached);
    const int B = e0_ctx_n_batch(ch->c), n_tok = (int)t.n;
    int done = keep;
    while (done < n_tok && !g_interrupt) {
        int n = n_tok - done < B ? n_tok - done : B;
        if (e0_eval(ch->c, (int *)t.ids + done, n, NULL, e) < 0) {
            ch->n_cached = 0;
            e0_tokens_free(&t);
            return -1;
        }
        done += n;
    }
    ch->n_cached = done; /* what the KV cache holds of t */
    e0_tokens_free(&t);
    if (done < n_tok) { /* Ctrl-C during the prefill: the message is withdrawn */
        json_array_remove(ch->msgs, json_array_size(ch->msgs) - 1);
        note("[interrupted before the reply: the message was not sent]");
        return 0;
    }
    if (ch->verbose) note("[prompt %d tokens, %d prefilled, %d reused from the cache]", n_tok, n_tok - keep, keep);
    gen_opts go = {.n_predict = ch->g->n_predict, .ignore_eos = ch->g->ignore_eos, .stop = ch->g->stop,
                   .n_stop = ch->g->n_stop, .echo = true, .cancel = &g_interrupt, .grammar = ch->g->grammar};
    /* Hybrid models keep their recurrent state only when the next prompt extends everything
     * evaluated, so the reply's evaluated ids count as cached too (the next render's prefix
     * comparison still decides what is reused). Other models trust only the prompt part. */
    const bool recurrent = e0_ctx_recurrent_bytes(ch->c) > 0;
    if (recurrent) {
        go.record = ch->cached + n_tok;
        go.record_cap = n_ctx - n_tok;
    }
    gen_result r;
    if (gen_run(ch->c, ch->tok, ch->s, &go, &r, e) < 0) {
        free(r.text);
        return -1;
    }
    if (r.output_lost) {
        free(r.text);
        return 1;
    }
    if (recurrent && e0_ctx_pos(ch->c) == ch->n_cached + r.n_recorded) ch->n_cached += r.n_recorded;
    printf("\n");
    if (r.cancelled) note("[reply stopped: kept in the conversation; Ctrl-C again at the empty prompt, or Ctrl-D, exits]");
    if (r.context_full)
        note("[the reply reached the end of the context (%d tokens): the oldest turns make room for the next message]", n_ctx);
    int rc = 0;
    if (json_array_append_new(ch->msgs, e0_chat_message("assistant", r.text, r.text_len)) < 0) rc = e0_fail(e, "out of memory");
    /* The KV cache now also holds the generated tokens, but the next render may tokenize the
     * answer differently: only the prompt part is trusted as the cached prefix. */
    free(r.text);
    return rc;
}

/* A command is a line by itself of the form /word. */
static bool is_command(const char *s) {
    if (s[0] != '/' || !s[1]) return false;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) return false;
    return true;
}

/* Read one message (lines ending in \ continue it) into msg: LE_LINE, LE_EOF, LE_INTERRUPT
 * (*empty: at an empty first prompt), LE_ERROR. At end of input a continued message is sent. */
static int read_message(le_reader *in, e0_strbuf *msg, bool *empty) {
    msg->len = 0;
    if (e0_sb_add(msg, "", 0) < 0) return LE_ERROR;
    for (bool first = true;; first = false) {
        const char *line;
        size_t len;
        bool was_empty;
        int rc = le_read(in, first ? "> " : "... ", &line, &len, &was_empty);
        if (rc == LE_INTERRUPT) *empty = first && was_empty;
        if (rc == LE_EOF && !first) return LE_LINE;
        if (rc != LE_LINE) return rc;
        le_history_add(in, line);
        bool more = len > 0 && line[len - 1] == '\\';
        if (e0_sb_add(msg, line, more ? len - 1 : len) < 0 || (more && e0_sb_add(msg, "\n", 1) < 0)) return LE_ERROR;
        if (!more) return LE_LINE;
    }
}

int cmd_chat(int argc, char **argv) {
    cli_model_opts o = {0};
    cli_gen_flags g;
    cli_gen_init(&g);
    bool verbose_prompt = false;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r == 0) r = cli_gen_flag(&g, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return help(), 0;
        if (!strcmp(f, "--verbose-prompt")) {
            verbose_prompt = true;
            continue;
        }
        return cli_error("chat: unknown option '%s' (see --help)", f);
    }
    const char *system = g.system, *template_file = g.chat_template_file;
    char *file_tmpl = NULL;
    size_t file_tlen = 0;
    if (template_file && !(file_tmpl = e0_read_file(template_file, MAX_TEMPLATE_BYTES, &file_tlen, &e)))
        return cli_error("--chat-template-file: %s", e.msg);
    e0_model *m;
    e0_ctx *c;
    if (cli_load(&o, 0, &m, &c)) return free(file_tmpl), 1;
    if (cli_gen_finish(&g, e0_ctx_n_ctx(c), m->hp.n_vocab)) return cli_unload(&o), free(file_tmpl), 1;
    chat ch = {.c = c, .g = &g, .verbose = g.verbose, .verbose_prompt = verbose_prompt};
    e0_tokenizer *tok = e0_model_tokenizer(m, &e);
    ch.tok = tok;
    ch.s = e0_sampler_new(&g.sp, m->hp.n_vocab);
    ch.tmpl = file_tmpl ? file_tmpl : e0_model_chat_template(m, &ch.tlen);
    if (file_tmpl) ch.tlen = file_tlen;
    ch.msgs = json_array();
    ch.cached = malloc((size_t)e0_ctx_n_ctx(c) * sizeof *ch.cached);
    int status = 0;
    if (!tok) status = cli_error("%s", e.msg);
    else if (!ch.tmpl)
        status = cli_error("chat: the model has no chat template: give one with --chat-template-file F (a Jinja file), "
                           "or use run --raw");
    else if (!ch.s || !ch.msgs || !ch.cached) status = cli_error("out of memory");
    else if (system && json_array_append_new(ch.msgs, e0_chat_message("system", system, strlen(system))) < 0)
        status = cli_error("out of memory");
    ch.n_sys = ch.msgs ? json_array_size(ch.msgs) : 0;
    if (!status && alone_tokens(&ch, "hi", 2, &e) < 0) /* a template that cannot render is said up front */
        status = cli_error("chat: the chat template%s%s does not render: %s", template_file ? " in " : "",
                           template_file ? template_file : "", e.msg);
    /* At a terminal: Ctrl-C sets g_interrupt (no SA_RESTART: a blocked read returns). Editing
     * only when the prompt and the echo can go to a terminal too. */
    bool tty = isatty(STDIN_FILENO);
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    bool handler = !status && tty && sigaction(SIGINT, &sa, &old_sa) == 0;
    le_reader *in = status ? NULL : le_open("edge0-infer", tty && isatty(STDOUT_FILENO), &g_interrupt);
    if (!status && !in) status = cli_error("out of memory");
    if (!status && tty) note("%s", HINT);
    e0_strbuf msg = {0};
    while (!status && cli_stdout_ok()) { /* a lost stdout ends the conversation (main reports it) */
        g_interrupt = 0;
        bool empty = false;
        int rr = read_message(in, &msg, &empty);
        if (rr == LE_EOF) {
            if (tty) fputs("\n", stdout);
            break;
        }
        if (rr == LE_ERROR) {
            status = cli_error("chat: cannot read the input");
            break;
        }
        if (rr == LE_INTERRUPT) {
            if (empty) break; /* Ctrl-C at an empty prompt: leave */
            continue;         /* a half-typed message is dropped */
        }
        if (is_command(msg.p)) {
            if (!strcmp(msg.p, "/exit") || !strcmp(msg.p, "/quit")) break;
            if (!strcmp(msg.p, "/help")) note("%s", COMMANDS);
            else if (!strcmp(msg.p, "/reset")) {
                chat_reset(&ch);
                note("[conversation reset]");
            } else note("[unknown command %s: /help lists the commands]", msg.p);
            continue;
        }
        if (!msg.len) continue;
        /* During the turn Ctrl-C only sets the flag: with SA_RESTART a write to a full terminal
         * that it interrupts goes on instead of failing with EINTR (stdio would drop the rest of
         * the reply and the turn would end as if stdout were lost). */
        struct sigaction turn_sa = sa;
        turn_sa.sa_flags |= SA_RESTART;
        if (handler) sigaction(SIGINT, &turn_sa, NULL);
        int r = chat_turn(&ch, msg.p, msg.len, &e);
        if (handler) sigaction(SIGINT, &sa, NULL);
        if (r < 0) status = cli_error("%s", e.msg);
        if (r) break;
    }
    if (handler) sigaction(SIGINT, &old_sa, NULL);
    free(msg.p);
    le_close(in);
    free(ch.cached);
    json_decref(ch.msgs);
    e0_sampler_free(ch.s);
    e0_tokenizer_free(tok);
    free(file_tmpl);
    cli_gen_free(&g);
    cli_unload(&o);
    return status;
}
