/* cli.h — shared pieces of the command-line front end: the command table entries and small
 * helpers for flag parsing and error exits. Each command lives in src/cli/cmd_<name>.c. */
#ifndef E0_CLI_H
#define E0_CLI_H

#include "util.h"

/* Each returns the process exit status. argv[0] is the command name. */
int cmd_info(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_template(int argc, char **argv);

/* Print "edge0-infer: <msg>" on stderr; return 1 (the exit status for errors). */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fetch the value of flag argv[*i] (advancing *i); NULL + error message if it is missing. */
const char *cli_value(int argc, char **argv, int *i);
/* Parse "1,2,3" into a newly malloc'd array; -1 with error on junk, ids outside [0, max). */
int cli_parse_ids(const char *s, int **ids, int *n, e0_err *e);

#endif
