/* lineedit.h — reading the user's lines in `chat`. On a terminal: libedit (emacs key bindings,
 * arrow keys, in-memory history recalled with Up/Down); otherwise (a pipe, a file) plain line
 * reading with no prompt. Ctrl-C at the prompt arrives as a SIGINT whose handler (the caller's)
 * sets *interrupt: the read then ends with LE_INTERRUPT. */
#ifndef E0_LINEEDIT_H
#define E0_LINEEDIT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct le_reader le_reader;

enum { LE_LINE, LE_EOF, LE_INTERRUPT, LE_ERROR };

/* A reader of stdin; editing when `edit` (stdin and stdout are terminals). *interrupt is set by
 * the caller's SIGINT handler (may be NULL when there is none). NULL when out of memory. */
le_reader *le_open(const char *prog, bool edit, const volatile sig_atomic_t *interrupt);
/* Read one line, without its line end, into *line (valid until the next call). The prompt is
 * shown only when editing. LE_INTERRUPT: Ctrl-C at the prompt (*empty says whether the line was
 * empty then); LE_EOF: end of input (Ctrl-D on an empty line); LE_ERROR: a read error. */
int le_read(le_reader *r, const char *prompt, const char **line, size_t *len, bool *empty);
/* Add a line to the history (editing only; empty lines are not kept). */
void le_history_add(le_reader *r, const char *line);
void le_close(le_reader *r);

#endif
