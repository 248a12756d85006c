/* report_md.c — a report as Markdown: provenance, a results table per configuration (min to max
 * with the median, like docs' reference tables), every process with its conditions, warnings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "measure/sysinfo.h"

/* A JSON value as short text for a table cell or a line: strings as is, numbers, compact JSON
 * otherwise; '|' and newlines made harmless for Markdown tables. */
static void put_value(e0_strbuf *b, const json_t *v) {
    char *text = NULL;
    const char *s;
    if (!v) s = "—";
    else if (json_is_string(v)) s = json_string_value(v);
    else s = text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!s) s = "?";
    for (const char *p = s; *p; p++) {
        if (*p == '|') e0_sb_printf(b, "\\|");
        else if (*p == '\n' || *p == '\r') e0_sb_printf(b, " ");
        else e0_sb_printf(b, "%c", *p);
    }
    free(text);
}

/* Scale for a unit given the largest value: returns the divisor and sets the shown unit. */
static double unit_scale(const char *unit, double max, const char **shown) {
    *shown = unit;
    if (!strcmp(unit, "bytes")) {
        if (max >= 1073741824.0) return *shown = "GiB", 1073741824.0;
        return *shown = "MiB", 1048576.0;
    }
    if (!strcmp(unit, "s") && max < 1.0) return *shown = "ms", 1e-3;
    return 1.0;
}

static void put_number(e0_strbuf *b, double v) {
    double a = fabs(v);
    if (a >= 100) e0_sb_printf(b, "%.1f", v);
    else if (a >= 10) e0_sb_printf(b, "%.1f", v);
    else if (a >= 0.1 || a == 0) e0_sb_printf(b, "%.2f", v);
    else e0_sb_printf(b, "%.3g", v);
}

/* "min to max unit (median m)" from a metric summary, or its unavailable text. */
static void put_summary(e0_strbuf *b, const json_t *s) {
    if (!json_is_object(s)) {
        put_value(b, s);
        return;
    }
    double mn = json_number_value(json_object_get(s, "min")), mx = json_number_value(json_object_get(s, "max"));
    double md = json_number_value(json_object_get(s, "median"));
    const char *unit = json_string_value(json_object_get(s, "unit"));
    const char *shown;
    double k = unit_scale(unit ? unit : "", mx, &shown);
    put_number(b, mn / k);
    if (mx != mn) {
        e0_sb_printf(b, " to ");
        put_number(b, mx / k);
    }
    e0_sb_printf(b, " %s", shown);
    if (mx != mn) {
        e0_sb_printf(b, " (median ");
        put_number(b, md / k);
        e0_sb_printf(b, ")");
    }
}

static void put_row_metric(e0_strbuf *b, const json_t *row, const metric_def *m) {
    double v;
    if (json_path_number(row, m->key, &v) != 0) {
        e0_sb_printf(b, "—");
        return;
    }
    const char *shown;
    double k = unit_scale(m->unit, v, &shown);
    put_number(b, v / k);
    e0_sb_printf(b, " %s", shown);
}

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

static void put_provenance(e0_strbuf *b, const json_t *r) {
    const json_t *id = get(r, "identity"), *eng = get(id, "engine"), *model = get(id, "model");
    const json_t *dev = get(r, "device"), *proto = get(r, "protocol");
    e0_sb_printf(b, "# edge0-bench report\n\n");
    e0_sb_printf(b, "- Created: ");
    put_value(b, get(r, "created_utc"));
    e0_sb_printf(b, "\n- Engine: ");
    if (json_is_object(eng)) {
        put_value(b, get(eng, "version"));
        e0_sb_printf(b, ", commit ");
        put_value(b, get(eng, "git_commit"));
        e0_sb_printf(b, json_is_true(get(eng, "git_dirty")) ? " (dirty)" : "");
        e0_sb_printf(b, ", SIMD ");
        put_value(b, get(eng, "simd"));
        e0_sb_printf(b, ", compiler ");
        put_value(b, get(eng, "compiler"));
        e0_sb_printf(b, "\n- Engine flags: `");
        put_value(b, get(eng, "cflags"));
        e0_sb_printf(b, "`");
    } else {
        put_value(b, eng);
    }
    e0_sb_printf(b, "\n- Binary: `");
    put_value(b, get(id, "cli"));
    e0_sb_printf(b, "`, sha256 `");
    put_value(b, get(id, "cli_sha256"));
    e0_sb_printf(b, "`\n- Model: `");
    put_value(b, get(id, "model_path"));
    e0_sb_printf(b, "`, sha256 `");
    put_value(b, get(id, "model_sha256"));
    e0_sb_printf(b, "`");
    if (json_is_object(model)) {
        e0_sb_printf(b, ", architecture ");
        put_value(b, get(model, "architecture"));
        e0_sb_printf(b, ", parameters ");
        put_value(b, get(model, "params_total"));
        e0_sb_printf(b, " (active ");
        put_value(b, get(model, "params_active"));
        e0_sb_printf(b, "), tensor types ");
        put_value(b, get(model, "tensor_types"));
    }
    e0_sb_printf(b, "\n- Device: ");
    put_value(b, get(dev, "cpu_model"));
    e0_sb_printf(b, ", ");
    put_value(b, get(dev, "logical_cores"));
    e0_sb_printf(b, " logical / ");
    put_value(b, get(dev, "physical_cores"));
    e0_sb_printf(b, " physical cores, ");
    const json_t *mem = get(dev, "memory_total_bytes");
    if (json_is_integer(mem)) e0_sb_printf(b, "%.1f GiB", (double)json_integer_value(mem) / 1073741824.0);
    else put_value(b, mem);
    e0_sb_printf(b, ", ");
    put_value(b, get(dev, "machine"));
    /* The kernel and governor from the first snapshot. */
    const json_t *cfg0 = json_array_get(get(r, "configurations"), 0);
    const json_t *snap = get(json_array_get(get(cfg0, "processes"), 0), "before");
    if (snap) {
        e0_sb_printf(b, "\n- Kernel: ");
        put_value(b, get(snap, "kernel"));
        e0_sb_printf(b, "; governor ");
        put_value(b, get(snap, "governor"));
    }
    e0_sb_printf(b, "\n- Protocol: prompt `");
    put_value(b, get(proto, "prompt_file"));
    e0_sb_printf(b, "` (");
    put_value(b, get(proto, "prompt"));
    e0_sb_printf(b, "), ");
    put_value(b, get(proto, "warmup"));
    e0_sb_printf(b, " warm-up then ");
    put_value(b, get(proto, "ntok"));
    e0_sb_printf(b, " timed decode steps, ");
    put_value(b, get(proto, "runs"));
    e0_sb_printf(b, " processes per configuration, ");
    put_value(b, get(proto, "cooldown_seconds"));
    e0_sb_printf(b, " s cool-down; configurations ");
    put_value(b, get(proto, "configs"));
    e0_sb_printf(b, "; options ");
    put_value(b, get(proto, "options"));
    e0_sb_printf(b, "\n- Harness: commit ");
    put_value(b, get(get(r, "harness"), "git_commit"));
    e0_sb_printf(b, "\n\n");
}

static void put_results(e0_strbuf *b, const json_t *r) {
    const json_t *configs = get(r, "configurations");
    e0_sb_printf(b, "## Results\n\nEach range is the minimum to maximum over the successful processes of a "
                 "configuration; the median is in parentheses.\n\n");
    e0_sb_printf(b, "| Configuration | First token | Prefill | Decode | Memory peak (RSS) | Processes |\n");
    e0_sb_printf(b, "| --- | --- | --- | --- | --- | --- |\n");
    size_t i;
    const json_t *c;
    static const char *main_keys[] = {"prefill_seconds", "prefill_tokens_per_second", "decode_tokens_per_second",
                                      "memory.peak_rss_bytes"};
    json_array_foreach(configs, i, c) {
        e0_sb_printf(b, "| `");
        put_value(b, get(c, "name"));
        e0_sb_printf(b, "` |");
        for (size_t k = 0; k < 4; k++) {
            e0_sb_printf(b, " ");
            put_summary(b, get(get(c, "metrics"), main_keys[k]));
            e0_sb_printf(b, " |");
        }
        e0_sb_printf(b, " %lld ok, %lld failed, %lld refused |\n", (long long)json_integer_value(get(c, "ok")),
                  (long long)json_integer_value(get(c, "failed")), (long long)json_integer_value(get(c, "refused")));
    }
    e0_sb_printf(b, "\n| Configuration | Inter-token latency p50 | Inter-token latency p99 | Energy |\n");
    e0_sb_printf(b, "| --- | --- | --- | --- |\n");
    json_array_foreach(configs, i, c) {
        e0_sb_printf(b, "| `");
        put_value(b, get(c, "name"));
        e0_sb_printf(b, "` | ");
        put_summary(b, get(get(c, "metrics"), "itl.p50"));
        e0_sb_printf(b, " | ");
        put_summary(b, get(get(c, "metrics"), "itl.p99"));
        e0_sb_printf(b, " | ");
        put_summary(b, get(get(c, "metrics"), "energy.joules_per_token"));
        e0_sb_printf(b, " |\n");
    }
    e0_sb_printf(b, "\n### Effective configurations\n\n");
    json_array_foreach(configs, i, c) {
        e0_sb_printf(b, "- `");
        put_value(b, get(c, "name"));
        e0_sb_printf(b, "`: `");
        put_value(b, get(c, "effective_config"));
        e0_sb_printf(b, "`%s\n", json_is_false(get(c, "effective_config_consistent")) ? " (processes disagree!)" : "");
    }
}

static void put_processes(e0_strbuf *b, const json_t *r) {
    e0_sb_printf(b, "\n## Processes\n\n");
    e0_sb_printf(b, "| Configuration | # | Status | First token | Prefill | Decode | Peak RSS | Load before | Notes |\n");
    e0_sb_printf(b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    size_t i, j;
    const json_t *c, *p;
    json_array_foreach(get(r, "configurations"), i, c) {
        json_array_foreach(get(c, "processes"), j, p) {
            const json_t *row = get(p, "row");
            e0_sb_printf(b, "| `");
            put_value(b, get(c, "name"));
            e0_sb_printf(b, "` | ");
            put_value(b, get(p, "index"));
            e0_sb_printf(b, " | ");
            put_value(b, get(p, "status"));
            for (size_t k = 0; k < 4; k++) {
                e0_sb_printf(b, " | ");
                put_row_metric(b, row, &METRICS[k]);
            }
            e0_sb_printf(b, " | ");
            const json_t *load = get(get(p, "before"), "load_avg");
            if (json_is_array(load)) e0_sb_printf(b, "%.2f", json_number_value(json_array_get(load, 0)));
            else put_value(b, load);
            e0_sb_printf(b, " | ");
            int first = 1;
            if (json_is_string(get(p, "reason"))) {
                put_value(b, get(p, "reason"));
                first = 0;
            }
            size_t k;
            const json_t *w;
            json_array_foreach(get(get(p, "conditions"), "warnings"), k, w) {
                e0_sb_printf(b, first ? "" : "; ");
                put_value(b, w);
                first = 0;
            }
            e0_sb_printf(b, " |\n");
        }
    }
}

/* A compare report (edge0-bench compare): the verdict, each engine's identity and the ratios to
 * the first engine. */
static void put_comparison(e0_strbuf *b, const json_t *r) {
    const json_t *cmp = get(r, "comparison"), *configs = get(r, "configurations");
    e0_sb_printf(b, "## Comparison\n\n");
    if (json_is_false(get(cmp, "comparable"))) {
        e0_sb_printf(b, "**Refused: these engines did not run alike, so their numbers are not compared.**\n\n");
        size_t i;
        const json_t *x;
        json_array_foreach(get(cmp, "refused"), i, x) {
            e0_sb_printf(b, "- ");
            put_value(b, x);
            e0_sb_printf(b, "\n");
        }
        e0_sb_printf(b, "\n");
    }
    e0_sb_printf(b, "Same prompt token ids (%lld), threads, context and greedy sampling; processes alternated.\n\n",
                 (long long)json_integer_value(get(get(r, "protocol"), "prompt_tokens")));
    e0_sb_printf(b, "| Engine | Version | Model sha256 | KV type | Prefill / first | Decode / first | First token / first |\n");
    e0_sb_printf(b, "| --- | --- | --- | --- | --- | --- | --- |\n");
    size_t i;
    const json_t *c;
    json_array_foreach(configs, i, c) {
        const json_t *id = get(c, "identity"), *eng = get(id, "engine"), *terms = get(id, "terms");
        const json_t *ratio = get(get(cmp, "first_over_engine"), json_string_value(get(c, "name")));
        e0_sb_printf(b, "| `");
        put_value(b, get(c, "name"));
        e0_sb_printf(b, "` | ");
        put_value(b, get(eng, "git_commit") ? get(eng, "git_commit") : get(eng, "commit"));
        e0_sb_printf(b, " | `%.16s` | ", json_string_value(get(id, "model_sha256")) ? json_string_value(get(id, "model_sha256")) : "?");
        put_value(b, get(terms, "kv_type_k"));
        static const char *const keys[] = {"prefill_tokens_per_second", "decode_tokens_per_second", "prefill_seconds"};
        for (size_t k = 0; k < 3; k++) {
            const json_t *v = get(ratio, keys[k]);
            if (i == 0) e0_sb_printf(b, " | 1 (reference)");
            else if (json_is_number(v)) e0_sb_printf(b, " | %.3gx", 1.0 / json_number_value(v));
            else {
                e0_sb_printf(b, " | ");
                put_value(b, v);
            }
        }
        e0_sb_printf(b, " |\n");
    }
    e0_sb_printf(b, "\n");
}

char *report_markdown(const json_t *r) {
    e0_strbuf b = {0};
    put_provenance(&b, r);
    if (get(r, "comparison")) put_comparison(&b, r);
    if (get(r, "comparison")) report_md_modes(&b, r); /* compare --mode server, sustained, depth */
    put_results(&b, r);
    put_processes(&b, r);
    const json_t *w = get(r, "warnings");
    if (json_array_size(w)) {
        e0_sb_printf(&b, "\n## Warnings\n\n");
        size_t i;
        const json_t *x;
        json_array_foreach(w, i, x) {
            e0_sb_printf(&b, "- ");
            put_value(&b, x);
            e0_sb_printf(&b, "\n");
        }
    }
    return e0_sb_take(&b);
}
