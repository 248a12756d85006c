/* cmd_logits.c — placeholder until the engine core lands. */
#include "cli.h"

int cmd_logits(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("logits: not implemented yet");
}
