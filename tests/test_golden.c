/* test_golden.c — every model in ../shared/golden against its reference (llama.cpp) outputs,
 * through the CLI exactly as outside checks use it: `logits` rows within the README's tolerances
 * (rows with near-tie routing excluded) and `run --print-ids` greedy prefixes (must_match ids).
 * Any other *.gguf with a .golden.json placed there is checked the same way. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "base/util.h"

static char *ids_csv(json_t *arr) {
    size_t n = json_array_size(arr), cap = n * 12 + 2, len = 0;
    char *s = malloc(cap);
    s[0] = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%lld", i ? "," : "", (long long)json_integer_value(json_array_get(arr, i)));
    return s;
}

static void check_logits_case(const char *model, json_t *gold, json_t *cs, int64_t n_vocab) {
    double R = json_real_value(json_object_get(json_object_get(gold, "tolerance"), "rel_rms"));
    double M = json_real_value(json_object_get(json_object_get(gold, "tolerance"), "max_abs_over_std"));
    json_t *tokens = json_object_get(cs, "tokens"), *rows = json_object_get(cs, "rows"),
           *ties = json_object_get(cs, "routing_near_tie_rows"), *ref = json_object_get(cs, "logits");
    char out[256], *csv = ids_csv(tokens), *cmd = malloc(strlen(csv) + 1024);
    snprintf(out, sizeof out, "%s/test-logits-%d.bin", t_build(), (int)getpid());
    sprintf(cmd, "%s/bin/edge0-infer logits --model %s --tokens %s --out %s", t_build(), model, csv, out);
    int rc = t_sh(cmd, NULL, 0);
    CHECKF(rc == 0, "logits exited %d", rc);
    size_t n_tok = json_array_size(tokens), count = n_tok * (size_t)n_vocab;
    float *x = malloc(count * sizeof(float));
    FILE *f = fopen(out, "rb");
    size_t got = f ? fread(x, sizeof(float), count, f) : 0;
    if (f) {
        CHECKF(fgetc(f) == EOF, "logits file longer than %zu floats", count);
        fclose(f);
    }
    CHECKF(got == count, "logits file has %zu floats, expected %zu", got, count);
    if (got == count) {
        double worst_rel = 0, worst_abs = 0;
        int checked = 0;
        for (size_t j = 0; j < json_array_size(rows); j++) {
            json_int_t pos = json_integer_value(json_array_get(rows, j));
            int tie = 0;
            for (size_t k = 0; k < json_array_size(ties); k++) tie |= json_integer_value(json_array_get(ties, k)) == pos;
            if (tie) continue;
            json_t *r = json_array_get(ref, j);
            CHECKF((int64_t)json_array_size(r) == n_vocab, "reference row size");
            double mean = 0, var = 0, se = 0, maxd = 0;
            for (int64_t v = 0; v < n_vocab; v++) mean += json_number_value(json_array_get(r, (size_t)v));
            mean /= (double)n_vocab;
            for (int64_t v = 0; v < n_vocab; v++) {
                double rv = json_number_value(json_array_get(r, (size_t)v)), d = x[(size_t)pos * n_vocab + v] - rv;
                var += (rv - mean) * (rv - mean);
                se += d * d;
                if (fabs(d) > maxd || isnan(d)) maxd = isnan(d) ? INFINITY : fabs(d);
            }
            double sd = sqrt(var / (double)n_vocab), rel = sqrt(se / (double)n_vocab) / sd, mx = maxd / sd;
            if (rel > worst_rel || isnan(rel)) worst_rel = rel;
            if (mx > worst_abs || isnan(mx)) worst_abs = mx;
            CHECKF(rel <= R && mx <= M, "%s row %lld: rel_rms %.3g (limit %g), max_abs/std %.3g (limit %g)",
                   json_string_value(json_object_get(cs, "name")), (long long)pos, rel, R, mx, M);
            checked++;
        }
        printf("  %s %s: %d rows, worst rel_rms %.2e, worst max_abs/std %.2e\n", model,
               json_string_value(json_object_get(cs, "name")), checked, worst_rel, worst_abs);
    }
    unlink(out);
    free(x);
    free(csv);
    free(cmd);
}

/* If MODEL.llama2c-greedy200.txt exists, the engine's from_bos greedy ids, detokenized by the
 * CLI, must be exactly its text (llama2.c's output for the same weights). */
static void check_text(const char *model, const char *ids_line) {
    char txt[1100], cmd[4096 + 1100];
    snprintf(txt, sizeof txt, "%.*s.llama2c-greedy200.txt", (int)(strlen(model) - 5), model);
    if (access(txt, R_OK) != 0) return;
    size_t want_len;
    e0_err e;
    char *want = e0_read_file(txt, 1 << 20, &want_len, &e);
    CHECKF(want != NULL, "%s", e.msg);
    char ids[4096];
    size_t k = 0;
    for (const char *p = ids_line; *p && *p != '\n' && k + 2 < sizeof ids; p++) ids[k++] = *p == ' ' ? ',' : *p;
    ids[k] = 0;
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer detokenize --model %s --ids %s", t_build(), model, ids);
    char *got = malloc(1 << 16);
    int rc = t_sh(cmd, got, 1 << 16);
    CHECKF(rc == 0, "detokenize exited %d", rc);
    if (want) {
        size_t n = want_len;
        if (n && want[n - 1] == '\n') n--; /* the README: without llama2.c's final newline */
        CHECKF(strlen(got) == n && !memcmp(got, want, n), "text of the greedy ids differs from %s:\n got: %.200s\nwant: %.200s", txt, got, want);
        printf("  %s: %zu bytes of text match llama2.c\n", model, n);
    }
    free(want);
    free(got);
}

static void check_greedy(const char *model, json_t *g) {
    json_t *prompt = json_object_get(g, "prompt"), *ids = json_object_get(g, "ids");
    json_int_t n = json_integer_value(json_object_get(g, "n")), must = json_integer_value(json_object_get(g, "must_match"));
    char *csv = ids_csv(prompt), *cmd = malloc(strlen(csv) + 1024), *out = malloc(1 << 16);
    sprintf(cmd, "%s/bin/edge0-infer run --model %s --tokens %s -n %lld --temp 0 --print-ids", t_build(), model, csv,
            (long long)n);
    int rc = t_sh(cmd, out, 1 << 16);
    CHECKF(rc == 0, "run exited %d", rc);
    char *p = out;
    json_int_t k = 0, matched = 0;
    int ok = 1;
    for (; k < n; k++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        p = end;
        if (k < must) {
            if (v != json_integer_value(json_array_get(ids, (size_t)k))) ok = 0;
            else if (ok) matched++;
        }
    }
    CHECKF(k == n, "%s: got %lld ids, expected exactly %lld", json_string_value(json_object_get(g, "name")), (long long)k,
           (long long)n);
    CHECKF(ok && matched == must, "%s: first mismatch at %lld (must match %lld)", json_string_value(json_object_get(g, "name")),
           (long long)matched, (long long)must);
    if (!strcmp(json_string_value(json_object_get(g, "name")), "from_bos")) check_text(model, out);
    free(csv);
    free(cmd);
    free(out);
}

static void check_model(const char *dir, const char *json_name) {
    char path[1024], model[1024];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    json_error_t je;
    json_t *gold = json_load_file(path, 0, &je);
    CHECKF(gold != NULL, "cannot parse %s: %s", path, je.text);
    if (!gold) return;
    snprintf(model, sizeof model, "%s/%s", dir, json_string_value(json_object_get(gold, "model")));
    int64_t n_vocab = json_integer_value(json_object_get(gold, "n_vocab"));
    json_t *cs;
    size_t i;
    json_array_foreach(json_object_get(gold, "cases"), i, cs) check_logits_case(model, gold, cs, n_vocab);
    json_array_foreach(json_object_get(gold, "greedy"), i, cs) check_greedy(model, cs);
    json_decref(gold);
}

int main(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/golden", t_shared());
    if (!t_need_shared("golden", NULL)) return T_DONE();
    DIR *d = opendir(dir);
    t_begin("golden directory present");
    CHECKF(d != NULL, "cannot open %s", dir);
    t_end();
    if (!d) return T_DONE();
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t len = strlen(de->d_name);
        if (len > 12 && !strcmp(de->d_name + len - 12, ".golden.json")) names[n++] = strdup(de->d_name);
    }
    closedir(d);
    t_begin("golden models found");
    CHECKF(n > 0, "no *.golden.json in %s", dir);
    t_end();
    for (int i = 0; i < n; i++) {
        char name[300];
        snprintf(name, sizeof name, "golden %s", names[i]);
        t_begin(name);
        check_model(dir, names[i]);
        t_end();
        free(names[i]);
    }
    return T_DONE();
}
