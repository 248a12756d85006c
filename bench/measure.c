/* measure.c — one measured process, as sweep and compare run them: the measurement conditions
 * checked before it (a refused process is recorded, not started), a system snapshot before and
 * after, the run with its timeout, and the record of what happened: the process's JSON row, or
 * why it failed. Also the small file and identity helpers both subcommands use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench.h"
#include "measure/sysinfo.h"

int bench_make_dir(const char *path) {
    char d[4096];
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d) return bench_error("--out: path too long");
    for (char *p = d + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(d, 0755) != 0 && errno != EEXIST) return bench_error("cannot create %s: %s", d, strerror(errno));
        *p = '/';
    }
    if (mkdir(d, 0755) != 0 && errno != EEXIST) return bench_error("cannot create %s: %s", d, strerror(errno));
    struct stat st;
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) return bench_error("%s is not a directory", d);
    return 0;
}

json_t *bench_utc_now(void) {
    time_t t = time(NULL);
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

json_t *bench_sha_json(const char *path, int cached) {
    char hex[65];
    e0_err e;
    int rc = cached ? e0_sha256_file_cached(path, hex, &e) : e0_sha256_file(path, hex, &e);
    return rc == 0 ? json_string(hex) : e0_unavailable("%s", e.msg);
}

static json_t *argv_json(char **v) {
    json_t *a = json_array();
    for (; *v; v++) json_array_append_new(a, json_string(*v));
    return a;
}

static void save_raw(const bench_job *j, const proc_result *r) {
    char path[4200];
    e0_err e;
    snprintf(path, sizeof path, "%s/%s-%d.stdout", j->raw_dir, j->label, j->index);
    if (write_text_file(path, r->out ? r->out : "", &e)) bench_progress("warning: %s", e.msg);
    snprintf(path, sizeof path, "%s/%s-%d.stderr", j->raw_dir, j->label, j->index);
    if (write_text_file(path, r->err ? r->err : "", &e)) bench_progress("warning: %s", e.msg);
}

json_t *bench_measure(const bench_job *j) {
    const char *name = j->label;
    const int k = j->index;
    json_t *rec = json_pack("{s:s, s:i, s:o, s:o}", "configuration", name, "index", k, "argv", argv_json(j->argv),
                            "started_utc", bench_utc_now());
    json_t *before = e0_system_json();
    json_t *cond = conditions_check(before, j->model_size);
    json_object_set_new(rec, "before", before);
    json_object_set_new(rec, "conditions", cond);
    size_t wi;
    json_t *w;
    json_array_foreach(json_object_get(cond, "warnings"), wi, w) bench_progress("  condition: %s", json_string_value(w));
    const char *refused = json_string_value(json_object_get(cond, "refused"));
    if (refused) {
        bench_progress("%s %d/%d: refused: %s", name, k, j->total, refused);
        json_object_set_new(rec, "status", json_string("refused"));
        json_object_set_new(rec, "reason", json_string(refused));
        return rec;
    }
    bench_progress("%s %d/%d: running", name, k, j->total);
    proc_result r;
    proc_run(j->argv, j->timeout, &r);
    json_object_set_new(rec, "after", e0_system_json());
    json_object_set_new(rec, "wall_seconds", json_real(r.wall_seconds));
    json_object_set_new(rec, "exit_status", r.started && r.exited ? json_integer(r.exit_status) : json_null());
    if (j->raw_dir) save_raw(j, &r);
    json_t *row = r.started && r.exited && r.exit_status == 0 ? proc_last_json_row(r.out) : NULL;
    if (row) {
        json_object_set_new(rec, "status", json_string("ok"));
        json_object_set_new(rec, "reason", json_null());
        json_object_set_new(rec, "row", row);
        double d = 0, t = 0;
        int hd = json_path_number(row, "decode_tokens_per_second", &d) == 0;
        int ht = json_path_number(row, "prefill_seconds", &t) == 0;
        bench_progress("%s %d/%d: ok, decode %s%.2f tok/s, first token %s%.3f s", name, k, j->total, hd ? "" : "(missing) ", d,
                       ht ? "" : "(missing) ", t);
    } else {
        char why[512];
        proc_describe_failure(&r, why, sizeof why);
        json_object_set_new(rec, "status", json_string(r.interrupted ? "interrupted" : "failed"));
        json_object_set_new(rec, "reason", json_string(why));
        json_object_set_new(rec, "row", json_null());
        bench_progress("%s %d/%d: FAILED: %s", name, k, j->total, why);
    }
    proc_result_free(&r);
    return rec;
}

int64_t bench_model_context(const char *cli, const char *model) {
    char *argv[] = {(char *)cli, "info", "--model", (char *)model, NULL};
    proc_result r;
    proc_run(argv, 120, &r);
    const char *p = r.out ? strstr(r.out, "context length:") : NULL;
    int64_t n = p ? strtoll(p + strlen("context length:"), NULL, 10) : 0;
    proc_result_free(&r);
    return n > 0 ? n : 0;
}
