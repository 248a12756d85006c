/* cpus.h — how many CPUs this process may keep busy, and the thread counts derived from it.
 *
 * Usable CPUs = the CPUs in the affinity mask (sched_getaffinity: taskset, cpusets), further
 * limited by the CFS bandwidth quota of every cgroup the process is in, up to the hierarchy's
 * root (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`; quota/period rounded
 * up). Thread pools never run more threads than that unless E0_FORCE_THREADS=1 is set in the
 * environment: a thread beyond the CPUs only waits for a time slice while the others wait for it. */
#ifndef E0_CPUS_H
#define E0_CPUS_H

#include <stdbool.h>

#define E0_FORCE_THREADS_ENV "E0_FORCE_THREADS"

/* CPUs in the affinity mask, limited by the cgroup CPU quota; >= 1. Computed on each call
 * (a few small /proc and /sys reads). */
int e0_usable_cpus(void);

/* The CPU quota of the cgroups in the text of /proc/self/cgroup and /proc/self/mountinfo, files
 * read under `root` ("" = the real file system; tests pass a fake tree): the smallest
 * ceil(quota / period) over the process's cgroups and their ancestors, or 0 when no quota is set
 * or nothing can be read. */
int e0_cgroup_cpu_limit(const char *proc_cgroup, const char *mountinfo, const char *root);

/* E0_FORCE_THREADS is set to something other than "" or "0". */
bool e0_threads_forced(void);

/* The threads to run for a request of n (n < 1 counts as 1): n capped at e0_usable_cpus()
 * unless forced. */
int e0_threads_cap(int n);

/* e0_threads_cap, and when that lowers n, one line on stderr (the first time in the process):
 * "warning: FLAG N > U usable CPUs ...; using U (set E0_FORCE_THREADS=1 to force)". */
int e0_threads_cap_warn(int n, const char *flag);

/* The default thread count: the physical cores, at most the usable CPUs. */
int e0_default_threads(void);

#endif
