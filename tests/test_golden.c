/* test_golden.c — every model in ../shared/golden against its reference (llama.cpp) outputs,
 * through the CLI exactly as outside checks use it: `logits` rows within the README's tolerances
 * (rows with near-tie routing excluded) and `run --print-ids` greedy prefixes (must_match ids),
 * both with the references' F32 KV cache (-ctk f32 -ctv f32); then the other KV cache types:
 * f16 and q8_0 logits within the quantized-model tolerance (see KV_M_Q8), q4_0 finite, bad types
 * rejected, KV bytes in `info` and `bench` by the formula.
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

/* The reference runs use an F32 KV cache (the README); the CLI's default is f16. */
#define KV_F32 "-ctk f32 -ctv f32"
/* Other KV cache types: the quantized-model relative RMS bound of the README (0.05; bugs measure
 * 0.35 and more), and a max|d|/std bound set as the README's M = 0.5 was (1.5x llama.cpp's own
 * worst against these references with an F32 KV cache, 0.33): 1.5x llama.cpp's own worst with the
 * same KV types. Measured on qwen3moe, the most sensitive model here (a KV rounding changes which
 * way its 8-bit activation blocks round), with the llama.cpp build of the references: f16 K and V
 * 0.50 (flash attention off; 0.42 on), q8_0 K and V 0.66 (flash attention, as q8_0 V needs),
 * q8_0 K + f16 V 0.53. This engine: f16 0.40-0.51 depending only on the SIMD level's summation
 * order, q8_0 up to 0.71. Every other golden model stays below 0.4 with every type. */
#define KV_R 0.05
#define KV_M 0.75
#define KV_M_Q8 1.0

/* One logits case with the KV flags `kv`, within R, M (R < 0: the JSON's tolerance). */
static void check_logits_case(const char *model, json_t *gold, json_t *cs, int64_t n_vocab, const char *kv, double R,
                              double M) {
    if (R < 0) {
        R = json_real_value(json_object_get(json_object_get(gold, "tolerance"), "rel_rms"));
        M = json_real_value(json_object_get(json_object_get(gold, "tolerance"), "max_abs_over_std"));
    }
    json_t *tokens = json_object_get(cs, "tokens"), *rows = json_object_get(cs, "rows"),
           *ties = json_object_get(cs, "routing_near_tie_rows"), *ref = json_object_get(cs, "logits");
    char out[256], *csv = ids_csv(tokens), *cmd = malloc(strlen(csv) + 1024);
    snprintf(out, sizeof out, "%s/test-logits-%d.bin", t_build(), (int)getpid());
    sprintf(cmd, "%s/bin/edge0-infer logits --model %s --tokens %s --out %s %s", t_build(), model, csv, out, kv);
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
            CHECKF(rel <= R && mx <= M, "%s %s row %lld: rel_rms %.3g (limit %g), max_abs/std %.3g (limit %g)",
                   json_string_value(json_object_get(cs, "name")), kv, (long long)pos, rel, R, mx, M);
            checked++;
        }
        printf("  %s %s (%s): %d rows, worst rel_rms %.2e, worst max_abs/std %.2e\n", model,
               json_string_value(json_object_get(cs, "name")), kv, checked, worst_rel, worst_abs);
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
    sprintf(cmd, "%s/bin/edge0-infer run --model %s --tokens %s -n %lld --temp 0 --print-ids " KV_F32, t_build(), model, csv,
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

/* A string member of o, "" when absent. */
static const char *jstr(json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/* The number after `key` in text (-1 if absent). */
static long long number_after(const char *text, const char *key) {
    const char *p = strstr(text, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* Logits of one case with the KV flags `kv` into x (count floats); the CLI's exit status, its
 * stderr into err. */
static int run_logits(const char *model, json_t *cs, const char *kv, float *x, size_t count, char *err, size_t cap) {
    char out[256], errf[256], *csv = ids_csv(json_object_get(cs, "tokens")), *cmd = malloc(strlen(csv) + 1024);
    snprintf(out, sizeof out, "%s/test-kv-%d.bin", t_build(), (int)getpid());
    snprintf(errf, sizeof errf, "%s/test-kv-%d.err", t_build(), (int)getpid());
    sprintf(cmd, "%s/bin/edge0-infer logits --model %s --tokens %s --out %s %s 2>%s", t_build(), model, csv, out, kv, errf);
    int rc = t_sh(cmd, NULL, 0);
    FILE *f = fopen(out, "rb");
    size_t got = f ? fread(x, sizeof(float), count, f) : 0;
    if (f) fclose(f);
    if (rc == 0 && got != count) rc = 99;
    err[0] = 0;
    if ((f = fopen(errf, "r"))) {
        size_t n = fread(err, 1, cap - 1, f);
        err[n] = 0;
        fclose(f);
    }
    unlink(out);
    unlink(errf);
    free(csv);
    free(cmd);
    return rc;
}

/* KV cache types other than F32 (-ctk/-ctv): f16 and q8_0 within the quantized-model tolerance
 * of the references (q8_0 / q4_0 need head_dim a multiple of 32: otherwise one clear error), q4_0
 * finite; an unknown type is an error; the KV bytes per token `info` and `bench` print match the
 * formula layers x n_head_kv x head_dim x (bytes per K value + bytes per V value). */
static void check_kv_types(const char *model, json_t *gold, int64_t n_vocab) {
    char cmd[1400], info[8192], err[4096];
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer info --model %s", t_build(), model);
    CHECKF(t_sh(cmd, info, sizeof info) == 0, "info exited non-zero");
    long long layers = number_after(info, "layers:"), kv_heads = number_after(info, "(kv "),
              head_dim = number_after(info, "head_dim "), per_tok = number_after(info, "kv cache:");
    CHECKF(layers > 0 && kv_heads > 0 && head_dim > 0, "info: layers %lld, kv heads %lld, head_dim %lld", layers, kv_heads,
           head_dim);
    CHECKF(per_tok == 2 * layers * kv_heads * head_dim * 2, "info: %lld KV bytes per token at f16, formula %lld", per_tok,
           2 * layers * kv_heads * head_dim * 2);
    if (head_dim % 32 == 0) {
        CHECKF(number_after(info, " q8_0 ") == 2 * layers * kv_heads * (head_dim / 32) * 34, "info: q8_0 KV bytes");
        CHECKF(number_after(info, " q4_0 ") == 2 * layers * kv_heads * (head_dim / 32) * 18, "info: q4_0 KV bytes");
    } else CHECKF(strstr(info, " q8_0 ") == NULL, "info lists q8_0 KV bytes for head_dim %lld", head_dim);

    json_t *cs;
    size_t i;
    const char *types[] = {"-ctk f16 -ctv f16", "-ctk q8_0 -ctv q8_0", "-ctk q8_0 -ctv f16", "-ctk f16 -ctv q8_0"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (strstr(types[t], "q8_0") && head_dim % 32) {
            json_t *first = json_array_get(json_object_get(gold, "cases"), 0);
            size_t count = json_array_size(json_object_get(first, "tokens")) * (size_t)n_vocab;
            float *x = malloc(count * sizeof(float));
            int rc = run_logits(model, first, types[t], x, count, err, sizeof err);
            CHECKF(rc != 0 && strstr(err, "head_dim") && strstr(err, "multiple of 32"),
                   "%s with head_dim %lld: exit %d, stderr: %.300s", types[t], head_dim, rc, err);
            free(x);
            continue;
        }
        double m = strstr(types[t], "q8_0") ? KV_M_Q8 : KV_M;
        json_array_foreach(json_object_get(gold, "cases"), i, cs) check_logits_case(model, gold, cs, n_vocab, types[t], KV_R, m);
    }
    /* q4_0: runs and gives finite logits */
    json_array_foreach(json_object_get(gold, "cases"), i, cs) {
        size_t count = json_array_size(json_object_get(cs, "tokens")) * (size_t)n_vocab;
        float *x = malloc(count * sizeof(float));
        int rc = run_logits(model, cs, "-ctk q4_0 -ctv q4_0", x, count, err, sizeof err);
        if (head_dim % 32) {
            CHECKF(rc != 0 && strstr(err, "head_dim"), "q4_0 with head_dim %lld: exit %d, stderr: %.300s", head_dim, rc, err);
        } else {
            CHECKF(rc == 0, "q4_0 KV: exit %d, stderr: %.300s", rc, err);
            size_t bad = 0;
            for (size_t k = 0; rc == 0 && k < count; k++) bad += !isfinite(x[k]);
            CHECKF(bad == 0, "q4_0 KV: %zu of %zu logits not finite", bad, count);
        }
        free(x);
        if (head_dim % 32) break;
    }
    /* bench: the types in its config, KV bytes per token and of the whole cache by the formula */
    char prompt[300], *row = malloc(1 << 20);
    snprintf(prompt, sizeof prompt, "%s/test-kv-%d.txt", t_build(), (int)getpid());
    FILE *pf = fopen(prompt, "w");
    if (pf) fputs("Once upon a time", pf), fclose(pf);
    int len = snprintf(cmd, sizeof cmd,
                       "%s/bin/edge0-infer bench -m %s --raw --user-file %s --warmup 0 --ntok 2 -c 64 -ctk f32 -ctv f16 2>/dev/null",
                       t_build(), model, prompt);
    CHECKF(len > 0 && (size_t)len < sizeof cmd && t_sh(cmd, row, 1 << 20) == 0, "bench exited non-zero (or paths too long)");
    unlink(prompt);
    json_error_t je;
    json_t *r = json_loads(row, JSON_DISABLE_EOF_CHECK, &je), *cfg = json_object_get(r, "config");
    long long per = layers * kv_heads * head_dim * (4 + 2); /* f32 K + f16 V */
    CHECKF(!strcmp(jstr(cfg, "kv_type_k"), "f32") && !strcmp(jstr(cfg, "kv_type_v"), "f16"),
           "bench config: KV types missing or wrong: %.300s", row);
    CHECKF(json_integer_value(json_object_get(cfg, "kv_bytes_per_token")) == per &&
               json_integer_value(json_object_get(r, "kv_cache_bytes")) == 64 * per,
           "bench: kv_bytes_per_token %lld, kv_cache_bytes %lld; formula %lld per token x 64",
           (long long)json_integer_value(json_object_get(cfg, "kv_bytes_per_token")),
           (long long)json_integer_value(json_object_get(r, "kv_cache_bytes")), per);
    json_decref(r);
    free(row);

    /* an unknown type: one clear error, nothing written */
    json_t *first = json_array_get(json_object_get(gold, "cases"), 0);
    float dummy[1];
    int rc = run_logits(model, first, "-ctv q9_0", dummy, 0, err, sizeof err);
    CHECKF(rc != 0 && strstr(err, "unknown KV cache type 'q9_0'") && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", ':'),
           "-ctv q9_0: exit %d, stderr: %.300s", rc, err);
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
    json_array_foreach(json_object_get(gold, "cases"), i, cs) check_logits_case(model, gold, cs, n_vocab, KV_F32, -1, -1);
    json_array_foreach(json_object_get(gold, "greedy"), i, cs) check_greedy(model, cs);
    check_kv_types(model, gold, n_vocab);
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
