/* cmd_tokenize.c — `tokenize` (stdin text -> ids) and `detokenize` (ids from --ids or stdin ->
 * text). Both load only the model's tokenizer metadata, never its weights. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf/gguf.h"
#include "text/tokenizer.h"

#define MAX_STDIN (256u << 20)

static const char tokenize_usage[] =
    "usage: edge0-infer tokenize --model F [--no-bos] [--parse-special] [--pieces]\n"
    "\n"
    "Reads UTF-8 text from stdin to EOF (every byte, nothing stripped) and prints its token ids\n"
    "space-separated on one line.\n"
    "  --model F          GGUF file whose tokenizer to use (only its metadata is read)\n"
    "  --no-bos           do not add BOS/EOS even if the vocabulary asks for them\n"
    "  --parse-special    recognise control tokens such as <|im_end|> written in the text\n"
    "  --pieces           print one token per line instead: id, a tab, and its piece in double\n"
    "                     quotes with \\\\ \\\" \\n \\r \\t and \\xNN escapes (control tokens shown\n"
    "                     as their text)\n";

static const char detokenize_usage[] =
    "usage: edge0-infer detokenize --model F [--ids \"1 2 3\"] [--special]\n"
    "\n"
    "Prints the text of the ids exactly (no newline added). The ids are separated by commas and/or\n"
    "white space (tokenize's output as it is); without --ids they are read from stdin.\n"
    "Control tokens print nothing unless --special; a SentencePiece vocabulary's leading space\n"
    "(after an optional BOS) is dropped.\n";

static gguf_file *open_model(const char *path, e0_tokenizer **t) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    if (!f) {
        cli_error("%s", e.msg);
        return NULL;
    }
    *t = e0_tokenizer_from_gguf(f, &e);
    if (!*t) {
        cli_error("%s: %s", path, e.msg);
        gguf_close(f);
        return NULL;
    }
    return f;
}

static void print_escaped(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20 || c == 0x7F) printf("\\x%02X", c);
        else putchar(c); /* bytes >= 0x80 as they are (UTF-8 stays readable) */
    }
    putchar('"');
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL;
    bool no_bos = false, parse_special = false, pieces = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(tokenize_usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--model") || !strcmp(argv[i], "-m")) {
            if (!(model = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--no-bos")) {
            no_bos = true;
        } else if (!strcmp(argv[i], "--parse-special")) {
            parse_special = true;
        } else if (!strcmp(argv[i], "--pieces")) {
            pieces = true;
        } else {
            cli_error("tokenize: unknown option '%s'", argv[i]);
            fputs(tokenize_usage, stderr);
            return 1;
        }
    }
    if (!model) {
        cli_error("tokenize: --model is required");
        fputs(tokenize_usage, stderr);
        return 1;
    }
    e0_tokenizer *t;
    gguf_file *f = open_model(model, &t);
    if (!f) return 1;
    size_t len;
    char *text = cli_read_stdin("tokenize", MAX_STDIN, &len);
    int rc = 1;
    e0_tokens ids = {0};
    e0_err e;
    if (!text) goto done;
    if (e0_tokenize(t, text, len, !no_bos, parse_special, &ids, &e) < 0) {
        cli_error("tokenize: %s", e.msg);
        goto done;
    }
    for (size_t i = 0; i < ids.n; i++) {
        if (pieces) {
            size_t pl;
            const char *p = e0_tok_piece(t, ids.ids[i], true, &pl);
            printf("%d\t", ids.ids[i]);
            print_escaped(p, pl);
            putchar('\n');
        } else {
            printf(i ? " %d" : "%d", ids.ids[i]);
        }
    }
    if (!pieces) putchar('\n');
    rc = 0; /* write errors on stdout: checked at exit (main.c) */
done:
    free(text);
    e0_tokens_free(&ids);
    e0_tokenizer_free(t);
    gguf_close(f);
    return rc;
}

int cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *list = NULL;
    bool special = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(detokenize_usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--model") || !strcmp(argv[i], "-m")) {
            if (!(model = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--ids")) {
            if (!(list = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--special")) {
            special = true;
        } else {
            cli_error("detokenize: unknown option '%s'", argv[i]);
            fputs(detokenize_usage, stderr);
            return 1;
        }
    }
    if (!model) {
        cli_error("detokenize: --model is required");
        fputs(detokenize_usage, stderr);
        return 1;
    }
    e0_err e;
    int *ids = NULL, n = 0;
    char *input = NULL;
    size_t input_len;
    if (!list && !(list = input = cli_read_stdin("detokenize", MAX_STDIN, &input_len))) return 1;
    if (input && memchr(input, 0, input_len)) {
        free(input);
        return cli_error("detokenize: stdin: a NUL byte among the token ids");
    }
    int parsed = cli_parse_ids(input ? "stdin" : "--ids", list, &ids, &n, &e);
    free(input);
    if (parsed < 0) return cli_error("detokenize: %s", e.msg);
    e0_tokenizer *t;
    gguf_file *f = open_model(model, &t);
    if (!f) {
        free(ids);
        return 1;
    }
    int rc = 1;
    char *text = NULL;
    size_t len = 0;
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        cli_error("out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if ((uint32_t)ids[i] >= e0_tok_n_vocab(t)) {
            cli_error("detokenize: token id %d is outside the vocabulary (%u tokens)", ids[i], e0_tok_n_vocab(t));
            goto done;
        }
        v[i] = ids[i];
    }
    if (e0_detokenize(t, v, (size_t)n, special, &text, &len, &e) < 0) {
        cli_error("detokenize: %s", e.msg);
        goto done;
    }
    fwrite(text, 1, len, stdout); /* write errors: checked at exit (main.c) */
    rc = 0;
done:
    free(text);
    free(v);
    free(ids);
    e0_tokenizer_free(t);
    gguf_close(f);
    return rc;
}
