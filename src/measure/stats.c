/* stats.c — median, percentiles, mean, slope, small-n warning, range verdicts and RAPL
 * wraparound (see stats.h for the exact rules). */
#include "measure/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *sorted_copy(const double *x, size_t n) {
    double *s = malloc(n * sizeof *s);
    if (!s) return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

/* Linear interpolation between closest ranks on an already sorted array. */
static double percentile_sorted(const double *s, size_t n, double p) {
    if (n == 0) return NAN;
    if (p <= 0) return s[0];
    if (p >= 1) return s[n - 1];
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n) return s[n - 1];
    return s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
}

double e0_percentile(const double *x, size_t n, double p) {
    if (n == 0) return NAN;
    double *s = sorted_copy(x, n);
    if (!s) return NAN;
    double r = percentile_sorted(s, n, p);
    free(s);
    return r;
}

double e0_median(const double *x, size_t n) { return e0_percentile(x, n, 0.5); }

double e0_mean(const double *x, size_t n) {
    if (n == 0) return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += x[i];
    return sum / (double)n;
}

int e0_summarize(const double *x, size_t n, e0_summary *s) {
    s->n = n;
    if (n == 0) {
        s->min = s->max = s->mean = s->median = s->p50 = s->p95 = s->p99 = NAN;
        return 0;
    }
    double *v = sorted_copy(x, n);
    if (!v) return -1;
    s->min = v[0];
    s->max = v[n - 1];
    s->mean = e0_mean(x, n);
    s->median = s->p50 = percentile_sorted(v, n, 0.5);
    s->p95 = percentile_sorted(v, n, 0.95);
    s->p99 = percentile_sorted(v, n, 0.99);
    free(v);
    return 0;
}

double e0_slope(const double *t, const double *y, size_t n) {
    if (n < 2) return NAN;
    double mt = e0_mean(t, n), my = e0_mean(y, n), sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += (t[i] - mt) * (y[i] - my);
        sxx += (t[i] - mt) * (t[i] - mt);
    }
    return sxx > 0 ? sxy / sxx : NAN;
}

const char *e0_small_n_warning(size_t n, char *buf, size_t cap) {
    if (cap == 0) return buf;
    buf[0] = 0;
    if (n < E0_STATS_SMALL_N)
        snprintf(buf, cap, "n=%zu < %d: p95/p99 are not stable at this sample size", n, E0_STATS_SMALL_N);
    return buf;
}

json_t *e0_distribution_json(const double *x, size_t n) {
    if (n == 0) return json_string("unavailable: no samples");
    e0_summary s;
    if (e0_summarize(x, n, &s) != 0) return NULL;
    json_t *o = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t)n, "min", s.min, "max", s.max,
                          "mean", s.mean, "p50", s.p50, "p95", s.p95, "p99", s.p99);
    char w[128];
    if (o && *e0_small_n_warning(n, w, sizeof w)) json_object_set_new(o, "warning", json_string(w));
    return o;
}

enum e0_verdict e0_range_verdict(double a_min, double a_max, double b_min, double b_max) {
    if (b_min > a_max) return E0_HIGHER;
    if (b_max < a_min) return E0_LOWER;
    return E0_WITHIN_SPREAD; /* overlapping ranges, or NaN anywhere */
}

const char *e0_verdict_name(enum e0_verdict v) {
    switch (v) {
    case E0_HIGHER: return "higher, beyond the run-to-run spread";
    case E0_LOWER: return "lower, beyond the run-to-run spread";
    default: return "within the run-to-run spread";
    }
}

int e0_rapl_delta_uj(uint64_t before, uint64_t after, uint64_t max_range_uj, uint64_t *delta) {
    if (max_range_uj == 0 || before > max_range_uj || after > max_range_uj) return -1;
    /* One wrap: from `before` up to the top of the range, then from 0 to `after`. */
    *delta = after >= before ? after - before : (max_range_uj - before) + after;
    return 0;
}
