/* cmd_info.c — placeholder until the engine core lands. */
#include "cli.h"

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("info: not implemented yet");
}
