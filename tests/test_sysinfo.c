/* test_sysinfo.c — the probes: parsers on fixed text, cgroup v1/v2 and RAPL on fake directory
 * trees (including a wrapped counter), and smoke tests on this machine where every value must
 * be a real number or "unavailable: <reason>" — never a silent 0 or a missing key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "measure/sysinfo.h"
#include "t.h"

static char tmp_root[256];

static void write_file(const char *dir, const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) {
        CHECKF(0, "cannot write %s", p);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void make_dirs(const char *path) {
    char d[1024];
    snprintf(d, sizeof d, "%s", path);
    for (char *p = d + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(d, 0755);
            *p = '/';
        }
    mkdir(d, 0755);
}

/* A value that is either a positive integer or "unavailable: ...". */
static int real_or_unavailable(const json_t *v) {
    return (json_is_integer(v) && json_integer_value(v) > 0) || e0_is_unavailable(v);
}

static void test_kb_parser(void) {
    const char *status = "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t  1536 kB\nVmRSS:\t 1024 kB\nBad:\t12 MB\n";
    uint64_t v = 0;
    CHECK(e0_parse_kb_field(status, "VmHWM:", &v) == 0 && v == 1536 * 1024);
    CHECK(e0_parse_kb_field(status, "VmRSS:", &v) == 0 && v == 1024 * 1024);
    CHECK(e0_parse_kb_field(status, "VmSwap:", &v) == -1);
    CHECK(e0_parse_kb_field(status, "Bad:", &v) == -1); /* wrong unit */
    CHECK(e0_parse_kb_field("Pss: 99999999999999999999 kB\n", "Pss:", &v) == -1);
    /* "Pss:" must not match "Pss_Anon:" lines and vice versa */
    CHECK(e0_parse_kb_field("Pss_Anon: 5 kB\nPss: 7 kB\n", "Pss:", &v) == 0 && v == 7 * 1024);
}

static void test_read_text_limits(void) {
    char p[600];
    e0_err e;
    write_file(tmp_root, "ten", "0123456789");
    snprintf(p, sizeof p, "%s/ten", tmp_root);
    char *t = e0_read_text(p, 10, &e);
    CHECK(t && !strcmp(t, "0123456789"));
    free(t);
    CHECK(e0_read_text(p, 9, &e) == NULL && strstr(e.msg, "longer than 9"));
    t = e0_read_text("/proc/self/status", 1 << 16, &e); /* st_size 0, still read to EOF */
    CHECK(t && strstr(t, "VmRSS:"));
    free(t);
    CHECK(e0_read_text("/no/such/file", 10, &e) == NULL && strstr(e.msg, "/no/such/file"));
}

static void test_cgroup_v2(void) {
    char root[512], dir[600];
    snprintf(root, sizeof root, "%s/cg2", tmp_root);
    snprintf(dir, sizeof dir, "%s/user.slice/job", root);
    make_dirs(dir);
    write_file(dir, "memory.max", "max\n");
    json_t *j = e0_cgroup_memory_json_at("0::/user.slice/job\n", root);
    CHECKF(e0_is_unavailable(j), "unlimited cgroup must be unavailable: %s", json_string_value(j));
    json_decref(j);
    write_file(dir, "memory.max", "4294967296\n");
    write_file(dir, "memory.current", "123456\n");
    write_file(dir, "memory.peak", "654321\n");
    j = e0_cgroup_memory_json_at("0::/user.slice/job\n", root);
    CHECK(json_integer_value(json_object_get(j, "version")) == 2);
    CHECK(json_integer_value(json_object_get(j, "limit_bytes")) == 4294967296LL);
    CHECK(json_integer_value(json_object_get(j, "usage_bytes")) == 123456);
    CHECK(json_integer_value(json_object_get(j, "peak_bytes")) == 654321);
    json_decref(j);
    unlink(strcat(dir, "/memory.peak")); /* an older kernel without memory.peak */
    j = e0_cgroup_memory_json_at("0::/user.slice/job\n", root);
    CHECK(e0_is_unavailable(json_object_get(j, "peak_bytes")));
    json_decref(j);
    j = e0_cgroup_memory_json_at("0::/../../etc\n", root); /* no escaping the root */
    CHECK(e0_is_unavailable(j));
    json_decref(j);
}

static void test_cgroup_v1(void) {
    char root[512], dir[600];
    snprintf(root, sizeof root, "%s/cg1", tmp_root);
    snprintf(dir, sizeof dir, "%s/memory/box/7", root);
    make_dirs(dir);
    const char *cg = "5:cpu,cpuacct:/\n4:memory:/box/7\n0::/\n";
    write_file(dir, "memory.limit_in_bytes", "9223372036854771712\n"); /* v1 "no limit" */
    json_t *j = e0_cgroup_memory_json_at(cg, root);
    CHECK(e0_is_unavailable(j));
    json_decref(j);
    write_file(dir, "memory.limit_in_bytes", "2147483648\n");
    write_file(dir, "memory.usage_in_bytes", "1000\n");
    write_file(dir, "memory.max_usage_in_bytes", "2000\n");
    j = e0_cgroup_memory_json_at(cg, root);
    CHECK(json_integer_value(json_object_get(j, "version")) == 1);
    CHECK(json_integer_value(json_object_get(j, "limit_bytes")) == 2147483648LL);
    CHECK(json_integer_value(json_object_get(j, "usage_bytes")) == 1000);
    CHECK(json_integer_value(json_object_get(j, "peak_bytes")) == 2000);
    json_decref(j);
    j = e0_cgroup_memory_json_at(NULL, root);
    CHECK(e0_is_unavailable(j));
    json_decref(j);
}

static void test_memory_smoke(void) {
    json_t *m = e0_memory_json();
    static const char *keys[] = {"peak_rss_bytes", "rss_bytes", "pss_bytes", "pss_anon_bytes", "pss_file_bytes"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECKF(real_or_unavailable(json_object_get(m, keys[i])), "%s", keys[i]);
    CHECK(json_is_integer(json_object_get(m, "peak_rss_bytes"))); /* Linux always has VmHWM */
    CHECK(json_integer_value(json_object_get(m, "peak_rss_bytes")) >= json_integer_value(json_object_get(m, "rss_bytes")));
    CHECK(e0_is_unavailable(json_object_get(m, "pss_peak")));
    json_t *cg = json_object_get(m, "cgroup");
    CHECK(e0_is_unavailable(cg) || json_is_integer(json_object_get(cg, "limit_bytes")));
    CHECK(json_is_object(json_object_get(m, "ledger_peak_bytes")));
    json_decref(m);
}

static void test_system_smoke(void) {
    json_t *s = e0_system_json();
    static const char *keys[] = {"cpu_model", "logical_cores", "physical_cores", "memory_total_bytes",
                                 "memory_available_bytes", "kernel", "governor", "freq_cur_khz", "freq_max_khz",
                                 "thermal", "load_avg", "busy_processes", "power", "machine"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(s, keys[i]);
        CHECKF(v != NULL, "missing %s", keys[i]);
        if (json_is_string(v) && !e0_is_unavailable(v)) CHECKF(json_string_length(v) > 0, "%s empty", keys[i]);
    }
    CHECK(real_or_unavailable(json_object_get(s, "logical_cores")));
    CHECK(real_or_unavailable(json_object_get(s, "memory_total_bytes")));
    CHECK(json_is_array(json_object_get(s, "load_avg")) && json_array_size(json_object_get(s, "load_avg")) == 3);
    CHECK(json_is_integer(json_object_get(s, "busy_processes")) && json_integer_value(json_object_get(s, "busy_processes")) >= 0);
    json_t *th = json_object_get(s, "thermal");
    CHECK(e0_is_unavailable(th) || (json_is_array(th) && json_array_size(th) > 0));
    json_t *d = e0_device_json();
    CHECK(json_equal(json_object_get(d, "cpu_model"), json_object_get(s, "cpu_model")));
    CHECK(json_object_get(d, "load_avg") == NULL); /* identity only, no changing state */
    json_decref(d);
    json_decref(s);
}

static void make_zone(const char *root, const char *zone, const char *name, const char *energy, const char *range) {
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", root, zone);
    make_dirs(dir);
    write_file(dir, "name", name);
    write_file(dir, "energy_uj", energy);
    write_file(dir, "max_energy_range_uj", range);
}

static void test_energy_fake_rapl(void) {
    char root[512];
    snprintf(root, sizeof root, "%s/powercap", tmp_root);
    make_zone(root, "intel-rapl:0", "package-0\n", "999000000\n", "1000000000\n");
    make_zone(root, "intel-rapl:0:0", "core\n", "5\n", "1000000000\n"); /* subzone: not summed */
    make_zone(root, "intel-rapl:1", "package-1\n", "100\n", "1000000000\n");
    e0_energy_reading a, b;
    CHECK(e0_energy_read_at(root, &a) == 0 && a.n == 2);
    /* package-0 wraps: 999000000 -> 1000000 is 2 J; package-1 moves 3 J. */
    make_zone(root, "intel-rapl:0", "package-0\n", "1000000\n", "1000000000\n");
    make_zone(root, "intel-rapl:1", "package-1\n", "3000100\n", "1000000000\n");
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK(e0_energy_read_at(root, &b) == 0 && b.n == 2);
    json_t *j = e0_energy_json(&a, &b, 10);
    CHECKF(json_is_object(j), "%s", json_string_value(j));
    CHECK(fabs(json_real_value(json_object_get(j, "joules")) - 5.0) < 1e-9);
    CHECK(fabs(json_real_value(json_object_get(j, "joules_per_token")) - 0.5) < 1e-9);
    CHECK(fabs(json_real_value(json_object_get(json_object_get(j, "domains"), "package-0")) - 2.0) < 1e-9);
    CHECK(json_real_value(json_object_get(j, "watts")) > 0);
    json_decref(j);
    /* missing interface */
    char none[600];
    snprintf(none, sizeof none, "%s/no-such-dir", tmp_root);
    CHECK(e0_energy_read_at(none, &b) == -1 && b.unavailable[0]);
    j = e0_energy_json(&a, &b, 10);
    CHECK(e0_is_unavailable(j));
    json_decref(j);
    /* this machine: a reading or a reason */
    e0_energy_reading r;
    CHECK(e0_energy_read(&r) == 0 ? r.n > 0 : r.unavailable[0] != 0);
}

static void test_sha256_and_cache(void) {
    char path[600], cache[600], hex[65];
    e0_err e;
    snprintf(path, sizeof path, "%s/abc.bin", tmp_root);
    write_file(tmp_root, "abc.bin", "abc");
    CHECK(e0_sha256_file(path, hex, &e) == 0);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    snprintf(cache, sizeof cache, "%s/cache/sha256-cache", tmp_root);
    setenv("E0_SHA256_CACHE", cache, 1);
    CHECK(e0_sha256_file_cached(path, hex, &e) == 0 && hex[0] == 'b');
    size_t len = 0;
    char *text = e0_read_text(cache, 1 << 20, &e);
    CHECKF(text && strstr(text, "ba7816bf") && strstr(text, "abc.bin"), "cache file: %s", text ? text : e.msg);
    /* Plant a different digest for the same key: the cached value must be returned... */
    if (text) {
        text[0] = '0';
        FILE *f = fopen(cache, "w");
        if (f) fputs(text, f), fclose(f);
        len = strlen(text);
    }
    free(text);
    CHECK(len > 0 && e0_sha256_file_cached(path, hex, &e) == 0 && hex[0] == '0');
    /* ...until the file changes (size and mtime differ): then it is hashed again. */
    write_file(tmp_root, "abc.bin", "abcd");
    CHECK(e0_sha256_file_cached(path, hex, &e) == 0);
    CHECK(!strcmp(hex, "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589"));
    text = e0_read_text(cache, 1 << 20, &e);
    CHECK(text && !strstr(text, "ba7816bf") && !strstr(text, "0a7816bf")); /* stale entry replaced */
    free(text);
    CHECK(e0_sha256_file_cached("/no/such/file", hex, &e) == -1 && e.msg[0]);
    unsetenv("E0_SHA256_CACHE");
}

static void test_identity(void) {
    json_t *b = e0_build_json();
    CHECK(json_is_string(json_object_get(b, "git_commit")) && json_string_length(json_object_get(b, "git_commit")) > 0);
    json_t *dirty = json_object_get(b, "git_dirty");
    CHECK(json_is_boolean(dirty) || (json_is_string(dirty) && !strcmp(json_string_value(dirty), "unknown")));
    CHECK(strstr(json_string_value(json_object_get(b, "cflags")), "-std=c11") != NULL);
    json_decref(b);
    json_t *e = e0_engine_json("avx2");
    const char *sha = json_string_value(json_object_get(e, "binary_sha256"));
    CHECK(sha && strlen(sha) == 64);
    CHECK(!strcmp(json_string_value(json_object_get(e, "simd")), "avx2"));
    json_decref(e);
    char path[600];
    e0_err err;
    snprintf(path, sizeof path, "%s/cache-for-model", tmp_root);
    setenv("E0_SHA256_CACHE", path, 1);
    snprintf(path, sizeof path, "%s/abc.bin", tmp_root);
    json_t *m = e0_model_json(path, "llama", json_pack("{s:i}", "f32", 3), 1000, 250, &err);
    CHECK(m && json_integer_value(json_object_get(m, "params_active")) == 250);
    CHECK(m && json_string_length(json_object_get(m, "sha256")) == 64);
    json_decref(m);
    CHECK(e0_model_json("/no/such/model.gguf", NULL, NULL, 0, 0, &err) == NULL && err.msg[0]);
    unsetenv("E0_SHA256_CACHE");
}

int main(void) {
    snprintf(tmp_root, sizeof tmp_root, "/tmp/e0-test-sysinfo-XXXXXX");
    if (!mkdtemp(tmp_root)) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    RUN(test_kb_parser);
    RUN(test_read_text_limits);
    RUN(test_cgroup_v2);
    RUN(test_cgroup_v1);
    RUN(test_memory_smoke);
    RUN(test_system_smoke);
    RUN(test_energy_fake_rapl);
    RUN(test_sha256_and_cache);
    RUN(test_identity);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) printf("# could not remove %s\n", tmp_root);
    return T_DONE();
}
