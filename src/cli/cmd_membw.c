/* cmd_membw.c — `membw`: measure memory read bandwidth (used by `make bench` for the bound). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "membw.h"

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
