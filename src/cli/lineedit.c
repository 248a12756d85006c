/* lineedit.c — the user's lines for `chat` (see lineedit.h): libedit's editor and history on a
 * terminal, getline otherwise. libedit reads the keys through read_key below, which reads the
 * terminal itself so that a Ctrl-C (SIGINT, handled by the caller without SA_RESTART) ends the
 * read at once instead of being retried or re-raised by libedit. */
#include "lineedit.h"

#include <errno.h>
#include <histedit.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#define HISTORY_SIZE 500

struct le_reader {
    bool edit;
    const volatile sig_atomic_t *interrupt;
    EditLine *el;
    History *hist;
    const char *prompt;
    char *buf; /* the line returned */
    size_t cap;
};

static bool interrupted(const le_reader *r) { return r->interrupt && *r->interrupt; }

static char *prompt_of(EditLine *el) {
    le_reader *r = NULL;
    el_get(el, EL_CLIENTDATA, (void **)&r);
    return (char *)(r && r->prompt ? r->prompt : "");
}

/* One character (a whole UTF-8 sequence) from the terminal: 1, 0 at end of input, -1 on error or
 * when interrupted. Invalid bytes are skipped. */
static int read_key(EditLine *el, wchar_t *wc) {
    le_reader *r = NULL;
    el_get(el, EL_CLIENTDATA, (void **)&r);
    char b[MB_LEN_MAX];
    size_t n = 0;
    for (;;) {
        if (interrupted(r)) return -1;
        ssize_t k = read(STDIN_FILENO, b + n, 1);
        if (k < 0 && errno == EINTR) continue; /* the flag decides */
        if (k < 0) return -1;
        if (k == 0) return 0;
        n++;
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t m = mbrtowc(wc, b, n, &st);
        if (m == (size_t)-2 && n < sizeof b) continue; /* an incomplete sequence */
        if (m == (size_t)-1 || m == (size_t)-2) {
            n = 0;
            continue;
        }
        return 1;
    }
}

/* libedit edits wide characters through the C library: it needs a UTF-8 LC_CTYPE (only LC_CTYPE
 * is changed: numbers are still printed and parsed in the C locale). */
static void utf8_ctype(void) {
    const char *l = setlocale(LC_CTYPE, "");
    if (!l || strcmp(nl_langinfo(CODESET), "UTF-8")) setlocale(LC_CTYPE, "C.UTF-8");
}

le_reader *le_open(const char *prog, bool edit, const volatile sig_atomic_t *interrupt) {
    le_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->interrupt = interrupt;
    if (!edit) return r;
    utf8_ctype();
    HistEvent ev;
    if (!(r->el = el_init(prog, stdin, stdout, stderr)) || !(r->hist = history_init())) {
        le_close(r);
        return NULL;
    }
    r->edit = true;
    history(r->hist, &ev, H_SETSIZE, HISTORY_SIZE);
    history(r->hist, &ev, H_SETUNIQUE, 1);
    el_set(r->el, EL_CLIENTDATA, (void *)r);
    el_set(r->el, EL_EDITOR, "emacs");
    el_set(r->el, EL_SIGNAL, 0);
    el_set(r->el, EL_PROMPT, prompt_of);
    el_set(r->el, EL_HIST, history, r->hist);
    el_set(r->el, EL_GETCFN, read_key);
    el_source(r->el, NULL); /* the user's ~/.editrc, if any (e.g. "bind -v" for vi keys) */
    return r;
}

static int keep(le_reader *r, const char *s, size_t n, const char **line, size_t *len) {
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    if (n + 1 > r->cap) {
        char *p = realloc(r->buf, n + 1);
        if (!p) return LE_ERROR;
        r->buf = p;
        r->cap = n + 1;
    }
    memcpy(r->buf, s, n);
    r->buf[n] = 0;
    *line = r->buf;
    *len = n;
    return LE_LINE;
}

int le_read(le_reader *r, const char *prompt, const char **line, size_t *len, bool *empty) {
    *line = "";
    *len = 0;
    *empty = true;
    if (!r->edit) {
        ssize_t n = getline(&r->buf, &r->cap, stdin);
        if (n < 0) return interrupted(r) ? LE_INTERRUPT : ferror(stdin) ? LE_ERROR : LE_EOF;
        while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r')) r->buf[--n] = 0;
        *line = r->buf;
        *len = (size_t)n;
        return LE_LINE;
    }
    r->prompt = prompt;
    fflush(stdout);
    int n = 0;
    const char *s = el_gets(r->el, &n);
    if (interrupted(r)) {
        const LineInfo *li = el_line(r->el);
        *empty = !li || li->lastchar == li->buffer;
        el_reset(r->el); /* forget the half-typed line */
        fputs("\n", stdout);
        fflush(stdout);
        return LE_INTERRUPT;
    }
    if (!s) return n < 0 ? LE_ERROR : LE_EOF;
    return keep(r, s, (size_t)n, line, len);
}

void le_history_add(le_reader *r, const char *line) {
    if (!r->edit || !line[0]) return;
    HistEvent ev;
    history(r->hist, &ev, H_ENTER, line);
}

void le_close(le_reader *r) {
    if (!r) return;
    if (r->el) el_end(r->el);
    if (r->hist) history_end(r->hist);
    free(r->buf);
    free(r);
}
