/* trace.c — reading expert-routing traces (format and rules in trace.h). Two passes: every line
 * is checked and kept as a row; then the rows are put in order (steps = distinct (seq, token),
 * layers = distinct layer numbers), time order and uniqueness are checked, and the dense table
 * [step][layer][k] is built, filling the entries the recorder dropped. */
#include "engine/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    uint32_t seq, token, line;
    uint16_t layer;
    int8_t phase;
    uint32_t step; /* filled in the second pass */
} row;

typedef struct parser {
    const char *name;
    e0_err *e;
    int line;
} parser;

/* An error at the current line: "FILE:LINE: what". */
#define FAIL_AT(ps, ln, ...)                                                                     \
    do {                                                                                         \
        char what_[E0_ERR_LEN];                                                                  \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                              \
        e0_fail((ps)->e, "%s:%d: %s", (ps)->name, (int)(ln), what_);                            \
    } while (0)

/* Decimal digits at *p (at least one, nothing else) up to max; advances *p. */
static bool parse_uint(const char **p, const char *end, uint64_t max, uint64_t *out) {
    const char *s = *p;
    uint64_t v = 0;
    if (s >= end || *s < '0' || *s > '9') return false;
    while (s < end && *s >= '0' && *s <= '9') {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max) return false;
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

/* A finite non-negative decimal number ("0.25", "1", "3e-2"), ending before end. */
static bool parse_weight(const char **p, const char *end, float *out) {
    const char *s = *p;
    if (s >= end || !((*s >= '0' && *s <= '9') || *s == '.')) return false;
    char buf[64];
    size_t n = 0;
    while (s + n < end && n < sizeof buf - 1 && strchr("0123456789.eE+-", s[n])) n++;
    if (n == 0 || n == sizeof buf - 1) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *stop;
    double v = strtod(buf, &stop);
    if (stop != buf + n || !isfinite(v) || v < 0 || v > 3.4e38) return false;
    *p = s + n;
    *out = (float)v;
    return true;
}

static bool expect(const char **p, const char *end, char c) {
    if (*p >= end || **p != c) return false;
    (*p)++;
    return true;
}

void e0_trace_free(e0_trace *t) {
    if (!t) return;
    free(t->path);
    free(t->layer_id);
    free(t->ids);
    free(t->w);
    free(t->phase);
    free(t);
}

static int cmp_seq_layer(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_line(const void *a, const void *b) {
    const row *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* text[len] must be 0. */
static e0_trace *parse(const char *name, const char *text, size_t len, e0_err *e) {
    parser ps = {.name = name, .e = e};
    e0_trace *t = calloc(1, sizeof *t);
    row *rows = NULL;
    int *rids = NULL;
    float *rw = NULL;
    uint64_t *keys = NULL;
    uint8_t *have = NULL;
    int *li_of = NULL;
    size_t n_rows = 0, cap_rows = 0;
    bool weights = false;
    if (!t || !(t->path = strdup(name))) {
        e0_fail(e, "%s: out of memory", name);
        goto fail;
    }
    const char *slash = strrchr(t->path, '/');
    t->name = slash ? slash + 1 : t->path;

    const char *p = text, *text_end = text + len;
    for (ps.line = 1; p < text_end; ps.line++) {
        const char *nl = memchr(p, '\n', (size_t)(text_end - p));
        const char *end = nl ? nl : text_end, *next = nl ? nl + 1 : text_end;
        if (end > p && end[-1] == '\r') end--;
        const char *q = p;
        p = next;
        if (ps.line == 1) {
            uint64_t E, k;
            if (!(q + 4 <= end && !memcmp(q, "# E=", 4))) {
                FAIL_AT(&ps, ps.line, "expected the header '# E=<experts> k=<experts per token>'");
                goto fail;
            }
            q += 4;
            if (!parse_uint(&q, end, E0_TRACE_MAX_EXPERTS, &E) || E < 1) {
                FAIL_AT(&ps, ps.line, "E= must be an expert count from 1 to %d", E0_TRACE_MAX_EXPERTS);
                goto fail;
            }
            if (!(q + 3 <= end && !memcmp(q, " k=", 3))) {
                FAIL_AT(&ps, ps.line, "expected ' k=<experts per token>' after E=%llu", (unsigned long long)E);
                goto fail;
            }
            q += 3;
            if (!parse_uint(&q, end, E0_TRACE_MAX_K, &k) || k < 1 || k > E) {
                FAIL_AT(&ps, ps.line, "k= must be from 1 to min(E, %d)", E0_TRACE_MAX_K);
                goto fail;
            }
            if (q != end && *q != ';') {
                FAIL_AT(&ps, ps.line, "unexpected text after k=%llu (expected ';' or the end of the line)", (unsigned long long)k);
                goto fail;
            }
            t->n_expert = (int)E;
            t->k = (int)k;
            continue;
        }
        if (ps.line == 2) {
            static const char cols[] = "seq,token,phase,layer,experts";
            size_t n = (size_t)(end - q);
            if (n == sizeof cols - 1 && !memcmp(q, cols, n)) continue;
            if (n == sizeof cols - 1 + 8 && !memcmp(q, cols, sizeof cols - 1) && !memcmp(q + sizeof cols - 1, ",weights", 8)) {
                weights = true;
                continue;
            }
            FAIL_AT(&ps, ps.line, "expected the column line 'seq,token,phase,layer,experts' (optionally ',weights')");
            goto fail;
        }
        /* a data row */
        if (q == end) {
            FAIL_AT(&ps, ps.line, "empty line");
            goto fail;
        }
        if ((uint64_t)(n_rows + 1) * (uint64_t)t->k > E0_TRACE_MAX_ENTRIES || n_rows + 1 > UINT32_MAX / 2) {
            FAIL_AT(&ps, ps.line, "too many rows (at most %llu expert ids in all)", (unsigned long long)E0_TRACE_MAX_ENTRIES);
            goto fail;
        }
        if (n_rows == cap_rows) {
            size_t nc = cap_rows ? 2 * cap_rows : 1024;
            row *nr = realloc(rows, nc * sizeof *rows);
            if (nr) rows = nr;
            int *ni = nr ? realloc(rids, nc * (size_t)t->k * sizeof *rids) : NULL;
            if (ni) rids = ni;
            float *nw = ni && weights ? realloc(rw, nc * (size_t)t->k * sizeof *rw) : NULL;
            if (nw) rw = nw;
            if (!nr || !ni || (weights && !nw)) {
                e0_fail(e, "%s: out of memory", name);
                goto fail;
            }
            cap_rows = nc;
        }
        row r = {.line = (uint32_t)ps.line};
        uint64_t v;
        if (!parse_uint(&q, end, INT32_MAX, &v) || !expect(&q, end, ',')) {
            FAIL_AT(&ps, ps.line, "seq must be an integer from 0 to %d followed by ','", INT32_MAX);
            goto fail;
        }
        r.seq = (uint32_t)v;
        if (!parse_uint(&q, end, INT32_MAX, &v) || !expect(&q, end, ',')) {
            FAIL_AT(&ps, ps.line, "token must be an integer from 0 to %d followed by ','", INT32_MAX);
            goto fail;
        }
        r.token = (uint32_t)v;
        if (q < end && *q == ',') r.phase = -1;
        else if (q < end && (*q == '0' || *q == '1')) r.phase = (int8_t)(*q++ - '0');
        else q = end; /* fall into the error below */
        if (!expect(&q, end, ',')) {
            FAIL_AT(&ps, ps.line, "phase must be empty, 0 or 1, followed by ','");
            goto fail;
        }
        if (!parse_uint(&q, end, E0_TRACE_MAX_LAYER, &v) || !expect(&q, end, ',')) {
            FAIL_AT(&ps, ps.line, "layer must be an integer from 0 to %d followed by ','", E0_TRACE_MAX_LAYER);
            goto fail;
        }
        r.layer = (uint16_t)v;
        int *ids = rids + n_rows * (size_t)t->k;
        for (int s = 0; s < t->k; s++) {
            if (s > 0 && !expect(&q, end, ';')) {
                FAIL_AT(&ps, ps.line, "%d expert ids where the header says k=%d", s, t->k);
                goto fail;
            }
            if (!parse_uint(&q, end, (uint64_t)t->n_expert - 1, &v)) {
                FAIL_AT(&ps, ps.line, "expert %d: expected an id from 0 to %d (E=%d)", s + 1, t->n_expert - 1, t->n_expert);
                goto fail;
            }
            ids[s] = (int)v;
            for (int r2 = 0; r2 < s; r2++)
                if (ids[r2] == ids[s]) {
                    FAIL_AT(&ps, ps.line, "expert %d appears twice in one row", ids[s]);
                    goto fail;
                }
        }
        if (q < end && *q == ';') {
            FAIL_AT(&ps, ps.line, "more than k=%d expert ids", t->k);
            goto fail;
        }
        if (weights) {
            float *w = rw + n_rows * (size_t)t->k;
            if (!expect(&q, end, ',')) {
                FAIL_AT(&ps, ps.line, "expected ',' and the weights after the experts");
                goto fail;
            }
            for (int s = 0; s < t->k; s++)
                if ((s > 0 && !expect(&q, end, ';')) || !parse_weight(&q, end, &w[s])) {
                    FAIL_AT(&ps, ps.line, "weight %d: expected k=%d finite non-negative numbers separated by ';'", s + 1, t->k);
                    goto fail;
                }
        }
        if (q != end) {
            FAIL_AT(&ps, ps.line, "unexpected text after the %s", weights ? "weights" : "experts");
            goto fail;
        }
        rows[n_rows++] = r;
    }
    if (ps.line <= 2) {
        e0_fail(e, "%s: %s", name, ps.line == 1 ? "empty file (expected the header '# E=<experts> k=<experts per token>')"
                                                : "no column line 'seq,token,phase,layer,experts'");
        goto fail;
    }
    if (n_rows == 0) {
        e0_fail(e, "%s: no data rows", name);
        goto fail;
    }
    t->n_rows = n_rows;

    /* Time order and uniqueness: within one (seq, layer), tokens strictly increase. The sort is
     * by (seq, layer, line), so a violation shows as a token not above its predecessor. */
    qsort(rows, n_rows, sizeof *rows, cmp_seq_layer);
    for (size_t i = 1; i < n_rows; i++) {
        const row *a = &rows[i - 1], *b = &rows[i];
        if (a->seq == b->seq && a->layer == b->layer && b->token <= a->token) {
            FAIL_AT(&ps, b->line, "%s: seq %u token %u layer %u comes after token %u (line %u); rows of a sequence must be "
                                  "in time order, one per (seq, token, layer)",
                    b->token == a->token ? "duplicate row" : "out of order", b->seq, b->token, b->layer, a->token, a->line);
            goto fail;
        }
    }
    qsort(rows, n_rows, sizeof *rows, cmp_line); /* back to file order (rids / rw are indexed by it) */

    /* Steps: the distinct (seq, token), ascending. */
    keys = malloc(n_rows * sizeof *keys);
    if (!keys) {
        e0_fail(e, "%s: out of memory", name);
        goto fail;
    }
    for (size_t i = 0; i < n_rows; i++) keys[i] = (uint64_t)rows[i].seq << 32 | rows[i].token;
    qsort(keys, n_rows, sizeof *keys, cmp_u64);
    size_t n_step = 0;
    for (size_t i = 0; i < n_rows; i++)
        if (i == 0 || keys[i] != keys[n_step - 1]) keys[n_step++] = keys[i];
    t->n_step = (int)n_step;

    /* Layers: the distinct layer numbers, ascending. */
    li_of = malloc((E0_TRACE_MAX_LAYER + 1) * sizeof *li_of);
    if (!li_of) {
        e0_fail(e, "%s: out of memory", name);
        goto fail;
    }
    for (int l = 0; l <= E0_TRACE_MAX_LAYER; l++) li_of[l] = -1;
    for (size_t i = 0; i < n_rows; i++) li_of[rows[i].layer] = 0;
    int Lt = 0;
    for (int l = 0; l <= E0_TRACE_MAX_LAYER; l++)
        if (li_of[l] == 0) li_of[l] = Lt++;
    t->n_layer = Lt;

    uint64_t cells = (uint64_t)n_step * (uint64_t)Lt, entries = cells * (uint64_t)t->k;
    if (entries > E0_TRACE_MAX_ENTRIES) {
        e0_fail(e, "%s: %zu steps x %d layers x k=%d is more than %llu entries", name, n_step, Lt, t->k,
                (unsigned long long)E0_TRACE_MAX_ENTRIES);
        goto fail;
    }
    t->layer_id = malloc((size_t)Lt * sizeof *t->layer_id);
    t->ids = malloc((size_t)entries * sizeof *t->ids);
    t->w = weights ? malloc((size_t)entries * sizeof *t->w) : NULL;
    t->phase = malloc(n_step);
    have = calloc((size_t)cells, 1);
    if (!t->layer_id || !t->ids || (weights && !t->w) || !t->phase || !have) {
        e0_fail(e, "%s: out of memory", name);
        goto fail;
    }
    for (int l = 0; l <= E0_TRACE_MAX_LAYER; l++)
        if (li_of[l] >= 0) t->layer_id[li_of[l]] = l;
    memset(t->phase, 2, n_step); /* 2: not seen yet */
    for (size_t i = 0; i < n_rows; i++) {
        const row *r = &rows[i];
        uint64_t key = (uint64_t)r->seq << 32 | r->token;
        const uint64_t *hit = bsearch(&key, keys, n_step, sizeof *keys, cmp_u64);
        size_t s = (size_t)(hit - keys);
        if (t->phase[s] == 2) t->phase[s] = r->phase;
        else if (t->phase[s] != r->phase) {
            FAIL_AT(&ps, r->line, "phase %d differs from the phase %d of another row of seq %u token %u", r->phase,
                    t->phase[s], r->seq, r->token);
            goto fail;
        }
        size_t cell = s * (size_t)Lt + (size_t)li_of[r->layer];
        have[cell] = 1;
        memcpy(t->ids + cell * (size_t)t->k, rids + i * (size_t)t->k, (size_t)t->k * sizeof *t->ids);
        if (weights) memcpy(t->w + cell * (size_t)t->k, rw + i * (size_t)t->k, (size_t)t->k * sizeof *t->w);
    }
    /* Fill dropped entries: from the nearest earlier step of the layer, else the nearest later. */
    for (int li = 0; li < Lt; li++) {
        long last = -1;
        for (size_t s = 0; s < n_step; s++) {
            size_t cell = s * (size_t)Lt + (size_t)li;
            if (have[cell]) {
                if (last < 0) /* leading gap: copy back from this first logged step */
                    for (size_t g = 0; g < s; g++) {
                        size_t gc = g * (size_t)Lt + (size_t)li;
                        memcpy(t->ids + gc * (size_t)t->k, t->ids + cell * (size_t)t->k, (size_t)t->k * sizeof *t->ids);
                        if (weights) memcpy(t->w + gc * (size_t)t->k, t->w + cell * (size_t)t->k, (size_t)t->k * sizeof *t->w);
                        t->n_filled++;
                    }
                last = (long)s;
                continue;
            }
            if (last < 0) continue;
            size_t from = (size_t)last * (size_t)Lt + (size_t)li;
            memcpy(t->ids + cell * (size_t)t->k, t->ids + from * (size_t)t->k, (size_t)t->k * sizeof *t->ids);
            if (weights) memcpy(t->w + cell * (size_t)t->k, t->w + from * (size_t)t->k, (size_t)t->k * sizeof *t->w);
            t->n_filled++;
        }
    }
    goto done;
fail:
    e0_trace_free(t);
    t = NULL;
done: /* the parse's own buffers, on both paths */
    free(rows);
    free(rids);
    free(rw);
    free(keys);
    free(have);
    free(li_of);
    return t;
}

e0_trace *e0_trace_load(const char *path, e0_err *e) {
    size_t len;
    char *text = e0_read_file(path, E0_TRACE_MAX_BYTES, &len, e);
    if (!text) return NULL;
    e0_trace *t = parse(path, text, len, e);
    free(text);
    return t;
}

e0_trace *e0_trace_parse(const char *name, const char *text, size_t len, e0_err *e) {
    char *copy = malloc(len + 1);
    if (!copy) {
        e0_fail(e, "%s: out of memory", name);
        return NULL;
    }
    memcpy(copy, text, len);
    copy[len] = 0;
    e0_trace *t = parse(name, copy, len, e);
    free(copy);
    return t;
}

int e0_trace_check_model(const e0_trace *t, int64_t n_expert, int64_t k_used, e0_err *e) {
    if (t->n_expert != n_expert)
        return e0_fail(e, "routing trace %s: recorded with E=%d experts, the model has %lld", t->path, t->n_expert,
                       (long long)n_expert);
    if (t->k < k_used)
        return e0_fail(e, "routing trace %s: k=%d experts per token, fewer than the %lld the model uses", t->path, t->k,
                       (long long)k_used);
    return 0;
}

int e0_trace_layer_for(const e0_trace *t, int64_t l, int64_t n_model_layers) {
    if (n_model_layers <= 0 || l < 0) return 0;
    int64_t li = l * t->n_layer / n_model_layers;
    return (int)(li < t->n_layer ? li : t->n_layer - 1);
}

const int *e0_trace_experts(const e0_trace *t, uint64_t s, int li) {
    return t->ids + ((size_t)(s % (uint64_t)t->n_step) * (size_t)t->n_layer + (size_t)li) * (size_t)t->k;
}

const float *e0_trace_weights(const e0_trace *t, uint64_t s, int li) {
    if (!t->w) return NULL;
    return t->w + ((size_t)(s % (uint64_t)t->n_step) * (size_t)t->n_layer + (size_t)li) * (size_t)t->k;
}

/* ---- a simulated predictor (routing=replay with replay_predict; tools/expert_policy_sim) ---- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void e0_trace_guess(const int *truth, int64_t K, int64_t X, double p, uint64_t *rng, int *dst) {
    memcpy(dst, truth, (size_t)K * sizeof *dst);
    for (int64_t s = 0; s < K; s++) {
        double u = (double)(splitmix64(rng) >> 11) * 0x1.0p-53;
        if (u < p) continue;
        /* draw among the free experts: not in truth, not in dst */
        int64_t n_free = 0;
        for (int64_t x = 0; x < X; x++) {
            bool used = false;
            for (int64_t r = 0; r < K; r++) used |= truth[r] == x || dst[r] == x;
            n_free += !used;
        }
        if (n_free == 0) continue;
        int64_t pick = (int64_t)(splitmix64(rng) % (uint64_t)n_free);
        for (int64_t x = 0; x < X; x++) {
            bool used = false;
            for (int64_t r = 0; r < K; r++) used |= truth[r] == x || dst[r] == x;
            if (!used && pick-- == 0) {
                dst[s] = (int)x;
                break;
            }
        }
    }
}
