/* cmd_synth.c — placeholder until the engine core lands. */
#include "cli.h"

int cmd_synth(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("synth: not implemented yet");
}
