/* sysinfo_system.c — the machine and its current state: CPU model and cores, memory, kernel,
 * governor and frequency, thermal zones, load average, other busy processes, battery/AC. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "measure/sysinfo.h"

/* First line of a small sysfs file, trailing whitespace removed; NULL when unreadable. */
static char *read_line(const char *path, char *why, size_t cap) {
    e0_err e;
    char *t = e0_read_text(path, 4096, &e);
    if (!t) {
        if (why) e0_copy_str(why, cap, e.msg);
        return NULL;
    }
    size_t n = strcspn(t, "\n");
    while (n > 0 && isspace((unsigned char)t[n - 1])) n--;
    t[n] = 0;
    return t;
}

static json_t *string_file_json(const char *path) {
    char why[600];
    char *s = read_line(path, why, sizeof why);
    if (!s) return e0_unavailable("%s", why);
    json_t *j = json_string(s);
    free(s);
    return j ? j : e0_unavailable("%s: not UTF-8", path);
}

static int read_u64_file(const char *path, uint64_t *v) {
    char *s = read_line(path, NULL, 0);
    if (!s) return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    int ok = !errno && end != s && *end == 0;
    free(s);
    if (!ok) return -1;
    *v = x;
    return 0;
}

static json_t *cpu_model_json(void) {
    e0_err e;
    char *t = e0_read_text("/proc/cpuinfo", 1 << 22, &e);
    if (!t) return e0_unavailable("%s", e.msg);
    json_t *j = NULL;
    for (char *line = t; line && *line && !j;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t') c++;
                j = json_string(c);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(t);
    return j ? j : e0_unavailable("no model name in /proc/cpuinfo");
}

static void meminfo_fields(json_t *o, int with_available) {
    e0_err e;
    char *t = e0_read_text("/proc/meminfo", 1 << 16, &e);
    uint64_t v;
    if (!t) {
        json_object_set_new(o, "memory_total_bytes", e0_unavailable("%s", e.msg));
        if (with_available) json_object_set_new(o, "memory_available_bytes", e0_unavailable("%s", e.msg));
        return;
    }
    json_object_set_new(o, "memory_total_bytes", e0_parse_kb_field(t, "MemTotal:", &v) == 0
                                                     ? json_integer((json_int_t)v)
                                                     : e0_unavailable("no MemTotal in /proc/meminfo"));
    if (with_available)
        json_object_set_new(o, "memory_available_bytes", e0_parse_kb_field(t, "MemAvailable:", &v) == 0
                                                             ? json_integer((json_int_t)v)
                                                             : e0_unavailable("no MemAvailable in /proc/meminfo"));
    free(t);
}

static json_t *machine_json(void) {
    struct utsname u;
    if (uname(&u) != 0) return e0_unavailable("uname: %s", strerror(errno));
    return json_string(u.machine);
}

json_t *e0_device_json(void) {
    json_t *o = json_object();
    json_object_set_new(o, "cpu_model", cpu_model_json());
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    json_object_set_new(o, "logical_cores", n > 0 ? json_integer(n) : e0_unavailable("sysconf: no CPU count"));
    json_object_set_new(o, "physical_cores", json_integer(e0_physical_cores()));
    meminfo_fields(o, 0);
    json_object_set_new(o, "machine", machine_json());
    return o;
}

/* Frequencies over all CPUs: the highest current and the highest maximum (kHz). */
static void frequency_fields(json_t *o) {
    uint64_t cur_max = 0, max_max = 0;
    int n_cur = 0, n_max = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < ncpu && c < 4096; c++) {
        char p[128];
        uint64_t v;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%ld/cpufreq/scaling_cur_freq", c);
        if (read_u64_file(p, &v) == 0) {
            n_cur++;
            if (v > cur_max) cur_max = v;
        }
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%ld/cpufreq/cpuinfo_max_freq", c);
        if (read_u64_file(p, &v) == 0) {
            n_max++;
            if (v > max_max) max_max = v;
        }
    }
    json_object_set_new(o, "freq_cur_khz", n_cur ? json_integer((json_int_t)cur_max)
                                                 : e0_unavailable("no cpufreq scaling_cur_freq in sysfs"));
    json_object_set_new(o, "freq_max_khz", n_max ? json_integer((json_int_t)max_max)
                                                 : e0_unavailable("no cpufreq cpuinfo_max_freq in sysfs"));
}

static json_t *thermal_json(void) {
    DIR *d = opendir("/sys/class/thermal");
    if (!d) return e0_unavailable("/sys/class/thermal: %s", strerror(errno));
    json_t *a = json_array();
    struct dirent *de;
    while ((de = readdir(d)) && json_array_size(a) < 64) {
        if (strncmp(de->d_name, "thermal_zone", 12) != 0) continue;
        char p[512];
        uint64_t milli;
        snprintf(p, sizeof p, "/sys/class/thermal/%s/temp", de->d_name);
        int ok = read_u64_file(p, &milli) == 0;
        snprintf(p, sizeof p, "/sys/class/thermal/%s/type", de->d_name);
        json_t *z = json_pack("{s:s, s:o, s:o}", "zone", de->d_name, "type", string_file_json(p), "temp_c",
                              ok ? json_real((double)milli / 1000.0) : e0_unavailable("temp unreadable"));
        if (z) json_array_append_new(a, z);
    }
    closedir(d);
    if (json_array_size(a) == 0) {
        json_decref(a);
        return e0_unavailable("no thermal zones in /sys/class/thermal");
    }
    return a;
}

static json_t *loadavg_json(void) {
    double l[3];
    if (getloadavg(l, 3) != 3) return e0_unavailable("getloadavg failed");
    return json_pack("[f, f, f]", l[0], l[1], l[2]);
}

int e0_busy_processes(void) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    pid_t self = getpid();
    int busy = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        long pid = strtol(de->d_name, NULL, 10);
        if (pid == self) continue;
        char p[64];
        snprintf(p, sizeof p, "/proc/%ld/stat", pid);
        char *t = read_line(p, NULL, 0);
        if (!t) continue; /* the process has exited */
        /* "pid (comm) S ..." — comm may contain spaces and parentheses: the state follows the
         * last ')'. */
        char *r = strrchr(t, ')');
        if (r && r[1] == ' ' && r[2] == 'R') busy++;
        free(t);
    }
    closedir(d);
    return busy;
}

json_t *e0_process_threads_json(void) {
    e0_err e;
    char *t = e0_read_text("/proc/self/status", 1 << 16, &e);
    if (!t) return e0_unavailable("%s", e.msg);
    json_t *out = NULL;
    for (const char *p = t; p && *p && !out; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, "Threads:", 8)) {
            char *end;
            errno = 0;
            long v = strtol(p + 8, &end, 10);
            out = errno || v <= 0 || end == p + 8 ? e0_unavailable("malformed Threads: in /proc/self/status") : json_integer(v);
        }
    free(t);
    return out ? out : e0_unavailable("no Threads: in /proc/self/status");
}

/* Batteries and mains adapters under /sys/class/power_supply. */
static json_t *power_json(void) {
    DIR *d = opendir("/sys/class/power_supply");
    if (!d) return e0_unavailable("no /sys/class/power_supply");
    json_t *batteries = json_array();
    json_t *ac = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[512];
        snprintf(p, sizeof p, "/sys/class/power_supply/%s/type", de->d_name);
        char *type = read_line(p, NULL, 0);
        if (!type) continue;
        if (!strcmp(type, "Battery") && json_array_size(batteries) < 8) {
            uint64_t cap = 0;
            snprintf(p, sizeof p, "/sys/class/power_supply/%s/capacity", de->d_name);
            int have_cap = read_u64_file(p, &cap) == 0;
            snprintf(p, sizeof p, "/sys/class/power_supply/%s/status", de->d_name);
            json_array_append_new(batteries,
                                  json_pack("{s:s, s:o, s:o}", "name", de->d_name, "status", string_file_json(p),
                                            "capacity_pct", have_cap ? json_integer((json_int_t)cap)
                                                                     : e0_unavailable("capacity unreadable")));
        } else if (!strcmp(type, "Mains") || !strcmp(type, "USB")) {
            uint64_t online = 0;
            snprintf(p, sizeof p, "/sys/class/power_supply/%s/online", de->d_name);
            if (read_u64_file(p, &online) == 0) {
                if (!ac || online) {
                    json_decref(ac);
                    ac = json_boolean(online != 0);
                }
            }
        }
        free(type);
    }
    closedir(d);
    if (json_array_size(batteries) == 0) {
        json_decref(batteries);
        json_decref(ac);
        return e0_unavailable("no battery (mains-powered machine)");
    }
    return json_pack("{s:o, s:o}", "batteries", batteries, "ac_online",
                     ac ? ac : e0_unavailable("no mains adapter in /sys/class/power_supply"));
}

json_t *e0_system_json(void) {
    json_t *o = e0_device_json();
    meminfo_fields(o, 1);
    struct utsname u;
    if (uname(&u) == 0) {
        char k[3 * 65 + 8];
        snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.version);
        json_object_set_new(o, "kernel", json_string(k));
    } else {
        json_object_set_new(o, "kernel", e0_unavailable("uname: %s", strerror(errno)));
    }
    json_object_set_new(o, "governor", string_file_json("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
    frequency_fields(o);
    json_object_set_new(o, "thermal", thermal_json());
    json_object_set_new(o, "load_avg", loadavg_json());
    int busy = e0_busy_processes();
    json_object_set_new(o, "busy_processes", busy >= 0 ? json_integer(busy) : e0_unavailable("cannot list /proc"));
    json_object_set_new(o, "power", power_json());
    return o;
}
