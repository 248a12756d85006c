/* sweep.c — `edge0-bench sweep`: the standard measurement. Per configuration several short
 * `edge0-infer bench` processes, a cool-down between them, a condition check and a system
 * snapshot before and after each; a failed process is recorded and the sweep goes on, nothing is
 * repeated. Writes DIR/report.json, DIR/report.md and DIR/report.svg (format: docs/bench.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "gguf/gguf.h"
#include "measure/sysinfo.h"

static const char SWEEP_USAGE[] =
    "usage: edge0-bench sweep --cli PATH --model F --out DIR [options]\n"
    "\n"
    "Runs several `PATH bench` processes per configuration and writes DIR/report.json,\n"
    "DIR/report.md and DIR/report.svg with the median and min-max of each metric.\n"
    "\n"
    "  --cli PATH          the edge0-infer binary\n"
    "  --model F           the GGUF model\n"
    "  --out DIR           output directory (created)\n"
    "  --configs LIST      comma-separated: predicted, actual (routing=actual), ctx16384\n"
    "                      (--context 16384), direct (expert_read=direct), or all [predicted]\n"
    "  --prompt P          long (library-report-prompt.txt), medium (library-report-prompt-head.txt)\n"
    "                      or short (short-story-prompt.txt, 512 timed steps) [medium]\n"
    "  --runs N            processes per configuration [3]\n"
    "  --cooldown S        idle seconds between processes [30]\n"
    "  --option=ARG        one extra `bench` argument for every process; repeat for more\n"
    "                      (--option=--threads --option=4)\n"
    "  --raw               also keep each process's stdout and stderr in DIR/raw/\n"
    "  --fixtures DIR      where the prompts are [tests/fixtures/bench]\n"
    "  --warmup N, --ntok N  override the protocol's 10 warm-up / 100 (short: 512) timed steps\n"
    "  --timeout S         stop a process after S seconds and record it as failed [3600]\n"
    "\n"
    "A configuration whose context (ctx16384) exceeds the model's is refused before anything runs\n"
    "(exit 1; left out with a warning under --configs all). A configuration whose effective\n"
    "configuration turns out the same as an earlier one's (e.g. actual and direct when the\n"
    "experts are resident) is measured once, not repeated, and marked \"same_as\" in the report.\n"
    "A process is refused (not started, recorded) when the machine runs on battery; high load,\n"
    "other busy processes, the governor, a low clock, heat and low free memory are recorded as\n"
    "warnings. Exit status 0 when at least one process succeeded, 1 otherwise.\n";

static const struct {
    const char *name;
    const char *args[3];
    int64_t n_ctx; /* the context it asks for (0 = the default); refused up front when the model's is smaller */
} CONFIGS[] = {
    {"predicted", {NULL}, 0},
    {"actual", {"--model-option", "routing=actual", NULL}, 0},
    {"ctx16384", {"--context", "16384", NULL}, 16384},
    {"direct", {"--model-option", "expert_read=direct", NULL}, 0},
};
#define N_CONFIGS (sizeof CONFIGS / sizeof CONFIGS[0])

typedef struct sweep_opts {
    const char *cli, *model, *out, *prompt, *fixtures;
    int configs[N_CONFIGS], n_configs;
    int configs_all; /* --configs all: a configuration the model cannot run is left out, not an error */
    int64_t runs, warmup, ntok;
    double cooldown, timeout;
    int raw;
    const char **options;
    int n_options;
} sweep_opts;

static int parse_configs(const char *s, sweep_opts *o) {
    char buf[256];
    if (strlen(s) >= sizeof buf) return bench_error("--configs: list too long");
    snprintf(buf, sizeof buf, "%s", s);
    o->n_configs = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all")) {
            for (size_t c = 0; c < N_CONFIGS; c++) o->configs[c] = (int)c;
            o->n_configs = (int)N_CONFIGS;
            o->configs_all = 1;
            return 0;
        }
        size_t c = 0;
        while (c < N_CONFIGS && strcmp(CONFIGS[c].name, tok) != 0) c++;
        if (c == N_CONFIGS)
            return bench_error("--configs: unknown configuration '%s' (predicted, actual, ctx16384, direct, all)", tok);
        for (int k = 0; k < o->n_configs; k++)
            if (o->configs[k] == (int)c) return bench_error("--configs: '%s' given twice", tok);
        o->configs[o->n_configs++] = (int)c;
    }
    if (o->n_configs == 0) return bench_error("--configs: empty list");
    return 0;
}

static int parse_args(int argc, char **argv, sweep_opts *o) {
    e0_err e;
    memset(o, 0, sizeof *o);
    o->prompt = "medium";
    o->fixtures = "tests/fixtures/bench";
    o->runs = 3;
    o->cooldown = 30;
    o->timeout = 3600;
    o->warmup = 10;
    o->ntok = -1;
    o->n_configs = 1; /* predicted */
    o->options = calloc((size_t)argc, sizeof *o->options);
    if (!o->options) return bench_error("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define VALUE() (i + 1 < argc ? argv[++i] : (bench_error("%s needs a value", a), (char *)NULL))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(SWEEP_USAGE, stdout);
            return 2;
        } else if (!strncmp(a, "--option=", 9)) {
            o->options[o->n_options++] = a + 9;
        } else if (!strcmp(a, "--option")) {
            const char *v = VALUE();
            if (!v) return -1;
            o->options[o->n_options++] = v;
        } else if (!strcmp(a, "--raw")) {
            o->raw = 1;
        } else {
            const char **dst = !strcmp(a, "--cli") ? &o->cli : !strcmp(a, "--model") ? &o->model
                             : !strcmp(a, "--out") ? &o->out : !strcmp(a, "--prompt") ? &o->prompt
                             : !strcmp(a, "--fixtures") ? &o->fixtures : NULL;
            const char *v;
            if (dst) {
                if (!(v = VALUE())) return -1;
                *dst = v;
            } else if (!strcmp(a, "--configs")) {
                if (!(v = VALUE()) || parse_configs(v, o)) return -1;
            } else if (!strcmp(a, "--runs")) {
                if (!(v = VALUE())) return -1;
                if (e0_parse_i64(v, 1, 1000, &o->runs, "--runs", &e)) return bench_error("%s", e.msg);
            } else if (!strcmp(a, "--warmup")) {
                if (!(v = VALUE())) return -1;
                if (e0_parse_i64(v, 0, 100000, &o->warmup, "--warmup", &e)) return bench_error("%s", e.msg);
            } else if (!strcmp(a, "--ntok")) {
                if (!(v = VALUE())) return -1;
                if (e0_parse_i64(v, 1, 1000000, &o->ntok, "--ntok", &e)) return bench_error("%s", e.msg);
            } else if (!strcmp(a, "--cooldown")) {
                if (!(v = VALUE())) return -1;
                if (e0_parse_f64(v, 0, 86400, &o->cooldown, "--cooldown", &e)) return bench_error("%s", e.msg);
            } else if (!strcmp(a, "--timeout")) {
                if (!(v = VALUE())) return -1;
                if (e0_parse_f64(v, 1, 7 * 86400, &o->timeout, "--timeout", &e)) return bench_error("%s", e.msg);
            } else {
                return bench_error("sweep: unknown option '%s' (see edge0-bench sweep --help)", a);
            }
        }
#undef VALUE
    }
    if (!o->cli || !o->model || !o->out) return bench_error("sweep needs --cli, --model and --out (see --help)");
    if (strcmp(o->prompt, "long") && strcmp(o->prompt, "medium") && strcmp(o->prompt, "short"))
        return bench_error("--prompt must be long, medium or short, not '%s'", o->prompt);
    if (o->ntok < 0) o->ntok = !strcmp(o->prompt, "short") ? 512 : 100;
    return 0;
}

static const char *prompt_file(const char *prompt) {
    return !strcmp(prompt, "long")   ? "library-report-prompt.txt"
           : !strcmp(prompt, "short") ? "short-story-prompt.txt"
                                      : "library-report-prompt-head.txt";
}

/* argv for one process: cli bench --model F --user-file P --warmup W --ntok N --runs 1
 * <configuration args> <options>. Strings are owned by opts/argv-static storage or `nums`. */
static char **bench_argv(const sweep_opts *o, int cfg, const char *prompt_path, char nums[2][32]) {
    size_t n = 0, cap = 16 + (size_t)o->n_options;
    char **v = calloc(cap, sizeof *v);
    if (!v) return NULL;
    snprintf(nums[0], 32, "%lld", (long long)o->warmup);
    snprintf(nums[1], 32, "%lld", (long long)o->ntok);
    const char *fixed[] = {o->cli, "bench", "--model", o->model, "--user-file", prompt_path,
                           "--warmup", nums[0], "--ntok", nums[1], "--runs", "1"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) v[n++] = (char *)fixed[i];
    for (int i = 0; CONFIGS[cfg].args[i]; i++) v[n++] = (char *)CONFIGS[cfg].args[i];
    for (int i = 0; i < o->n_options; i++) v[n++] = (char *)o->options[i];
    v[n] = NULL;
    return v;
}

/* One process of one configuration (measure.c does the conditions, snapshots and recording). */
static json_t *measure_one(const sweep_opts *o, int cfg, int k, const char *prompt_path, double model_size) {
    char nums[2][32], raw[4200];
    char **argv = bench_argv(o, cfg, prompt_path, nums);
    if (!argv) return NULL;
    snprintf(raw, sizeof raw, "%s/raw", o->out);
    bench_job j = {.label = CONFIGS[cfg].name, .index = k, .total = (int)o->runs, .argv = argv, .timeout = o->timeout,
                   .model_size = model_size, .raw_dir = o->raw ? raw : NULL};
    json_t *rec = bench_measure(&j);
    free(argv);
    return rec;
}

/* Per configuration: effective config (from the rows; must agree), metrics. */
static json_t *configuration_json(int cfg, json_t *processes, json_t *warnings, const char *same_as) {
    json_t *args = json_array();
    for (int i = 0; CONFIGS[cfg].args[i]; i++) json_array_append_new(args, json_string(CONFIGS[cfg].args[i]));
    json_t *effective = NULL;
    int consistent = 1, n_ok = 0, n_failed = 0, n_refused = 0;
    size_t i;
    json_t *p;
    json_array_foreach(processes, i, p) {
        const char *st = json_string_value(json_object_get(p, "status"));
        if (!strcmp(st, "refused")) n_refused++;
        if (strcmp(st, "ok") != 0) {
            if (strcmp(st, "refused") != 0) n_failed++;
            continue;
        }
        n_ok++;
        json_t *c = json_object_get(json_object_get(p, "row"), "config");
        if (!c) c = json_null();
        if (!effective) effective = json_incref(c);
        else if (!json_equal(effective, c)) consistent = 0;
    }
    if (!consistent) {
        char buf[256];
        snprintf(buf, sizeof buf, "configuration %s: the processes reported different effective configurations",
                 CONFIGS[cfg].name);
        json_array_append_new(warnings, json_string(buf));
    }
    if (same_as) {
        char buf[256];
        snprintf(buf, sizeof buf, "configuration %s: its effective configuration is the same as %s's; measured once, not repeated",
                 CONFIGS[cfg].name, same_as);
        json_array_append_new(warnings, json_string(buf));
    }
    json_t *metrics = json_object();
    for (size_t m = 0; m < N_METRICS; m++)
        json_object_set_new(metrics, METRICS[m].key, metric_summary_json(processes, &METRICS[m]));
    return json_pack("{s:s, s:o, s:o, s:b, s:i, s:i, s:i, s:o, s:o, s:o}", "name", CONFIGS[cfg].name, "args", args,
                     "effective_config", effective ? effective : e0_unavailable("no successful process"),
                     "effective_config_consistent", consistent, "ok", n_ok, "failed", n_failed, "refused",
                     n_refused, "processes", processes, "metrics", metrics, "same_as",
                     same_as ? json_string(same_as) : json_null());
}

/* Leave out (under --configs all) or refuse (named explicitly) configurations whose context the
 * model does not have. 0, or 1 with the one-line error printed. */
static int check_contexts(sweep_opts *o, json_t *warnings) {
    int64_t need = 0;
    for (int c = 0; c < o->n_configs; c++)
        if (CONFIGS[o->configs[c]].n_ctx > need) need = CONFIGS[o->configs[c]].n_ctx;
    if (!need) return 0;
    int64_t have = bench_model_context(o->cli, o->model);
    if (!have) return 0; /* unknown: let the processes say */
    int kept = 0;
    for (int c = 0; c < o->n_configs; c++) {
        int cfg = o->configs[c];
        if (CONFIGS[cfg].n_ctx <= have) {
            o->configs[kept++] = cfg;
            continue;
        }
        char buf[256];
        snprintf(buf, sizeof buf, "configuration %s left out: it needs a %lld-token context and the model has %lld",
                 CONFIGS[cfg].name, (long long)CONFIGS[cfg].n_ctx, (long long)have);
        if (!o->configs_all) return bench_error("--configs %s: the model's context is %lld tokens, less than %lld; nothing was run",
                                                CONFIGS[cfg].name, (long long)have, (long long)CONFIGS[cfg].n_ctx);
        bench_progress("%s", buf);
        json_array_append_new(warnings, json_string(buf));
    }
    o->n_configs = kept;
    return 0;
}

static int write_reports(const sweep_opts *o, json_t *report) {
    char path[4200];
    e0_err e;
    snprintf(path, sizeof path, "%s/report.json", o->out);
    if (json_dump_file(report, path, JSON_INDENT(1) | JSON_SORT_KEYS) != 0)
        return bench_error("cannot write %s", path);
    char *md = report_markdown(report), *svg = report_svg(report);
    int rc = 0;
    if (!md || !svg) rc = bench_error("out of memory while rendering the report");
    snprintf(path, sizeof path, "%s/report.md", o->out);
    if (!rc && write_text_file(path, md, &e)) rc = bench_error("%s", e.msg);
    snprintf(path, sizeof path, "%s/report.svg", o->out);
    if (!rc && write_text_file(path, svg, &e)) rc = bench_error("%s", e.msg);
    free(md);
    free(svg);
    if (!rc) bench_progress("wrote %s/report.json, report.md, report.svg", o->out);
    return rc;
}

int bench_sweep(int argc, char **argv) {
    sweep_opts o;
    int prc = parse_args(argc, argv, &o);
    if (prc) {
        free(o.options);
        return prc == 2 ? 0 : 1;
    }
    int rc = 1;
    json_t *report = NULL;
    char prompt_path[4200];
    snprintf(prompt_path, sizeof prompt_path, "%s/%s", o.fixtures, prompt_file(o.prompt));
    struct stat st;
    errno = 0;
    if (stat(prompt_path, &st) != 0 || !S_ISREG(st.st_mode)) {
        bench_error("prompt %s: %s (run from the source tree or pass --fixtures)", prompt_path,
                    errno ? strerror(errno) : "not a file");
        goto out;
    }
    errno = 0;
    if (stat(o.model, &st) != 0 || !S_ISREG(st.st_mode)) {
        bench_error("model %s: %s", o.model, errno ? strerror(errno) : "not a file");
        goto out;
    }
    double model_size = (double)gguf_model_size(o.model, (uint64_t)st.st_size); /* all files of a split model */
    if (access(o.cli, X_OK) != 0) {
        bench_error("--cli %s: not an executable file (%s)", o.cli, strerror(errno));
        goto out;
    }
    if (bench_make_dir(o.out)) goto out;
    if (o.raw) {
        char raw[4200];
        snprintf(raw, sizeof raw, "%s/raw", o.out);
        if (bench_make_dir(raw)) goto out;
    }
    json_t *warnings = json_array();
    if (check_contexts(&o, warnings)) {
        json_decref(warnings);
        goto out;
    }
    proc_install_signal_handlers();
    bench_progress("hashing the model and binary (cached by path, size and mtime)");
    json_t *options = json_array(), *configs = json_array();
    for (int i = 0; i < o.n_options; i++) json_array_append_new(options, json_string(o.options[i]));
    for (int c = 0; c < o.n_configs; c++) json_array_append_new(configs, json_string(CONFIGS[o.configs[c]].name));
    json_t *protocol = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:f, s:o, s:o}", "prompt", o.prompt, "prompt_file",
                                 prompt_file(o.prompt), "prompt_sha256", bench_sha_json(prompt_path, 0), "warmup",
                                 (json_int_t)o.warmup, "ntok", (json_int_t)o.ntok, "runs", (json_int_t)o.runs,
                                 "cooldown_seconds", o.cooldown, "configs", configs, "options", options);
    json_t *identity = json_pack("{s:s, s:o, s:s, s:o}", "cli", o.cli, "cli_sha256", bench_sha_json(o.cli, 0), "model_path",
                                 o.model, "model_sha256", bench_sha_json(o.model, 1));
    json_t *configurations = json_array();
    report = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "format", REPORT_FORMAT, "created_utc",
                       bench_utc_now(), "harness", e0_build_json(), "protocol", protocol, "device", e0_device_json(),
                       "identity", identity, "configurations", configurations, "warnings", warnings);
    if (!report) {
        bench_error("out of memory");
        goto out;
    }
    int total = o.n_configs * (int)o.runs, done = 0, n_ok = 0;
    for (int c = 0; c < o.n_configs && !proc_interrupted(); c++) {
        json_t *processes = json_array();
        const char *same_as = NULL;
        for (int k = 1; k <= o.runs && !proc_interrupted() && !same_as; k++) {
            json_t *rec = measure_one(&o, o.configs[c], k, prompt_path, model_size);
            if (!rec) break;
            if (!strcmp(json_string_value(json_object_get(rec, "status")), "ok")) {
                n_ok++;
                /* the same effective configuration as an earlier configuration: measured already */
                const json_t *cfg = json_object_get(json_object_get(rec, "row"), "config");
                size_t j;
                json_t *prev;
                json_array_foreach(configurations, j, prev) {
                    if (cfg && !same_as && json_equal(cfg, json_object_get(prev, "effective_config")))
                        same_as = json_string_value(json_object_get(prev, "name"));
                }
                if (same_as)
                    bench_progress("%s: the same effective configuration as %s; not measured again", CONFIGS[o.configs[c]].name,
                                   same_as);
                json_t *row = json_object_get(rec, "row");
                /* The first successful row names the engine and the model for the whole report. */
                if (!json_object_get(identity, "engine") && json_object_get(row, "engine"))
                    json_object_set(identity, "engine", json_object_get(row, "engine"));
                if (!json_object_get(identity, "model") && json_object_get(row, "model"))
                    json_object_set(identity, "model", json_object_get(row, "model"));
            }
            json_array_append_new(processes, rec);
            bool more = (k < o.runs && !same_as) || c + 1 < o.n_configs;
            if (++done < total && more && o.cooldown > 0 && !proc_interrupted()) {
                bench_progress("cooling down %g s", o.cooldown);
                proc_sleep(o.cooldown);
            }
        }
        json_array_append_new(configurations, configuration_json(o.configs[c], processes, warnings, same_as));
    }
    if (proc_interrupted()) json_array_append_new(warnings, json_string("the sweep was interrupted; the report is partial"));
    if (!json_object_get(identity, "engine"))
        json_object_set_new(identity, "engine", e0_unavailable("no successful process"));
    if (!json_object_get(identity, "model"))
        json_object_set_new(identity, "model", e0_unavailable("no successful process"));
    json_object_set_new(report, "summary", json_pack("{s:i, s:i}", "processes", done, "ok", n_ok));
    if (write_reports(&o, report)) goto out;
    if (n_ok == 0) {
        bench_error("no process succeeded (see %s/report.md)", o.out);
        goto out;
    }
    rc = 0;
out:
    json_decref(report);
    free(o.options);
    return rc;
}
