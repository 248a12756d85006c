/* stats.h — the small statistics the measurement harness reports: median, min/max, mean,
 * percentiles, least-squares slope, the small-sample warning, the range verdicts used by
 * `edge0-bench report compare` / `ab`, and the RAPL counter wraparound arithmetic.
 *
 * Percentile rule (documented in docs/bench.md): linear interpolation between closest ranks,
 * the same as numpy's default ("type 7"): sort x[0..n-1], h = (n - 1) * p, result
 * x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]). p50 of an even count is therefore
 * the mean of the two middle values (= the median). */
#ifndef E0_STATS_H
#define E0_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Below this many samples p95/p99 are not stable; a warning is attached. */
#define E0_STATS_SMALL_N 20

typedef struct e0_summary {
    size_t n;
    double min, max, mean, median, p50, p95, p99;
} e0_summary;

/* Percentile p in [0, 1] of x[0..n-1] (unsorted; not modified). NaN when n == 0. */
double e0_percentile(const double *x, size_t n, double p);
double e0_median(const double *x, size_t n);
double e0_mean(const double *x, size_t n);
/* Fill *s for x[0..n-1]; every field NaN (n = 0) when n == 0. Returns -1 on out-of-memory. */
int e0_summarize(const double *x, size_t n, e0_summary *s);

/* Least-squares slope of y on t (dy/dt). NaN when n < 2 or all t are equal. */
double e0_slope(const double *t, const double *y, size_t n);

/* Text of the small-n warning ("n=5 < 20: p95/p99 are not stable ...") into buf, or "" when
 * n >= E0_STATS_SMALL_N. Returns buf. */
const char *e0_small_n_warning(size_t n, char *buf, size_t cap);

/* Distribution object for a latency series (e.g. inter-token latency in seconds):
 * {"n", "min", "max", "mean", "p50", "p95", "p99"} plus "warning" when n < 20; for n == 0 the
 * string "unavailable: no samples". New reference; NULL only on out-of-memory. */
json_t *e0_distribution_json(const double *x, size_t n);

/* Verdict for "is B different from A" given each side's range (min..max over runs, or the
 * ratios of paired runs against 1.0). Beyond the spread = the ranges do not overlap. */
enum e0_verdict { E0_WITHIN_SPREAD = 0, E0_HIGHER = 1, E0_LOWER = 2 };
enum e0_verdict e0_range_verdict(double a_min, double a_max, double b_min, double b_max);
const char *e0_verdict_name(enum e0_verdict v);

/* Energy counter delta in µJ for a counter that counts in [0, max_range_uj] and wraps to 0
 * after max_range_uj (Linux powercap energy_uj). after < before means exactly one wrap.
 * Returns -1 when the inputs are impossible (a reading above the range, or max_range == 0). */
int e0_rapl_delta_uj(uint64_t before, uint64_t after, uint64_t max_range_uj, uint64_t *delta);

#endif
