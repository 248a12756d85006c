/* conditions.c — is the machine fit to measure right now? Checks one system snapshot before a
 * process. Refused (the process is not started and is recorded as refused): running on battery.
 * Recorded as warnings: high load average, other busy processes, a non-performance governor,
 * a CPU clock well below its maximum, a hot thermal zone, less available memory than the model. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "measure/sysinfo.h"

#define LOAD_PER_CPU_WARN 0.25 /* 1-minute load average per logical CPU */
#define HOT_C 80.0
#define FREQ_FRACTION_WARN 0.5 /* current below half the maximum: power saving or throttling */

static void warn(json_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(json_t *w, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(w, json_string(buf));
}

json_t *conditions_check(const json_t *s, double model_size) {
    json_t *w = json_array();
    json_t *refused = json_null();

    json_t *power = json_object_get(s, "power");
    if (json_is_object(power)) {
        json_t *ac = json_object_get(power, "ac_online");
        if (json_is_false(ac)) {
            json_decref(refused);
            refused = json_string("running on battery: connect AC power");
        } else if (!json_is_boolean(ac)) {
            warn(w, "battery present but AC state unknown");
        }
    }

    json_t *load = json_object_get(s, "load_avg");
    json_t *cpus = json_object_get(s, "logical_cores");
    if (json_is_array(load) && json_is_integer(cpus) && json_integer_value(cpus) > 0) {
        double l1 = json_number_value(json_array_get(load, 0));
        if (l1 > LOAD_PER_CPU_WARN * (double)json_integer_value(cpus))
            warn(w, "load average %.2f on %lld CPUs: other work is running", l1, (long long)json_integer_value(cpus));
    }
    json_t *busy = json_object_get(s, "busy_processes");
    if (json_is_integer(busy) && json_integer_value(busy) > 0)
        warn(w, "%lld other process(es) running", (long long)json_integer_value(busy));

    const char *gov = json_string_value(json_object_get(s, "governor"));
    if (gov && !e0_is_unavailable(json_object_get(s, "governor")) && strcmp(gov, "performance") != 0)
        warn(w, "CPU governor is '%s', not 'performance'", gov);
    json_t *cur = json_object_get(s, "freq_cur_khz"), *max = json_object_get(s, "freq_max_khz");
    if (json_is_integer(cur) && json_is_integer(max) && json_integer_value(max) > 0 &&
        (double)json_integer_value(cur) < FREQ_FRACTION_WARN * (double)json_integer_value(max))
        warn(w, "CPU clock %lld kHz, below half its maximum %lld kHz", (long long)json_integer_value(cur),
             (long long)json_integer_value(max));

    json_t *zones = json_object_get(s, "thermal");
    size_t i;
    json_t *z;
    json_array_foreach(zones, i, z) {
        json_t *t = json_object_get(z, "temp_c");
        if (json_is_number(t) && json_number_value(t) >= HOT_C)
            warn(w, "thermal zone %s (%s) at %.0f C: let the machine cool",
                 json_string_value(json_object_get(z, "zone")) ? json_string_value(json_object_get(z, "zone")) : "?",
                 json_string_value(json_object_get(z, "type")) ? json_string_value(json_object_get(z, "type")) : "?",
                 json_number_value(t));
    }

    json_t *avail = json_object_get(s, "memory_available_bytes");
    if (model_size > 0 && json_is_integer(avail) && (double)json_integer_value(avail) < model_size)
        warn(w, "available memory %.2f GiB is less than the model file (%.2f GiB): weights will be read from storage",
             (double)json_integer_value(avail) / 1073741824.0, model_size / 1073741824.0);
    return json_pack("{s:o, s:o}", "warnings", w, "refused", refused);
}
