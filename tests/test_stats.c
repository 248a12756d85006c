/* test_stats.c — the harness statistics on fixed inputs: median, percentiles (linear
 * interpolation between closest ranks), mean, min/max, slope, the small-n warning, the
 * distribution object, range verdicts and RAPL counter wraparound. */
#include <math.h>

#include "measure/stats.h"
#include "t.h"

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

static void test_median(void) {
    double odd[] = {5, 1, 3};
    double even[] = {4, 1, 3, 2};
    double one[] = {7.5};
    CHECK(near(e0_median(odd, 3), 3));
    CHECK(near(e0_median(even, 4), 2.5));
    CHECK(near(e0_median(one, 1), 7.5));
    CHECK(isnan(e0_median(odd, 0)));
    /* the input is not reordered */
    CHECK(odd[0] == 5 && odd[1] == 1 && odd[2] == 3);
}

static void test_percentiles(void) {
    double x[] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110}; /* n = 11: h = 10 p */
    CHECK(near(e0_percentile(x, 11, 0.0), 10));
    CHECK(near(e0_percentile(x, 11, 1.0), 110));
    CHECK(near(e0_percentile(x, 11, 0.5), 60));
    CHECK(near(e0_percentile(x, 11, 0.95), 105)); /* h = 9.5: 100 + 0.5 * 10 */
    CHECK(near(e0_percentile(x, 11, 0.99), 109)); /* h = 9.9 */
    double y[] = {1, 2, 3, 4};                    /* n = 4: h = 3 p */
    CHECK(near(e0_percentile(y, 4, 0.95), 3.85));
    CHECK(near(e0_percentile(y, 4, 0.25), 1.75));
    e0_summary s;
    CHECK(e0_summarize(y, 4, &s) == 0);
    CHECK(s.n == 4 && s.min == 1 && s.max == 4 && near(s.mean, 2.5) && near(s.median, 2.5) && near(s.p50, 2.5));
    CHECK(near(s.p99, 3.97));
    CHECK(e0_summarize(y, 0, &s) == 0 && s.n == 0 && isnan(s.median));
}

static void test_slope(void) {
    double t[] = {0, 1, 2, 3, 4};
    double y[] = {10, 9.5, 9, 8.5, 8}; /* tok/s falling 0.5 per second */
    CHECK(near(e0_slope(t, y, 5), -0.5));
    double flat[] = {3, 3, 3, 3, 3};
    CHECK(near(e0_slope(t, flat, 5), 0));
    double noisy[] = {1, 3, 2, 4, 3}; /* least squares: sxy = 5, sxx = 10 */
    CHECK(near(e0_slope(t, noisy, 5), 0.5));
    CHECK(isnan(e0_slope(t, y, 1)));
    double same_t[] = {2, 2, 2};
    CHECK(isnan(e0_slope(same_t, y, 3)));
}

static void test_small_n_warning(void) {
    char buf[128];
    CHECK(strstr(e0_small_n_warning(5, buf, sizeof buf), "n=5") != NULL);
    CHECK(e0_small_n_warning(19, buf, sizeof buf)[0] != 0);
    CHECK(e0_small_n_warning(20, buf, sizeof buf)[0] == 0);
    double x[25];
    for (int i = 0; i < 25; i++) x[i] = 0.01 * (i + 1);
    json_t *few = e0_distribution_json(x, 5), *many = e0_distribution_json(x, 25), *none = e0_distribution_json(x, 0);
    CHECK(json_is_string(json_object_get(few, "warning")));
    CHECK(json_object_get(many, "warning") == NULL);
    CHECK(near(json_real_value(json_object_get(many, "p50")), 0.13));
    CHECK(json_integer_value(json_object_get(many, "n")) == 25);
    CHECK(json_is_string(none) && !strncmp(json_string_value(none), "unavailable: ", 13));
    json_decref(few);
    json_decref(many);
    json_decref(none);
}

static void test_range_verdicts(void) {
    CHECK(e0_range_verdict(20, 21, 22, 23) == E0_HIGHER);
    CHECK(e0_range_verdict(20, 21, 18, 19.9) == E0_LOWER);
    CHECK(e0_range_verdict(20, 21, 20.5, 23) == E0_WITHIN_SPREAD);
    CHECK(e0_range_verdict(20, 21, 21, 22) == E0_WITHIN_SPREAD); /* touching ranges overlap */
    CHECK(e0_range_verdict(20, 21, NAN, NAN) == E0_WITHIN_SPREAD);
    /* ratios against 1.0 (the ab rule) */
    CHECK(e0_range_verdict(1, 1, 1.01, 1.08) == E0_HIGHER);
    CHECK(e0_range_verdict(1, 1, 0.97, 1.02) == E0_WITHIN_SPREAD);
}

static void test_rapl_wraparound(void) {
    uint64_t d = 0;
    CHECK(e0_rapl_delta_uj(1000, 5000, 262143328850ull, &d) == 0 && d == 4000);
    /* wrapped: from 262143328000 up to the range (850) and on to 1150 */
    CHECK(e0_rapl_delta_uj(262143328000ull, 1150, 262143328850ull, &d) == 0 && d == 2000);
    CHECK(e0_rapl_delta_uj(7, 7, 100, &d) == 0 && d == 0);
    CHECK(e0_rapl_delta_uj(99, 0, 100, &d) == 0 && d == 1);
    CHECK(e0_rapl_delta_uj(101, 5, 100, &d) == -1); /* reading above the range */
    CHECK(e0_rapl_delta_uj(1, 5, 0, &d) == -1);
}

int main(void) {
    RUN(test_median);
    RUN(test_percentiles);
    RUN(test_slope);
    RUN(test_small_n_warning);
    RUN(test_range_verdicts);
    RUN(test_rapl_wraparound);
    return T_DONE();
}
