/* sysinfo_energy.c — energy from the Linux powercap RAPL counters: read every top-level zone
 * (intel-rapl:N, which contains its subzones, so summing them does not double count) before and
 * after a measured window; joules with counter wraparound handled (e0_rapl_delta_uj). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/stats.h"
#include "measure/sysinfo.h"

static int read_u64(const char *path, uint64_t *v, char *why, size_t cap) {
    e0_err e;
    char *t = e0_read_text(path, 256, &e);
    if (!t) {
        e0_copy_str(why, cap, e.msg);
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(t, &end, 10);
    int ok = !errno && end != t && (*end == 0 || *end == '\n');
    free(t);
    if (!ok) {
        snprintf(why, cap, "%s: not a number", path);
        return -1;
    }
    *v = x;
    return 0;
}

/* Top-level zone names look like "intel-rapl:0" (subzones: "intel-rapl:0:1"). */
static int is_top_level_zone(const char *name) {
    const char *c = strchr(name, ':');
    return !strncmp(name, "intel-rapl:", 11) && c && !strchr(c + 1, ':') && c[1];
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const e0_energy_domain *)a)->name, ((const e0_energy_domain *)b)->name);
}

int e0_energy_read_at(const char *root, e0_energy_reading *r) {
    memset(r, 0, sizeof *r);
    r->t = e0_now();
    DIR *d = opendir(root);
    if (!d) {
        snprintf(r->unavailable, sizeof r->unavailable, "no RAPL powercap interface (%s: %s)", root, strerror(errno));
        return -1;
    }
    struct dirent *de;
    char why[400] = "";
    while ((de = readdir(d)) && r->n < E0_ENERGY_MAX_DOMAINS) {
        if (!is_top_level_zone(de->d_name)) continue;
        char p[1024];
        e0_energy_domain *dom = &r->d[r->n];
        snprintf(p, sizeof p, "%s/%s/energy_uj", root, de->d_name);
        if (read_u64(p, &dom->energy_uj, why, sizeof why) != 0) continue;
        snprintf(p, sizeof p, "%s/%s/max_energy_range_uj", root, de->d_name);
        if (read_u64(p, &dom->max_range_uj, why, sizeof why) != 0) continue;
        snprintf(p, sizeof p, "%s/%s/name", root, de->d_name);
        e0_err e;
        char *name = e0_read_text(p, 256, &e);
        e0_copy_str(dom->name, sizeof dom->name, name ? name : de->d_name);
        dom->name[strcspn(dom->name, "\n")] = 0;
        free(name);
        r->n++;
    }
    closedir(d);
    if (r->n == 0) {
        e0_copy_str(r->unavailable, sizeof r->unavailable, why[0] ? why : "no RAPL zones under powercap");
        return -1;
    }
    /* readdir order is arbitrary; sort so two readings line up zone by zone. */
    qsort(r->d, (size_t)r->n, sizeof r->d[0], cmp_names);
    /* Record the reading's time after the (short) reads, closest to the counter values. */
    r->t = e0_now();
    return 0;
}

int e0_energy_read(e0_energy_reading *r) { return e0_energy_read_at("/sys/class/powercap", r); }

json_t *e0_energy_json(const e0_energy_reading *before, const e0_energy_reading *after, double n_tokens) {
    if (before->n == 0) return e0_unavailable("%s", before->unavailable);
    if (after->n == 0) return e0_unavailable("%s", after->unavailable);
    if (before->n != after->n) return e0_unavailable("RAPL zones changed between readings");
    double seconds = after->t - before->t;
    if (!(seconds > 0)) return e0_unavailable("empty measurement window");
    json_t *domains = json_object();
    double total_uj = 0;
    for (int i = 0; i < before->n; i++) {
        const e0_energy_domain *a = &before->d[i], *b = &after->d[i];
        uint64_t delta;
        if (strcmp(a->name, b->name) != 0 || a->max_range_uj != b->max_range_uj ||
            e0_rapl_delta_uj(a->energy_uj, b->energy_uj, a->max_range_uj, &delta) != 0) {
            json_decref(domains);
            return e0_unavailable("RAPL zone %s gave inconsistent readings", a->name);
        }
        /* Same names can repeat (package-0 on two sockets is not possible, but be safe). */
        json_t *prev = json_object_get(domains, a->name);
        double j = (double)delta * 1e-6 + (prev ? json_real_value(prev) : 0);
        json_object_set_new(domains, a->name, json_real(j));
        /* psys (platform) already contains the packages: sum only package zones when present. */
        if (strncmp(a->name, "psys", 4) != 0) total_uj += (double)delta;
    }
    json_t *o = json_pack("{s:f, s:f, s:f, s:o, s:s}", "joules", total_uj * 1e-6, "seconds", seconds, "watts",
                          total_uj * 1e-6 / seconds, "domains", domains, "source", "RAPL powercap");
    if (o && n_tokens > 0) json_object_set_new(o, "joules_per_token", json_real(total_uj * 1e-6 / n_tokens));
    return o;
}
