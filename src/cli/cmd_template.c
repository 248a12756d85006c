/* cmd_template.c — `edge0-infer apply-template`: render a chat template for a list of messages
 * and print the prompt exactly (nothing added). The template comes from a file or, with
 * --model, from the GGUF's tokenizer.chat_template (with its bos/eos token texts). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jinja.h"

#define MAX_TEMPLATE_BYTES (4u << 20)
#define MAX_MESSAGES_BYTES (64u << 20)

static void usage(FILE *f) {
    fprintf(f,
            "usage: edge0-infer apply-template --chat-template-file T.jinja --messages-file M.json\n"
            "                                  [--no-generation-prompt] [--bos-token S] [--eos-token S]\n"
            "  M.json: a JSON array of {\"role\": ..., \"content\": ...} objects.\n"
            "  Prints the rendered prompt exactly, with no newline added.\n");
}

int cmd_template(int argc, char **argv) {
    const char *tmpl_path = NULL, *msg_path = NULL, *model = NULL, *bos = "", *eos = "";
    bool gen = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--chat-template-file")) { if (!(tmpl_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--messages-file")) { if (!(msg_path = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--bos-token")) { if (!(bos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--eos-token")) { if (!(eos = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--model") || !strcmp(a, "-m")) { if (!(model = cli_value(argc, argv, &i))) return 1; }
        else if (!strcmp(a, "--no-generation-prompt")) gen = false;
        else { usage(stderr); return cli_error("apply-template: unknown option '%s'", a); }
    }
    if (model) return cli_error("apply-template: --model is not supported yet (use --chat-template-file)");
    if (!tmpl_path) { usage(stderr); return cli_error("apply-template: --chat-template-file is required"); }
    if (!msg_path) { usage(stderr); return cli_error("apply-template: --messages-file is required"); }
    e0_err e = {{0}};
    size_t tlen;
    char *tmpl = e0_read_file(tmpl_path, MAX_TEMPLATE_BYTES, &tlen, &e);
    if (!tmpl) return cli_error("%s", e.msg);
    json_error_t je;
    json_t *msgs = json_load_file(msg_path, JSON_REJECT_DUPLICATES, &je);
    if (!msgs) {
        free(tmpl);
        return cli_error("%s: invalid JSON at line %d: %s", msg_path, je.line, je.text);
    }
    char *out;
    size_t olen;
    int rc = jinja_render_chat(tmpl, tlen, msgs, gen, bos, eos, &out, &olen, &e);
    json_decref(msgs);
    free(tmpl);
    if (rc) return cli_error("apply-template: %s", e.msg);
    bool ok = fwrite(out, 1, olen, stdout) == olen && fflush(stdout) == 0;
    free(out);
    return ok ? 0 : cli_error("apply-template: cannot write output");
}
