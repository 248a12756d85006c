/* cmd_run.c — placeholder until the engine core lands. */
#include "cli.h"

int cmd_run(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("run: not implemented yet");
}
