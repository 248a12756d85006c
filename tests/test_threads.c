/* test_threads.c — the thread pool and the thread-count rules (issue 10, "threads that never
 * collapse"): every task of every job runs exactly once, with more threads than CPUs (forced) and
 * with one; results do not depend on the thread count; an idle pool sleeps; pools are capped at
 * the usable CPUs (affinity mask, cgroup CPU quota read from fake cgroup trees) with one warning
 * line from the CLI; `-t 64` is not pathologically slower than `-t 1`; logits are byte-identical
 * for any thread count. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "base/cpus.h"
#include "base/threadpool.h"
#include "base/util.h"

/* ---- the pool ---- */

#define MAX_N 64

typedef struct {
    _Atomic int count[MAX_N];
    _Atomic int bad_nth;
    int expect_nth;
    int slow_ith; /* this ith sleeps a little (-1: none): the others must not wait for it to start */
    const float *x;
    float *y;
    long len;
    double partial[MAX_N];
} job;

static void job_fn(void *arg, int ith, int nth) {
    job *j = arg;
    if (nth != j->expect_nth || ith < 0 || ith >= nth) {
        atomic_fetch_add(&j->bad_nth, 1);
        return;
    }
    atomic_fetch_add(&j->count[ith], 1);
    if (ith == j->slow_ith) nanosleep(&(struct timespec){0, 200000}, NULL);
    long lo, hi;
    e0_split(j->len, ith, nth, &lo, &hi);
    double s = 0;
    for (long i = lo; i < hi; i++) {
        j->y[i] = j->x[i] * j->x[i] + (float)i * 0.5f;
        s += j->y[i];
    }
    j->partial[ith] = s;
}

/* Runs `jobs` jobs on a pool of n threads (forced or not); checks each ith runs once per job and
 * that the element-wise results equal a serial computation bit for bit and the per-part sums are
 * the same on every repetition. */
static void exercise(int n, bool force, int jobs) {
    if (force) setenv(E0_FORCE_THREADS_ENV, "1", 1);
    else unsetenv(E0_FORCE_THREADS_ENV);
    e0_pool *p = e0_pool_new(n);
    CHECKF(p != NULL, "pool of %d", n);
    if (!p) return;
    int nth = e0_pool_size(p);
    int u = e0_usable_cpus();
    CHECKF(nth == (force ? n : (n < u ? n : u)), "pool of %d%s has %d threads (usable CPUs %d)", n, force ? " (forced)" : "", nth, u);
    const long len = 10007;
    float *x = malloc(len * sizeof *x), *y = malloc(len * sizeof *y), *ref = malloc(len * sizeof *ref);
    for (long i = 0; i < len; i++) {
        x[i] = (float)((i * 7919) % 1000) / 997.0f;
        ref[i] = x[i] * x[i] + (float)i * 0.5f;
    }
    double first[MAX_N] = {0};
    int miscounted = 0, wrong = 0, unstable = 0, bad = 0;
    for (int r = 0; r < jobs; r++) {
        job *j = calloc(1, sizeof *j);
        j->expect_nth = nth;
        j->slow_ith = r % 5 == 0 ? r % nth : -1;
        j->x = x;
        j->y = y;
        j->len = len;
        memset(y, 0, len * sizeof *y);
        e0_pool_run(p, job_fn, j);
        for (int i = 0; i < nth; i++) miscounted += atomic_load(&j->count[i]) != 1;
        for (int i = nth; i < MAX_N; i++) miscounted += atomic_load(&j->count[i]) != 0;
        bad += atomic_load(&j->bad_nth);
        wrong += memcmp(y, ref, len * sizeof *y) != 0;
        for (int i = 0; i < nth; i++) {
            if (r == 0) first[i] = j->partial[i];
            else unstable += memcmp(&first[i], &j->partial[i], sizeof(double)) != 0;
        }
        free(j);
    }
    CHECKF(miscounted == 0, "n=%d: %d task counts were not exactly 1", n, miscounted);
    CHECKF(bad == 0, "n=%d: %d calls with a wrong (ith, nth)", n, bad);
    CHECKF(wrong == 0, "n=%d: %d jobs differ from the serial result", n, wrong);
    CHECKF(unstable == 0, "n=%d: %d partial sums changed between repetitions", n, unstable);
    e0_pool_free(p);
    free(x);
    free(y);
    free(ref);
    unsetenv(E0_FORCE_THREADS_ENV);
}

static void test_pool_forced_oversubscribed(void) {
    exercise(3, true, 3000);
    exercise(8, true, 1000);
    exercise(MAX_N, true, 200);
}

static void test_pool_capped(void) {
    exercise(2, false, 2000);
    exercise(MAX_N, false, 500);
}

static pthread_t caller;
static _Atomic int inline_ok;
static void where_fn(void *arg, int ith, int nth) {
    (void)arg;
    atomic_store(&inline_ok, ith == 0 && nth == 1 && pthread_equal(pthread_self(), caller));
}

static void test_pool_one_thread(void) {
    exercise(1, false, 100);
    exercise(1, true, 100);
    e0_pool *p = e0_pool_new(0); /* < 1 counts as 1 */
    CHECK(p && e0_pool_size(p) == 1);
    caller = pthread_self();
    if (p) e0_pool_run(p, where_fn, NULL);
    CHECKF(atomic_load(&inline_ok), "a pool of 1 runs the task on the caller");
    e0_pool_free(p);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nop_fn(void *arg, int ith, int nth) { (void)arg, (void)ith, (void)nth; }

/* Workers spin only briefly: an idle pool (even oversubscribed) must burn almost no CPU. */
static void test_idle_pool_sleeps(void) {
    setenv(E0_FORCE_THREADS_ENV, "1", 1);
    e0_pool *p = e0_pool_new(16);
    unsetenv(E0_FORCE_THREADS_ENV);
    CHECK(p && e0_pool_size(p) == 16);
    if (!p) return;
    for (int i = 0; i < 100; i++) e0_pool_run(p, nop_fn, NULL);
    nanosleep(&(struct timespec){0, 50 * 1000000}, NULL); /* past any spinning */
    double c0 = cpu_seconds(), t0 = e0_now();
    nanosleep(&(struct timespec){0, 300 * 1000000}, NULL);
    double used = cpu_seconds() - c0, wall = e0_now() - t0;
    CHECKF(used < 0.03, "idle pool of 16 used %.3f s of CPU in %.3f s", used, wall);
    e0_pool_free(p);
}

/* Many pools created and freed, some without ever running a job. */
static void test_pool_lifecycle(void) {
    setenv(E0_FORCE_THREADS_ENV, "1", 1);
    int ok = 1;
    for (int i = 0; i < 50; i++) {
        e0_pool *p = e0_pool_new(1 + i % 6);
        if (!p) {
            ok = 0;
            continue;
        }
        if (i % 2) e0_pool_run(p, nop_fn, NULL);
        e0_pool_free(p);
    }
    unsetenv(E0_FORCE_THREADS_ENV);
    CHECK(ok);
    e0_pool_free(NULL);
}

/* ---- usable CPUs ---- */

static char tree[256];

static void put(const char *rel, const char *text) {
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, "%s%s", tree, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(path, "w");
    CHECKF(f != NULL, "%s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

#define MI_V2 "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n"
#define MI_V1 "25 24 0:21 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"

static void test_cgroup_quota_parsing(void) {
    snprintf(tree, sizeof tree, "%s/test-cpus-%d", t_build(), (int)getpid());
    /* v2: the limit of an ancestor applies; quota/period rounds up */
    put("/sys/fs/cgroup/cpu.max", "max 100000\n");
    put("/sys/fs/cgroup/a/cpu.max", "250000 100000\n");
    put("/sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
    int c = e0_cgroup_cpu_limit("0::/a/b\n", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" MI_V2, tree);
    CHECKF(c == 3, "v2 ancestor quota 2.5 CPUs -> %d, want 3", c);
    put("/sys/fs/cgroup/a/b/cpu.max", "50000 100000\n");
    c = e0_cgroup_cpu_limit("0::/a/b\n", MI_V2, tree);
    CHECKF(c == 1, "v2 leaf quota 0.5 CPUs -> %d, want 1", c);
    c = e0_cgroup_cpu_limit("0::/\n", MI_V2, tree);
    CHECKF(c == 0, "v2 root without a quota -> %d, want 0", c);
    /* a container: the mount shows the container's own cgroup as its root */
    put("/sys/fs/cgroup/c/cpu.max", "400000 100000\n");
    c = e0_cgroup_cpu_limit("0::/docker/abc\n", "30 24 0:26 /docker/abc /sys/fs/cgroup/c rw - cgroup2 cgroup2 rw\n", tree);
    CHECKF(c == 4, "v2 namespaced mount -> %d, want 4", c);
    /* v1 */
    put("/sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_quota_us", "200000\n");
    put("/sys/fs/cgroup/cpu,cpuacct/x/cpu.cfs_period_us", "100000\n");
    put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    const char *pc1 = "12:pids:/x\n4:cpu,cpuacct:/x\n1:name=systemd:/x\n";
    c = e0_cgroup_cpu_limit(pc1, MI_V1, tree);
    CHECKF(c == 2, "v1 quota 2 CPUs -> %d, want 2", c);
    c = e0_cgroup_cpu_limit("4:cpu,cpuacct:/\n", MI_V1, tree);
    CHECKF(c == 0, "v1 quota -1 -> %d, want 0", c);
    /* hybrid: both hierarchies, the smaller limit wins */
    put("/sys/fs/cgroup/x/cpu.max", "100000 100000\n");
    c = e0_cgroup_cpu_limit("4:cpu,cpuacct:/x\n0::/x\n", MI_V1 MI_V2, tree);
    CHECKF(c == 1, "hybrid v1 2 / v2 1 -> %d, want 1", c);
    /* a mount point with an escaped space */
    put("/mnt/my cg/q/cpu.max", "300000 100000\n");
    c = e0_cgroup_cpu_limit("0::/q\n", "30 24 0:26 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n", tree);
    CHECKF(c == 3, "escaped mount point -> %d, want 3", c);
    /* junk and missing pieces: no limit, no crash */
    CHECK(e0_cgroup_cpu_limit("", "", tree) == 0);
    CHECK(e0_cgroup_cpu_limit(NULL, MI_V2, tree) == 0);
    CHECK(e0_cgroup_cpu_limit("garbage\n::\n0:", "x - y\n - \n30 24", tree) == 0);
    CHECK(e0_cgroup_cpu_limit("0::/nonexistent/deep\n", MI_V2, tree) == 0);
    put("/sys/fs/cgroup/j/cpu.max", "lots 100000\n");
    CHECK(e0_cgroup_cpu_limit("0::/j\n", MI_V2, tree) == 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    CHECK(system(cmd) == 0);
}

static void test_usable_cpus_affinity(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int u = e0_usable_cpus();
    CHECKF(u >= 1 && u <= online, "usable %d, online %ld", u, online);
    cpu_set_t saved, one;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
        if (CPU_ISSET(i, &saved)) first = i;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECKF(e0_usable_cpus() == 1, "one CPU in the mask -> %d usable", e0_usable_cpus());
    CHECK(e0_threads_cap(8) == 1);
    setenv(E0_FORCE_THREADS_ENV, "1", 1);
    CHECK(e0_threads_cap(8) == 8);
    setenv(E0_FORCE_THREADS_ENV, "0", 1);
    CHECK(e0_threads_cap(8) == 1);
    unsetenv(E0_FORCE_THREADS_ENV);
    CHECK(e0_threads_cap(0) == 1);
    CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    CHECK(e0_default_threads() >= 1 && e0_default_threads() <= e0_usable_cpus());
}

/* ---- through the CLI ---- */

static char model[600], moe[600];
static int have_models;

static int count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static int file_has(const char *path, const char *needle) { return count_lines(path, needle) > 0; }

/* `run -n 16` with `pre` before the binary (env, taskset...) and -t t; stderr to a file. */
static int run_cmd(const char *pre, int t, const char *err) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s/bin/edge0-infer run -m %s --tokens 1,2,3,4 -n 16 --temp 0 --print-ids -t %d 2>%s",
             pre, t_build(), model, t, err);
    return t_sh(cmd, NULL, 0);
}

static void test_cli_warning(void) {
    char err[512];
    snprintf(err, sizeof err, "%s/test-threads-%d.err", t_build(), (int)getpid());
    int u = e0_usable_cpus();
    char want[128];
    snprintf(want, sizeof want, "warning: -t 64 > %d usable CPUs", u);
    CHECK(run_cmd("", 64, err) == 0);
    if (u < 64) {
        CHECKF(count_lines(err, "warning:") == 1, "one warning line for -t 64 (stderr in %s)", err);
        CHECKF(file_has(err, want), "the warning names -t 64 and %d CPUs", u);
        snprintf(want, sizeof want, "using %d (set E0_FORCE_THREADS=1 to force)", u);
        CHECKF(file_has(err, want), "the warning says what is used and how to force");
    }
    CHECK(run_cmd("E0_FORCE_THREADS=1", 64, err) == 0);
    CHECKF(count_lines(err, "warning:") == 0, "no warning when forced");
    CHECK(run_cmd("", 1, err) == 0);
    CHECKF(count_lines(err, "warning:") == 0, "no warning for -t 1");

    /* the affinity mask is inherited by the child: one CPU -> -t 2 is lowered to 1 */
    cpu_set_t saved, one;
    CHECK(sched_getaffinity(0, sizeof saved, &saved) == 0);
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
        if (CPU_ISSET(i, &saved)) first = i;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK(run_cmd("", 2, err) == 0);
    CHECK(sched_setaffinity(0, sizeof saved, &saved) == 0);
    CHECKF(file_has(err, "warning: -t 2 > 1 usable CPUs") && file_has(err, "using 1"), "one CPU in the mask (stderr in %s)", err);
    unlink(err);
}

/* A cgroup v1 CPU quota of one CPU (needs root and the v1 cpu controller; skipped otherwise). */
static void test_cli_cgroup_quota(void) {
    const char *base = "/sys/fs/cgroup/cpu";
    char cg[256], cmd[2048], err[512];
    if (access("/sys/fs/cgroup/cpu/cgroup.procs", W_OK) != 0) {
        printf("  (skipped: no writable cgroup v1 cpu controller)\n");
        return;
    }
    snprintf(cg, sizeof cg, "%s/e0-test-threads-%d", base, (int)getpid());
    snprintf(err, sizeof err, "%s/test-threads-cg-%d.err", t_build(), (int)getpid());
    CHECK(mkdir(cg, 0755) == 0);
    snprintf(cmd, sizeof cmd, "echo 100000 > %s/cpu.cfs_period_us && echo 100000 > %s/cpu.cfs_quota_us", cg, cg);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd,
             "sh -c 'echo $$ > %s/cgroup.procs && exec %s/bin/edge0-infer run -m %s --tokens 1,2 -n 4 --temp 0 "
             "--print-ids -t 2' >/dev/null 2>%s",
             cg, t_build(), model, err);
    CHECK(t_sh(cmd, NULL, 0) == 0);
    CHECKF(file_has(err, "warning: -t 2 > 1 usable CPUs") && file_has(err, "using 1"),
           "a quota of one CPU lowers -t 2 to 1 (stderr in %s)", err);
    rmdir(cg);
    unlink(err);
}

static double best_wall(const char *pre, int t, const char *err) {
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        double t0 = e0_now();
        int rc = run_cmd(pre, t, err);
        double w = e0_now() - t0;
        CHECKF(rc == 0, "-t %d exited %d", t, rc);
        if (w < best) best = w;
    }
    return best;
}

static void test_cli_many_threads_not_slow(void) {
    char err[512];
    snprintf(err, sizeof err, "%s/test-threads-%d.err", t_build(), (int)getpid());
    double w1 = best_wall("", 1, err), w64 = best_wall("", 64, err);
    printf("  run -n 16: -t 1 %.3f s, -t 64 %.3f s (best of 3)\n", w1, w64);
    CHECKF(w64 <= 5 * w1, "-t 64 took %.3f s, more than 5x -t 1 (%.3f s)", w64, w1);
    unlink(err);
}

/* The logits of a batched prefill (-b 64) and of one-token steps (-b 1, the decode path) are the
 * same bytes for 1, 2, 3 and 7 threads (forced beyond the usable CPUs). */
static void test_cli_logits_identical(void) {
    const char *models[] = {model, moe};
    const char *toks = "1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,101,105,109,113,117,121,125";
    for (int mi = 0; mi < 2; mi++)
        for (int b = 0; b < 2; b++) {
            char ref[512], out[512], cmd[2048];
            int batch = b ? 1 : 64;
            snprintf(ref, sizeof ref, "%s/test-threads-ref-%d.bin", t_build(), (int)getpid());
            snprintf(out, sizeof out, "%s/test-threads-out-%d.bin", t_build(), (int)getpid());
            int ts[] = {1, 2, 3, 7};
            for (int k = 0; k < 4; k++) {
                snprintf(cmd, sizeof cmd, "E0_FORCE_THREADS=1 %s/bin/edge0-infer logits -m %s --tokens %s -b %d -t %d --out %s 2>/dev/null",
                         t_build(), models[mi], toks, batch, ts[k], k ? out : ref);
                CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
                if (!k) continue;
                snprintf(cmd, sizeof cmd, "cmp -s %s %s && test -s %s", ref, out, ref);
                CHECKF(t_sh(cmd, NULL, 0) == 0, "%s -b %d: -t %d logits differ from -t 1", models[mi], batch, ts[k]);
            }
            unlink(ref);
            unlink(out);
        }
}

int main(void) {
    RUN(test_pool_one_thread);
    RUN(test_pool_capped);
    RUN(test_pool_forced_oversubscribed);
    RUN(test_idle_pool_sleeps);
    RUN(test_pool_lifecycle);
    RUN(test_cgroup_quota_parsing);
    RUN(test_usable_cpus_affinity);

    snprintf(model, sizeof model, "%s/golden/stories260K.gguf", t_shared());
    snprintf(moe, sizeof moe, "%s/golden/qwen3moe.gguf", t_shared());
    have_models = access(model, R_OK) == 0 && access(moe, R_OK) == 0;
    t_begin("golden models present");
    CHECKF(have_models, "needs %s and %s", model, moe);
    t_end();
    if (!have_models) return T_DONE();
    RUN(test_cli_warning);
    RUN(test_cli_cgroup_quota);
    RUN(test_cli_many_threads_not_slow);
    RUN(test_cli_logits_identical);
    return T_DONE();
}
