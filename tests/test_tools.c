/* test_tools.c — the measurement commands around the engine: `membw` and `diskbw` print a
 * positive bandwidth (and refuse bad input), `edge0-bench bound` and `stream-row` turn a bench
 * row into the tables docs/perf.md uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

static void test_membw_diskbw(void) {
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer membw -t 1 --mib 16", t_build());
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    double gbs = 0;
    CHECKF(sscanf(out, "read bandwidth: %lf GB/s", &gbs) == 1 && gbs > 0, "membw printed '%s'", out);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer diskbw --model %s/golden/llama-moe.gguf --block-kib 64 --reads 50 -t 2",
             t_build(), t_shared());
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    double mbs = 0;
    CHECKF(sscanf(out, "disk read bandwidth: %lf MB/s", &mbs) == 1 && mbs > 0, "diskbw printed '%s'", out);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer diskbw --model /nonexistent.gguf 2>&1", t_build());
    CHECK(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "/nonexistent.gguf"));
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer membw --mib 0 2>&1", t_build());
    CHECK(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "--mib"));
}

static void test_stream_row_and_bound(void) {
    char row[600], cmd[2048], out[8192];
    snprintf(row, sizeof row, "%s/tools-row.json", t_build());
    FILE *f = fopen(row, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("noise before the row\n{\"decode_tokens_per_second\": 5.0, \"prefill_seconds\": 2.5, "
          "\"io\": {\"bytes_read_per_token\": 100000000, \"reads_per_token\": 37.5, \"wait_seconds_per_token\": 0.0125, "
          "\"cache_hit_rate\": 0.5, \"prediction_hit_rate\": \"unavailable: x\"}, \"config\": {\"routing\": \"replay\", \"routing_trace\": \"t.csv\", \"replay_predict\": 0.9}, "
          "\"memory\": {\"peak_rss_bytes\": 1048576000, \"cgroup\": {\"peak_bytes\": 2097152000}}}\n",
          f);
    fclose(f);
    /* disk 1000 MB/s, 100 MB per token: bound 10 tok/s, 5 tok/s = 50% */
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-bench stream-row %s --disk-mbps 1000 --label x", t_build(), row);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "| x | replay of t.csv, predicted 0.9 | 5.00 | 100.0 | 37.5 | 12.5 | 10.00 | 50% | 0.500 | n/a | 1000 | 2000 | 2.50 |") != NULL,
           "got '%s'", out);
    /* the engine's own label of the routing, where the row has one */
    f = fopen(row, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"decode_tokens_per_second\": 5.0, \"prefill_seconds\": 2.5, \"config\": {\"routing\": \"replay\", "
          "\"routing_trace\": \"t.csv\", \"replay_predict\": 0.9, \"routing_label\": \"replay of t.csv, exact, guesses read ahead\"}, "
          "\"memory\": {\"peak_rss_bytes\": 1048576000}}\n",
          f);
    fclose(f);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "| x | replay of t.csv, exact, guesses read ahead | 5.00 |") != NULL, "got '%s'", out);
    /* a row without the streaming accounting (llama.cpp's): n/a in those columns, not an error */
    f = fopen(row, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"decode_tokens_per_second\": 0.5, \"prefill_seconds\": 9.0, \"memory\": {\"peak_rss_bytes\": 2097152}}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-bench stream-row %s --disk-mbps 1000 --label ll", t_build(), row);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "| ll | n/a | 0.50 | n/a | n/a | n/a | n/a | n/a | n/a | n/a | 2 | n/a | 9.00 |") != NULL, "got '%s'", out);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-bench stream-row %s 2>&1", t_build(), row);
    CHECK(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "--disk-mbps"));
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-bench bound %s --bandwidth 10 2>&1", t_build(), row);
    CHECKF(t_sh(cmd, out, sizeof out) == 1, "a bench row is not a sweep report: %s", out);
    unlink(row);
}

int main(void) {
    if (t_need_shared("golden/llama-moe.gguf", NULL)) RUN(test_membw_diskbw);
    RUN(test_stream_row_and_bound);
    return T_DONE();
}
