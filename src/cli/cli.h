/* cli.h — shared pieces of the command-line front end: the command table entries and small
 * helpers for flag parsing and error exits. Each command lives in src/cli/cmd_<name>.c. */
#ifndef E0_CLI_H
#define E0_CLI_H

#include "engine/engine.h"
#include "engine/load.h"
#include "engine/sample.h"
#include "base/util.h"
#include "text/grammar.h"

/* Each returns the process exit status. argv[0] is the command name. */
int cmd_info(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_membw(int argc, char **argv);
int cmd_diskbw(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `bench` with llama-bench's flags (-p -n -pg -d -r -o, comma lists): cmd_bench_llama.c. */
bool cmd_bench_is_llama_style(int argc, char **argv);
int cmd_bench_llama(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_serve(int argc, char **argv); /* serve.c */

/* Print "edge0-infer: <msg>" on stderr; return 1 (the exit status for errors). */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fetch the value of flag argv[*i] (advancing *i); NULL + error message if it is missing. */
const char *cli_value(int argc, char **argv, int *i);
/* Parse a token id list ("1,2,3", "1 2 3" or both: ids separated by commas and/or white space)
 * into a newly malloc'd array; -1 with an error naming `what` (the flag, or "stdin") on junk. */
int cli_parse_ids(const char *what, const char *s, int **ids, int *n, e0_err *e);

/* All of stdin (NUL-terminated, malloc'd, *len bytes), at most max bytes; NULL + message naming
 * cmd on a read error, too much input or no memory. */
char *cli_read_stdin(const char *cmd, size_t max, size_t *len);

/* stdout: write errors are checked in one place. cli_stdout_init() (first thing in main) makes a
 * reader that goes away (`| head`) fail writes with EPIPE instead of killing the process.
 * cli_stdout_ok() flushes stdout and says whether everything written so far reached it (a command
 * that writes in a loop stops when it did not). cli_stdout_close(status) at exit flushes and
 * closes stdout and returns the exit status: 1 with one message when output was lost (disk full,
 * I/O error), status unchanged when the reader went away (a normal end). */
void cli_stdout_init(void);
bool cli_stdout_ok(void);
int cli_stdout_close(int status);

/* Flags shared by commands that load a model. */
typedef struct cli_model_opts {
    const char *model;
    int threads; /* 0 = default */
    int n_ctx;   /* 0 = default */
    int n_batch; /* 0 = default */
    uint32_t type_k, type_v; /* KV cache types: -ctk/--cache-type-k, -ctv/--cache-type-v (default f16) */
    bool options_init;
    bool mlock;         /* --mlock: lock what is loaded in RAM after loading */
    e0_options opt;     /* --model-option key=value ... */
    e0_session session; /* filled by cli_load */
} cli_model_opts;
/* Defaults (options, KV types f16); done by the first cli_model_flag / cli_load too, once. */
void cli_model_opts_init(cli_model_opts *o);
/* If argv[*i] is a shared model flag, consume it (and its value): 1; not one: 0; bad value: -1
 * (message printed). */
int cli_model_flag(cli_model_opts *o, int argc, char **argv, int *i);
/* Help for the KV cache flags (one line, after the "common model flags" line of a --help). */
void cli_kv_flags_help(void);
/* Load model and context (context at least min_ctx tokens when -c is not given). 0 or exit status 1
 * (message printed). */
int cli_load(cli_model_opts *o, int min_ctx, e0_model **m, e0_ctx **c);
/* The same with a separate prefill thread count (0 = same as decode). */
int cli_load_ex(cli_model_opts *o, int min_ctx, int prefill_threads, e0_model **m, e0_ctx **c);
/* Free what cli_load made. */
void cli_unload(cli_model_opts *o);
/* Help lines for the flags cli_model_flag takes besides -m/-t/-c/-b (--mlock, --no-mmap). */
extern const char cli_model_flags_help[];

/* Flags shared by `run` and `chat` (llama.cpp's names and meanings): sampling, when to stop, the
 * system prompt, a chat template file, verbosity. Use: cli_gen_init(&g); per argument
 * cli_gen_flag(&g, argc, argv, &i) (1: consumed with its value, 0: not one of these, -1: bad
 * value, message printed); after the model is loaded cli_gen_finish(&g, n_ctx); then
 * e0_sampler_new(&g.sp, ...) and gen_opts from n_predict / ignore_eos / stop / n_stop / grammar;
 * cli_gen_free(&g) at the end. */
#define CLI_MAX_STOP 16
typedef struct cli_gen_flags {
    e0_sampler_params sp; /* --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n
                             --presence-penalty --frequency-penalty -s/--seed -l/--logit-bias */
    bool seed_given;
    int64_t n_predict; /* -n/--n-predict; -1 (default): until end of generation or a full context */
    bool ignore_eos;   /* --ignore-eos */
    const char *stop[CLI_MAX_STOP]; /* --stop TEXT, repeatable */
    int n_stop;
    const char *system;             /* -sys/--system-prompt/--system TEXT */
    const char *chat_template_file; /* --chat-template-file F: instead of the model's template */
    bool verbose;                   /* -v/--verbose */
    const char *grammar_arg;        /* --grammar GBNF */
    const char *grammar_file;       /* --grammar-file F */
    const char *json_schema;        /* -j/--json-schema SCHEMA */
    const char *json_schema_file;   /* -jf/--json-schema-file F */
    char *grammar_text;             /* the grammar's text (cli_gen_finish; owned), NULL: none */
    size_t grammar_len;
    e0_grammar *grammar;            /* parsed by cli_gen_finish (owned) */
} cli_gen_flags;
void cli_gen_init(cli_gen_flags *g);
int cli_gen_flag(cli_gen_flags *g, int argc, char **argv, int *i);
/* The seed from the clock when -s was not given; --repeat-last-n -1 becomes the context size;
 * --logit-bias ids checked against the vocabulary; --grammar / --grammar-file / -j / -jf read,
 * turned into a grammar and parsed (0, or 1 after printing the error). */
int cli_gen_finish(cli_gen_flags *g, int n_ctx, int64_t n_vocab);
void cli_gen_free(cli_gen_flags *g);
/* Help lines for the flags cli_gen_flag takes (one flag per line, ending in a newline). */
extern const char cli_gen_help[];

#endif
