/* report_svg.c — a report as a hand-written SVG chart: two panels, decode tokens/s and time to
 * first token, one point per process grouped by configuration (a cross for a process without a
 * value), with each configuration's median as a dashed line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define W 900
#define LEFT 80
#define RIGHT 860
#define PANEL_H 200

static const char *COLORS[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

static void put_text(e0_strbuf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': e0_sb_printf(b, "&lt;"); break;
        case '>': e0_sb_printf(b, "&gt;"); break;
        case '&': e0_sb_printf(b, "&amp;"); break;
        case '"': e0_sb_printf(b, "&quot;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') e0_sb_printf(b, "%c", *s);
        }
    }
}

/* Upper end of the y axis: a round number above max. */
static double axis_top(double max) {
    if (!(max > 0)) return 1;
    double p = pow(10, floor(log10(max)));
    for (int i = 0; i < 4; i++) {
        static const double steps[] = {1, 2, 5, 10};
        if (steps[i] * p >= max * 1.05) return steps[i] * p;
    }
    return 10 * p;
}

static void panel(e0_strbuf *b, const json_t *configs, size_t n_slots, const char *key, const char *title, double y0) {
    double max = 0, v;
    size_t i, j;
    const json_t *c, *p;
    json_array_foreach(configs, i, c) json_array_foreach(json_object_get(c, "processes"), j, p)
        if (json_path_number(json_object_get(p, "row"), key, &v) == 0 && v > max) max = v;
    double top = axis_top(max);
    double ybase = y0 + PANEL_H;
    e0_sb_printf(b, "<text x=\"%d\" y=\"%.0f\" font-size=\"15\" font-weight=\"bold\">", LEFT, y0 - 12);
    put_text(b, title);
    e0_sb_printf(b, "</text>\n");
    for (int t = 0; t <= 4; t++) {
        double y = ybase - PANEL_H * t / 4.0;
        e0_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", LEFT, y, RIGHT, y);
        e0_sb_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", LEFT - 6, y + 4,
                  top * t / 4.0);
    }
    e0_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n", LEFT, ybase, RIGHT, ybase);
    e0_sb_printf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\"/>\n", LEFT, y0, LEFT, ybase);
    double slot_w = (double)(RIGHT - LEFT) / (double)(n_slots ? n_slots : 1);
    size_t slot = 0;
    json_array_foreach(configs, i, c) {
        const char *color = COLORS[i % (sizeof COLORS / sizeof COLORS[0])];
        size_t first = slot;
        json_array_foreach(json_object_get(c, "processes"), j, p) {
            double x = LEFT + slot_w * ((double)slot + 0.5);
            if (json_path_number(json_object_get(p, "row"), key, &v) == 0) {
                e0_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>", x,
                          ybase - PANEL_H * v / top, color);
                put_text(b, json_string_value(json_object_get(c, "name")));
                e0_sb_printf(b, " #%lld: %g</title></circle>\n", (long long)json_integer_value(json_object_get(p, "index")),
                          v);
            } else {
                e0_sb_printf(b, "<path d=\"M%.1f %.1f l8 -8 m-8 0 l8 8\" stroke=\"%s\" stroke-width=\"2\"/>\n", x - 4,
                          ybase - 4, color);
            }
            slot++;
        }
        const json_t *m = json_object_get(json_object_get(c, "metrics"), key);
        if (json_is_object(m) && slot > first) {
            double med = json_number_value(json_object_get(m, "median"));
            double y = ybase - PANEL_H * med / top;
            e0_sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"4 3\"/>\n",
                      LEFT + slot_w * (double)first + 4, y, LEFT + slot_w * (double)slot - 4, y, color);
        }
        e0_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" fill=\"%s\">",
                  LEFT + slot_w * ((double)first + (double)(slot - first) / 2.0), ybase + 16, color);
        put_text(b, json_string_value(json_object_get(c, "name")));
        e0_sb_printf(b, "</text>\n");
    }
}

char *report_svg(const json_t *r) {
    const json_t *configs = json_object_get(r, "configurations");
    size_t n_slots = 0, i;
    const json_t *c;
    json_array_foreach(configs, i, c) n_slots += json_array_size(json_object_get(c, "processes"));
    e0_strbuf b = {0};
    int h = 2 * PANEL_H + 180;
    e0_sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    e0_sb_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"sans-serif\">\n", W, h, W, h);
    e0_sb_printf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, h);
    e0_sb_printf(&b, "<text x=\"%d\" y=\"22\" font-size=\"13\" fill=\"#555\">edge0-bench sweep, ", LEFT);
    put_text(&b, json_string_value(json_object_get(r, "created_utc")));
    e0_sb_printf(&b, ", one point per process (x = failed)</text>\n");
    panel(&b, configs, n_slots, "decode_tokens_per_second", "Decode (tokens/s)", 60);
    panel(&b, configs, n_slots, "prefill_seconds", "Time to first token (s)", 60 + PANEL_H + 80);
    e0_sb_printf(&b, "</svg>\n");
    return e0_sb_take(&b);
}
