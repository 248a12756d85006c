/* cmd_membw.c — `membw`: measure memory read bandwidth (used by `make bench` for the bound). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gguf/gguf.h"
#include "measure/membw.h"

int cmd_membw(int argc, char **argv) {
    int64_t threads = e0_physical_cores(), mib = 1024;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-infer membw [-t N] [--mib M]\nMeasures memory read bandwidth (best of 5 passes over M MiB, default 1024).");
            return 0;
        } else if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 1, 1024, &threads, argv[i - 1], &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(argv[i], "--mib")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 1, 1 << 20, &mib, argv[i - 1], &e) < 0) return cli_error("%s", e.msg);
        } else return cli_error("membw: unknown option '%s'", argv[i]);
    }
    double bw = e0_measure_read_bandwidth((size_t)mib << 20, (int)threads, 5);
    if (bw <= 0) return cli_error("membw: cannot allocate %lld MiB", (long long)mib);
    printf("read bandwidth: %.2f GB/s (%lld threads, %lld MiB)\n", bw / 1e9, (long long)threads, (long long)mib);
    return 0;
}

/* `diskbw`: random reads of expert-sized blocks from a file (the disk bound of streaming). */
int cmd_diskbw(int argc, char **argv) {
    const char *path = NULL;
    int64_t threads = 8, block_kib = 1024, reads = 2000;
    e0_err e;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-infer diskbw --model F [--block-kib K] [--threads N] [--reads N]\n"
                 "Measures the disk read bandwidth of F with N parallel O_DIRECT reads of K KiB at random\n"
                 "offsets (defaults: 1024 KiB, 8 threads, 2000 reads) — the pattern of expert streaming.");
            return 0;
        } else if (!strcmp(argv[i], "--model") || !strcmp(argv[i], "-m")) {
            if (!(path = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(argv[i], "--threads") || !strcmp(argv[i], "-t")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 1, 64, &threads, argv[i - 1], &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(argv[i], "--block-kib")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 4, 1 << 20, &block_kib, argv[i - 1], &e) < 0) return cli_error("%s", e.msg);
        } else if (!strcmp(argv[i], "--reads")) {
            if (!(v = cli_value(argc, argv, &i))) return 1;
            if (e0_parse_i64(v, 1, 1 << 24, &reads, argv[i - 1], &e) < 0) return cli_error("%s", e.msg);
        } else return cli_error("diskbw: unknown option '%s'", argv[i]);
    }
    if (!path) return cli_error("diskbw: --model is required");
    /* a split model: its largest file (the first may hold little but metadata); any other file as it is */
    gguf_file *f = gguf_open(path, &e);
    uint32_t big = 0;
    for (uint32_t i = 1; f && i < f->n_splits; i++)
        if (f->splits[i].size > f->splits[big].size) big = i;
    const char *file = f ? f->splits[big].path : path;
    int direct;
    double bw = e0_measure_disk_bandwidth(file, (size_t)block_kib << 10, (int)threads, (int)reads, &direct, &e);
    if (bw <= 0) {
        gguf_close(f);
        return cli_error("diskbw: %s", e.msg);
    }
    printf("disk read bandwidth: %.1f MB/s (%s, %lld threads, %lld KiB reads x %lld%s%s)\n", bw / 1e6,
           direct ? "O_DIRECT" : "cached: O_DIRECT refused", (long long)threads, (long long)block_kib, (long long)reads,
           f && f->n_splits > 1 ? "; of " : "", f && f->n_splits > 1 ? file : "");
    gguf_close(f);
    return 0;
}
