/* jinja_unicode.c — Unicode case mapping for the template string functions (upper, lower,
 * title, capitalize): simple mappings, the unconditional full mappings of SpecialCasing (e.g.
 * U+00DF -> "SS"), and the cased-letter set. The tables are generated at build time from
 * Debian's unicode-data (tools/gen_case.sh); this file holds the lookups. */
#include "text/jinja/jinja_internal.h"

/* CASE_UPPER, CASE_LOWER, CASE_TITLE, CASED and SPECIAL, generated at build time by
 * tools/gen_case.sh from Debian's unicode-data into $(BUILD)/gen. */
#include "jinja_case_data.inc"

static uint32_t lookup(const ju_case_range *t, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < t[mid].lo) hi = mid;
        else if (cp > t[mid].hi) lo = mid + 1;
        else return (cp - t[mid].lo) % t[mid].stride == 0 ? (uint32_t)((int32_t)cp + t[mid].delta) : cp;
    }
    return cp;
}

uint32_t ju_upper(uint32_t cp) { return lookup(CASE_UPPER, sizeof CASE_UPPER / sizeof *CASE_UPPER, cp); }
uint32_t ju_lower(uint32_t cp) { return lookup(CASE_LOWER, sizeof CASE_LOWER / sizeof *CASE_LOWER, cp); }
uint32_t ju_title(uint32_t cp) { return lookup(CASE_TITLE, sizeof CASE_TITLE / sizeof *CASE_TITLE, cp); }

bool ju_cased(uint32_t cp) {
    size_t lo = 0, hi = sizeof CASED / sizeof *CASED;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < CASED[mid][0]) hi = mid;
        else if (cp > CASED[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

int ju_full_case(uint32_t cp, int kind, uint32_t out[3]) {
    for (size_t i = 0; i < sizeof SPECIAL / sizeof *SPECIAL; i++) {
        if (SPECIAL[i].cp != cp) continue;
        const ju_special *s = &SPECIAL[i];
        int n = kind == 'u' ? s->nu : kind == 't' ? s->nt : s->nl;
        const uint32_t *v = kind == 'u' ? s->u : kind == 't' ? s->t : s->l;
        for (int k = 0; k < n; k++) out[k] = v[k];
        return n;
    }
    out[0] = kind == 'u' ? ju_upper(cp) : kind == 't' ? ju_title(cp) : ju_lower(cp);
    return 1;
}
