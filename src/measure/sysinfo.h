/* sysinfo.h — measurement probes for `edge0-infer bench` and `edge0-bench`: process memory,
 * system state, RAPL energy and build/model identity, each as a jansson object.
 *
 * Convention: a value that cannot be read is the JSON string "unavailable: <reason>", never 0
 * and never left out silently. Objects returned are new references owned by the caller.
 * The JSON shapes are written down in docs/bench.md. */
#ifndef E0_SYSINFO_H
#define E0_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/util.h"

#define E0_ENGINE_VERSION "0.1.0"

/* ---- helpers (also used by the parsers' tests) ---- */

/* "unavailable: <printf text>" as a JSON string. */
json_t *e0_unavailable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Copy src into dst[cap] (cap > 0), truncating; always NUL-terminated. */
void e0_copy_str(char *dst, size_t cap, const char *src);
/* True when j is a string starting with "unavailable: ". */
int e0_is_unavailable(const json_t *j);
/* Read a /proc or /sys text file to EOF (their st_size is 0), at most max bytes; NUL-terminated,
 * malloc'd. NULL + error when it cannot be opened or is longer than max. */
char *e0_read_text(const char *path, size_t max, e0_err *e);
/* Find "key <number> kB" (as in /proc/self/status, smaps_rollup, meminfo) in text; bytes out.
 * Returns 0 when found, -1 when absent or malformed. key includes the colon, e.g. "VmHWM:". */
int e0_parse_kb_field(const char *text, const char *key, uint64_t *bytes);

/* ---- memory (docs/bench.md "memory") ---- */

/* peak_rss_bytes (VmHWM), rss_bytes (VmRSS), pss_bytes / pss_anon_bytes / pss_file_bytes
 * (smaps_rollup), pss_peak (always unavailable: no kernel counter), cgroup (usage/peak/limit of
 * a memory-limited cgroup), ledger (the engine ledger's peak bytes per category). */
json_t *e0_memory_json(void);
/* The cgroup part, from the text of /proc/self/cgroup and a cgroup mount root (normally
 * "/sys/fs/cgroup"); v2 ("0::/path": memory.current/peak/max) and v1 ("N:memory:/path" under
 * <root>/memory: memory.usage_in_bytes/max_usage_in_bytes/limit_in_bytes). */
json_t *e0_cgroup_memory_json_at(const char *proc_cgroup_text, const char *root);

/* ---- system (docs/bench.md "system") ---- */

/* Full snapshot: cpu_model, logical_cores, physical_cores, memory_total_bytes,
 * memory_available_bytes, kernel, governor, freq_cur_khz, freq_max_khz, thermal [{type, temp_c}],
 * load_avg [1, 5, 15 min], busy_processes (other processes in state R), power (battery/AC). */
json_t *e0_system_json(void);
/* The stable identity of the machine (the subset that must match for a comparison):
 * cpu_model, logical_cores, physical_cores, memory_total_bytes, machine (uname -m). */
json_t *e0_device_json(void);
/* Processes in state R in /proc other than the caller; -1 when /proc cannot be read. */
int e0_busy_processes(void);
/* This process's thread count ("Threads:" of /proc/self/status), or unavailable. */
json_t *e0_process_threads_json(void);

/* ---- energy: Linux powercap RAPL ---- */

#define E0_ENERGY_MAX_DOMAINS 16
typedef struct e0_energy_domain {
    char name[64];         /* "package-0", "psys", ... (the zone's `name`) */
    uint64_t energy_uj;    /* counter value */
    uint64_t max_range_uj; /* the counter wraps to 0 after this */
} e0_energy_domain;
typedef struct e0_energy_reading {
    int n;                /* top-level zones read (intel-rapl:N; subzones are inside them) */
    e0_energy_domain d[E0_ENERGY_MAX_DOMAINS];
    double t;             /* e0_now() at the reading */
    char unavailable[192]; /* reason when n == 0 */
} e0_energy_reading;
/* Read every top-level zone under /sys/class/powercap. 0 on success; -1 with r->unavailable. */
int e0_energy_read(e0_energy_reading *r);
int e0_energy_read_at(const char *powercap_root, e0_energy_reading *r);
/* {joules, seconds, watts, joules_per_token (when n_tokens > 0), domains {name: joules}} from
 * two readings (wraparound handled), or "unavailable: <reason>". */
json_t *e0_energy_json(const e0_energy_reading *before, const e0_energy_reading *after, double n_tokens);

/* ---- identity ---- */

/* sha256 of a file's bytes as 64 lowercase hex digits. */
int e0_sha256_file(const char *path, char hex[65], e0_err *e);
/* Same, cached by (path, size, mtime) in e0_sha256_cache_path() so a large model is hashed once.
 * A cache that cannot be read or written only costs time. */
int e0_sha256_file_cached(const char *path, char hex[65], e0_err *e);
/* $E0_SHA256_CACHE, else $XDG_CACHE_HOME/edge0-infer/sha256-cache, else
 * $HOME/.cache/edge0-infer/sha256-cache; NULL when none applies. */
const char *e0_sha256_cache_path(char *buf, size_t cap);
/* Build identity baked in at compile time: version, git_commit, git_dirty (true/false or
 * "unknown"), compiler, cflags. */
json_t *e0_build_json(void);
/* e0_build_json() + simd (the caller's chosen level name) + binary_sha256 (/proc/self/exe). */
json_t *e0_engine_json(const char *simd_name);
/* path, size, mtime, sha256 (cached), plus what the caller knows from the GGUF: architecture,
 * tensor_types ({"q4_K": count, ...}; stolen, may be NULL), params_total, params_active.
 * NULL + error when the file cannot be read. */
json_t *e0_model_json(const char *path, const char *architecture, json_t *tensor_types, uint64_t params_total,
                      uint64_t params_active, e0_err *e);

#endif
