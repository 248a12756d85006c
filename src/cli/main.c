/* main.c — edge0-infer entry point: dispatch to a command. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quant/quant.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"info", cmd_info, "print a model's architecture, hyperparameters and tensors"},
    {"logits", cmd_logits, "one batched prefill; write the logits of every position"},
    {"run", cmd_run, "generate text (or token ids) from a prompt"},
    {"chat", cmd_chat, "interactive conversation on stdin/stdout"},
    {"apply-template", cmd_template, "render a chat template for a list of messages"},
    {"synth", cmd_synth, "write a GGUF with deterministic random weights"},
    {"tokenize", cmd_tokenize, "print the token ids of stdin's text"},
    {"detokenize", cmd_detokenize, "print the text of token ids"},
    {"bench", cmd_bench, "measure prefill and decode speed, memory and energy (one JSON row per run)"},
    {"membw", cmd_membw, "measure memory read bandwidth"},
    {"diskbw", cmd_diskbw, "measure disk read bandwidth for expert-sized random reads"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: edge0-infer <command> [options]   (edge0-infer <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].help);
}

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

int cli_parse_ids(const char *s, int **ids, int *n, e0_err *e) {
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        if (*p == ',') cap++;
    int *v = malloc(cap * sizeof *v);
    if (!v) return e0_fail(e, "out of memory");
    int count = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < 0 || x > 0x7fffffff || (*end && *end != ',')) {
            free(v);
            return e0_fail(e, "--tokens: bad token id list '%s' (expected comma-separated ids)", s);
        }
        v[count++] = (int)x;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) {
            free(v);
            return e0_fail(e, "--tokens: trailing comma in '%s'", s);
        }
    }
    if (count == 0) {
        free(v);
        return e0_fail(e, "--tokens: empty token list");
    }
    *ids = v;
    *n = count;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    return cli_error("unknown command '%s' (see edge0-infer --help)", argv[1]);
}
