/* main.c — edge0-infer entry point: dispatch to a command (or --version); stdout is checked once at the end. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "measure/sysinfo.h"
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
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server (chat, completions, metrics)"},
    {"apply-template", cmd_template, "render a chat template for a list of messages"},
    {"synth", cmd_synth, "write a GGUF with deterministic random weights"},
    {"tokenize", cmd_tokenize, "print the token ids of stdin's text"},
    {"detokenize", cmd_detokenize, "print the text of token ids"},
    {"bench", cmd_bench, "measure prefill and decode speed, memory and energy (one JSON row per run)"},
    {"membw", cmd_membw, "measure memory read bandwidth"},
    {"diskbw", cmd_diskbw, "measure disk read bandwidth for expert-sized random reads"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: edge0-infer <command> [options]   (edge0-infer <command> --help; edge0-infer --version)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].help);
}

/* "edge0-infer 0.1.0 (commit 4e4a8c5..., dirty)": the version and the build's git state. */
static int version(void) {
    json_t *b = e0_build_json();
    const char *commit = json_string_value(json_object_get(b, "git_commit"));
    printf("edge0-infer %s (commit %s%s)\n", E0_ENGINE_VERSION, commit ? commit : "unknown",
           json_is_true(json_object_get(b, "git_dirty")) ? ", dirty" : "");
    json_decref(b);
    return 0;
}

static int dispatch(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) return version();
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    return cli_error("unknown command '%s' (see edge0-infer --help)", argv[1]);
}

int main(int argc, char **argv) {
    cli_stdout_init();
    return cli_stdout_close(dispatch(argc, argv));
}
