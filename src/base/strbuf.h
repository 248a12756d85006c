/* strbuf.h — a growing NUL-terminated text buffer (generated text in the CLI, the Markdown and SVG
 * reports of edge0-bench). Start from {0}. An append that runs out of memory sets `oom` and
 * leaves the text as it was; later appends do nothing, and e0_sb_take() then gives NULL. */
#ifndef E0_STRBUF_H
#define E0_STRBUF_H

#include <stddef.h>

typedef struct e0_strbuf {
    char *p;    /* the text, NUL-terminated once anything was added; NULL before */
    size_t len; /* bytes of text, without the NUL */
    size_t cap;
    int oom;
} e0_strbuf;

/* Append n bytes of s; -1 on out of memory (now or before). */
int e0_sb_add(e0_strbuf *b, const char *s, size_t n);
/* Append printf-formatted text. */
void e0_sb_printf(e0_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (caller frees; "" when nothing was added), or NULL (and freed) after out of memory. */
char *e0_sb_take(e0_strbuf *b);

#endif
