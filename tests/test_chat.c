/* test_chat.c — `chat` at a terminal (issue 17), driven in a pseudo-terminal (forkpty): arrow-key
 * editing reaches the model as the edited text, Up recalls the previous line, Ctrl-C stops a reply
 * and the conversation goes on (a second Ctrl-C at the empty prompt exits 0, so does Ctrl-D),
 * commands are never sent to the model, the context shift drops the oldest turns and keeps the
 * system message; and through pipes: control messages on stderr only, a model without a chat
 * template asks for --chat-template-file. What the model receives is read from
 * --verbose-prompt (the rendered prompt, on stderr, which the test sends to a file). Model:
 * ../shared/golden/stories260K.gguf (no chat template) with a small template written here. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

static char dir[1024], bin[1024], model[1024], tmpl[1100];

#define TIMEOUT 60.0 /* seconds for anything to show up (the test machine may be busy) */

/* ---- a program in a pseudo-terminal: its stdin and stdout are the terminal, stderr a file ---- */
typedef struct pty_proc {
    pid_t pid;
    int fd;                /* the terminal's master side */
    char out[1 << 18];     /* everything written to the terminal */
    size_t n, mark;        /* bytes in out; where the next pty_expect starts looking */
    char err_path[1200];
    size_t err_mark;
    int status;            /* exit status once it exited, else -1 */
} pty_proc;

static pty_proc P;

static int pty_start(pty_proc *p, const char *args) {
    memset(p, 0, sizeof *p);
    p->status = -1;
    snprintf(p->err_path, sizeof p->err_path, "%s/stderr.txt", dir);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "exec %s chat -m %s --chat-template-file %s -t 1 --temp 0 --verbose-prompt %s 2>'%s'", bin, model,
             tmpl, args, p->err_path);
    struct winsize ws = {.ws_row = 50, .ws_col = 250}; /* wide: the echo of a line never wraps */
    p->pid = forkpty(&p->fd, NULL, NULL, &ws);
    if (p->pid < 0) return -1;
    if (p->pid == 0) {
        setenv("TERM", "xterm", 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return 0;
}

/* Read what the terminal has for up to ms milliseconds; notes the exit. */
static void pty_pump(pty_proc *p, int ms) {
    struct pollfd pf = {.fd = p->fd, .events = POLLIN};
    if (poll(&pf, 1, ms) > 0) {
        ssize_t k = read(p->fd, p->out + p->n, sizeof p->out - 1 - p->n);
        if (k > 0) p->n += (size_t)k;
        else if (ms) usleep((useconds_t)ms * 1000); /* EIO: the program is gone */
    }
    p->out[p->n] = 0;
    int st;
    if (p->status < 0 && waitpid(p->pid, &st, WNOHANG) == p->pid)
        p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait until the terminal shows `s` after the mark; the mark moves past it. */
static bool pty_expect(pty_proc *p, const char *s) {
    for (double t0 = t_now(); t_now() - t0 < TIMEOUT;) {
        const char *hit = strstr(p->out + p->mark, s);
        if (hit) {
            p->mark = (size_t)(hit - p->out) + strlen(s);
            return true;
        }
        if (p->status >= 0) {
            pty_pump(p, 0);
            if (!strstr(p->out + p->mark, s)) return false;
            continue;
        }
        pty_pump(p, 50);
    }
    return false;
}

/* stderr so far (NUL-terminated, static). */
static const char *err_text(const pty_proc *p) {
    static char buf[1 << 18];
    buf[0] = 0;
    FILE *f = fopen(p->err_path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}

/* Wait until stderr shows `s` after its mark; returns where (in err_text's buffer), or NULL. */
static const char *err_expect(pty_proc *p, const char *s) {
    for (double t0 = t_now(); t_now() - t0 < TIMEOUT;) {
        const char *e = err_text(p);
        const char *hit = strlen(e) > p->err_mark ? strstr(e + p->err_mark, s) : NULL;
        if (hit) {
            p->err_mark = (size_t)(hit - e) + strlen(s);
            return hit;
        }
        if (p->status >= 0) return NULL;
        pty_pump(p, 50);
    }
    return NULL;
}

/* Wait for the prompt `s` and for the editor to be reading keys: libedit prints the prompt, then
 * switches the terminal to raw mode (no ICANON) just before it reads; keys sent before that are
 * still handled by the kernel (echoed, and flushed by a Ctrl-C). On Linux the master side reports
 * the terminal's modes. */
static bool at_prompt(pty_proc *p, const char *s) {
    if (!pty_expect(p, s)) return false;
    for (double t0 = t_now(); t_now() - t0 < TIMEOUT && p->status < 0;) {
        struct termios tio;
        if (tcgetattr(p->fd, &tio) == 0 && !(tio.c_lflag & ICANON)) return true;
        pty_pump(p, 5);
    }
    return false;
}

static void pty_send(pty_proc *p, const char *keys) {
    size_t n = strlen(keys);
    if (write(p->fd, keys, n) != (ssize_t)n) printf("  write to the terminal failed\n");
}

/* Exit status within the timeout, or -1 (the program is then killed). */
static int pty_wait(pty_proc *p) {
    for (double t0 = t_now(); p->status < 0 && t_now() - t0 < TIMEOUT;) pty_pump(p, 50);
    if (p->status < 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    close(p->fd);
    return p->status;
}

/* The last rendered prompt on stderr (static copy), "" if none. */
static const char *last_prompt(const pty_proc *p) {
    static char buf[1 << 16];
    const char *e = err_text(p), *s = NULL;
    for (const char *q = e; (q = strstr(q, "[rendered prompt")); q++) s = q;
    const char *end = s ? strstr(s, "[end of prompt]") : NULL;
    size_t n = s && end ? (size_t)(end - s) : 0;
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, s ? s : "", n);
    buf[n] = 0;
    return buf;
}

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)); q += strlen(what)) n++;
    return n;
}

/* Type "helo", Left, "l", Enter: the model receives "hello". Ctrl-D at the prompt exits 0. */
static void test_arrow_key_editing(void) {
    CHECK(pty_start(&P, "-n 4") == 0);
    CHECKF(err_expect(&P, "/help for commands"), "no start-up hint: %s", err_text(&P));
    CHECKF(at_prompt(&P, "> "), "no prompt: %s", P.out);
    pty_send(&P, "helo\x1b[Dl\r");
    CHECKF(err_expect(&P, "[end of prompt]"), "no turn: %s", err_text(&P));
    const char *pr = last_prompt(&P);
    CHECKF(strstr(pr, "user: hello\n") && !strstr(pr, "helo"), "the model received: %s", pr);
    CHECKF(!strstr(P.out, "^[[D") && !strstr(err_text(&P), "^[[D"), "the arrow key was taken as text: %s", P.out);
    CHECKF(at_prompt(&P, "\n> "), "no prompt after the reply: %s", P.out + P.mark);
    pty_send(&P, "\x04");
    CHECKF(pty_wait(&P) == 0, "Ctrl-D: exit status %d", P.status);
}

/* Up recalls the previous line (sent again as is); /help is answered on stderr, never sent. */
static void test_history_and_help(void) {
    CHECK(pty_start(&P, "-n 4") == 0);
    CHECK(at_prompt(&P, "> "));
    pty_send(&P, "first line\r");
    CHECK(err_expect(&P, "[end of prompt]"));
    CHECK(at_prompt(&P, "\n> "));
    pty_send(&P, "/help\r");
    CHECKF(err_expect(&P, "/reset"), "/help: %s", err_text(&P));
    CHECK(at_prompt(&P, "> "));
    pty_send(&P, "\x1b[A\x1b[A\r"); /* Up twice: past /help to "first line" */
    CHECK(err_expect(&P, "[end of prompt]"));
    const char *pr = last_prompt(&P);
    CHECKF(count(pr, "user: first line\n") == 2, "the second turn: %s", pr);
    CHECKF(!strstr(pr, "/help"), "/help was sent to the model: %s", pr);
    CHECK(at_prompt(&P, "\n> "));
    pty_send(&P, "/exit\r");
    CHECKF(pty_wait(&P) == 0, "/exit: exit status %d", P.status);
}

/* Ctrl-C during a long reply stops it; the process lives on, the partial reply stays in the
 * conversation and the next turn works; Ctrl-C at the empty prompt then exits 0. */
static void test_ctrl_c_mid_reply(void) {
    CHECK(pty_start(&P, "-n 1500") == 0);
    CHECK(at_prompt(&P, "> "));
    pty_send(&P, "tell me a story\r");
    CHECK(err_expect(&P, "[end of prompt]"));
    CHECK(pty_expect(&P, "story\r\n")); /* the echo of the line */
    size_t start = P.mark;
    for (double t0 = t_now(); P.n < start + 10 && t_now() - t0 < TIMEOUT && P.status < 0;) pty_pump(&P, 20);
    CHECKF(P.n >= start + 10, "no reply: %s", P.out + start);
    pty_send(&P, "\x03");
    CHECKF(err_expect(&P, "[reply stopped"), "Ctrl-C did not stop the reply: %s", err_text(&P));
    CHECKF(P.status < 0 && kill(P.pid, 0) == 0, "the program ended (status %d)", P.status);
    CHECKF(at_prompt(&P, "> "), "no prompt after Ctrl-C");
    pty_send(&P, "again\r");
    CHECKF(err_expect(&P, "[end of prompt]"), "no second turn: %s", err_text(&P));
    const char *pr = last_prompt(&P);
    const char *a = strstr(pr, "user: tell me a story\nassistant: "), *b = strstr(pr, "user: again\nassistant:");
    CHECKF(a && b && b > a + strlen("user: tell me a story\nassistant: ") + 5, "the second turn: %s", pr);
    CHECK(pty_expect(&P, "again\r\n")); /* past the echo: the 10 bytes below are the reply's (not a Ctrl-C in prefill) */
    for (double t0 = t_now(); P.n < P.mark + 10 && t_now() - t0 < TIMEOUT && P.status < 0;) pty_pump(&P, 20);
    pty_send(&P, "\x03"); /* stops the second reply */
    CHECK(err_expect(&P, "[reply stopped"));
    CHECK(at_prompt(&P, "> "));
    pty_send(&P, "\x03"); /* at the empty prompt: exit */
    CHECKF(pty_wait(&P) == 0, "Ctrl-C at the empty prompt: exit status %d", P.status);
}

/* A multi-line message (lines ending in \) is one message, UTF-8 text passes through the editor;
 * a Ctrl-C with text typed only clears the line. */
static void test_multiline(void) {
    CHECK(pty_start(&P, "-n 4") == 0);
    CHECK(at_prompt(&P, "> "));
    pty_send(&P, "some text");
    CHECK(pty_expect(&P, "some text")); /* read and echoed: a Ctrl-C now finds it on the line */
    pty_send(&P, "\x03");
    CHECK(at_prompt(&P, "> "));
    CHECKF(P.status < 0, "Ctrl-C with text typed ended the program");
    pty_send(&P, "one\\\r");
    CHECKF(at_prompt(&P, "... "), "no continuation prompt: %s", P.out + P.mark);
    pty_send(&P, "two caf\xc3\xa9\r"); /* UTF-8 reaches the model as typed */
    CHECK(err_expect(&P, "[end of prompt]"));
    const char *pr = last_prompt(&P);
    CHECKF(strstr(pr, "user: one\ntwo caf\xc3\xa9\nassistant:") && !strstr(pr, "some text"), "%s", pr);
    CHECK(at_prompt(&P, "\n> "));
    pty_send(&P, "\x04");
    CHECK(pty_wait(&P) == 0);
}

/* A small context (-c 160): turns are dropped from the oldest, the system message stays, every
 * message is answered and each prompt leaves room for the reply (-n 8). */
static void test_context_shift(void) {
    CHECK(pty_start(&P, "-n 8 -c 160 --system KEEPME") == 0);
    CHECK(at_prompt(&P, "> "));
    char line[64];
    for (int i = 1; i <= 8; i++) {
        snprintf(line, sizeof line, "message number %d\r", i);
        pty_send(&P, line);
        CHECKF(err_expect(&P, "[end of prompt]"), "turn %d: %s", i, err_text(&P));
        const char *pr = last_prompt(&P);
        int n = atoi(pr + strlen("[rendered prompt, "));
        CHECKF(n > 0 && n + 8 <= 160, "turn %d: %d prompt tokens", i, n);
        CHECKF(strstr(pr, "system: KEEPME\n"), "turn %d lost the system message: %s", i, pr);
        snprintf(line, sizeof line, "user: message number %d\n", i);
        CHECKF(strstr(pr, line), "turn %d: %s", i, pr);
        CHECK(at_prompt(&P, "\n> "));
    }
    const char *e = err_text(&P), *pr = last_prompt(&P);
    CHECKF(strstr(e, "[context shift: "), "no context shift: %s", e);
    CHECKF(!strstr(pr, "message number 1\n") && strstr(pr, "message number 7\n"), "the last prompt: %s", pr);
    pty_send(&P, "\x04");
    CHECK(pty_wait(&P) == 0);
}

/* Through pipes: control messages on stderr, the model's text alone on stdout, no hint. */
static void test_pipe_streams(void) {
    char cmd[8192], out[8192], err_path[1200];
    snprintf(err_path, sizeof err_path, "%s/pipe-stderr.txt", dir);
    snprintf(cmd, sizeof cmd,
             "printf 'hi\\n/help\\n/reset\\nhi\\n/exit\\nnot read\\n' | %s chat -m %s --chat-template-file %s -t 1 -n 4 --temp 0"
             " 2>'%s'",
             bin, model, tmpl, err_path);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    snprintf(P.err_path, sizeof P.err_path, "%s", err_path);
    const char *e = err_text(&P);
    CHECKF(!strchr(out, '[') && !strstr(out, "commands"), "stdout: %s", out);
    CHECKF(count(out, "\n") == 2, "two answers: %s", out);
    CHECKF(strstr(e, "[conversation reset]") && strstr(e, "/reset") && !strstr(e, "Ctrl-D exits"), "stderr: %s", e);
}

/* No chat template and no --chat-template-file: one clear line naming the flag, exit 1. */
static void test_no_template(void) {
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "echo hi | %s chat -m %s -n 4 2>&1", bin, model);
    int rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 1 && count(out, "\n") == 1 && strstr(out, "--chat-template-file"), "rc %d: %s", rc, out);
    snprintf(cmd, sizeof cmd, "echo hi | %s chat -m %s --chat-template-file %s/missing.jinja 2>&1", bin, model, dir);
    rc = t_sh(cmd, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "missing.jinja"), "rc %d: %s", rc, out);
}

int main(void) {
    char build[PATH_MAX], shared[PATH_MAX];
    if (!t_need_shared("golden/stories260K.gguf", NULL)) return T_DONE();
    if (!realpath(t_build(), build) || !realpath(t_shared(), shared)) {
        printf("FAIL setup: no %s or %s\n", t_build(), t_shared());
        return 1;
    }
    snprintf(dir, sizeof dir, "%.900s/test-chat", build);
    snprintf(bin, sizeof bin, "%.900s/bin/edge0-infer", build);
    snprintf(model, sizeof model, "%.900s/golden/stories260K.gguf", shared);
    snprintf(tmpl, sizeof tmpl, "%s/simple.jinja", dir);
    mkdir(dir, 0755);
    FILE *f = fopen(tmpl, "w");
    if (!f) {
        printf("FAIL setup: cannot write %s\n", tmpl);
        return 1;
    }
    fputs("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
          "{% if add_generation_prompt %}assistant:{% endif %}", f);
    fclose(f);
    RUN(test_arrow_key_editing);
    RUN(test_history_and_help);
    RUN(test_ctrl_c_mid_reply);
    RUN(test_multiline);
    RUN(test_context_shift);
    RUN(test_pipe_streams);
    RUN(test_no_template);
    return T_DONE();
}
