/* main.c — edge0-bench entry point: the measurement harness around `edge0-infer bench`
 * (sweep, compare, report render/compare, ab). See docs/bench.md. */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

/* At exit: output lost on stdout (disk full, I/O error) is an error; a reader that went away
 * (EPIPE, `| head`) is a normal end. stdio drops a failed buffer, so ferror is the record. */
static volatile sig_atomic_t reader_gone;
static void on_sigpipe(int sig) { (void)sig, reader_gone = 1; } /* writes then fail with EPIPE; exec resets it */
static void close_stdout(void) {
    int err = fflush(stdout) != 0 ? errno : 0;
    if ((!ferror(stdout) && fclose(stdout) == 0) || reader_gone) return;
    fprintf(stderr, "edge0-bench: cannot write to stdout%s%s (the output is incomplete)\n", err ? ": " : "", err ? strerror(err) : "");
    _exit(1);
}

static void usage(FILE *f) {
    fputs("usage: edge0-bench <command> [options]   (edge0-bench <command> --help)\n\n"
          "commands:\n"
          "  sweep            the standard measurement: several bench processes per configuration,\n"
          "                   writes report.json, report.md and report.svg\n"
          "  report render    print a report as Markdown\n"
          "  report compare   compare a report with a baseline (refuses when not comparable)\n"
          "  compare          engines side by side (edge0, llama.cpp) on the same model and token ids,\n"
          "                   processes alternated; one report, unlike comparisons refused\n"
          "  load             Poisson arrivals against an OpenAI-compatible server: TTFT, TPOT, ITL,\n"
          "                   throughput and goodput per request rate\n"
          "  ab               paired A/B processes: the ratio per pair and a verdict when clear\n"
          "  bound            decode speed of a report next to the memory-bandwidth bound\n"
          "  stream-row       one row of the expert-streaming benchmark (disk-bandwidth bound)\n",
          f);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, on_sigpipe);
    atexit(close_stdout);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    if (!strcmp(argv[1], "sweep")) return bench_sweep(argc - 1, argv + 1);
    if (!strcmp(argv[1], "report")) return bench_report(argc - 1, argv + 1);
    if (!strcmp(argv[1], "ab")) return bench_ab(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare")) return bench_compare(argc - 1, argv + 1);
    if (!strcmp(argv[1], "load")) return bench_load(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bound")) return bench_bound(argc - 1, argv + 1);
    if (!strcmp(argv[1], "stream-row")) return bench_stream_row(argc - 1, argv + 1);
    bench_error("unknown command '%s'", argv[1]);
    usage(stderr);
    return 1;
}
