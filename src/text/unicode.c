/* unicode.c — category lookup over the generated range table, White_Space, lenient UTF-8
 * decoding (llama.cpp-compatible), strict UTF-8 prefix checks and the GPT-2 byte mapping. */
#include "text/unicode.h"

unsigned e0_ucat(uint32_t cp) {
    if (cp >= E0_UNICODE_MAX) return 0;
    size_t lo = 0, hi = e0_ucat_nranges;
    while (lo < hi) { /* first range with last >= cp */
        size_t mid = lo + (hi - lo) / 2;
        if (e0_ucat_ranges[mid].last < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < e0_ucat_nranges && e0_ucat_ranges[lo].first <= cp) return e0_ucat_ranges[lo].flags;
    return E0_UCAT_UNDEFINED;
}

/* PropList.txt White_Space (Unicode 15); the same set llama.cpp uses. */
int e0_uni_is_space(uint32_t cp) {
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

size_t e0_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned char b = s[0];
    if (!(b & 0x80)) {
        *cp = b;
        return 1;
    }
    if (!(b & 0x40)) return 0; /* stray continuation byte */
    size_t n = !(b & 0x20) ? 2 : !(b & 0x10) ? 3 : !(b & 0x08) ? 4 : 0;
    if (n == 0 || n > len) return 0;
    uint32_t v = b & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return n;
}

int e0_utf8_valid_prefix(const unsigned char *s, size_t len) {
    unsigned char b = s[0];
    size_t n;
    uint32_t min;
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) n = 2, min = 0x80;
    else if (b >= 0xE0 && b <= 0xEF) n = 3, min = 0x800;
    else if (b >= 0xF0 && b <= 0xF4) n = 4, min = 0x10000;
    else return -1;
    uint32_t v = b & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if (i >= len) {
            /* Incomplete: decide early whether what we have can still become valid. */
            if (i == 1) return 0;
            uint32_t lo = v << (6 * (n - i)), hi = lo | ((1u << (6 * (n - i))) - 1);
            if (hi < min || lo > 0x10FFFF || (lo >= 0xD800 && hi <= 0xDFFF)) return -1;
            return 0;
        }
        if ((s[i] & 0xC0) != 0x80) return -1;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return -1;
    return (int)n;
}

size_t e0_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int printable_byte(unsigned b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

/* The non-printable bytes, in order, are 0-32, 127-160 and 173: they map to 256-288, 289-322
 * and 323. */
uint32_t e0_byte_to_cp(unsigned char b) {
    if (b <= 32) return 256u + b;
    if (b >= 127 && b <= 160) return 289u + (b - 127u);
    if (b == 173) return 323;
    return b;
}

int e0_cp_to_byte(uint32_t cp) {
    if (cp < 256) return printable_byte(cp) ? (int)cp : -1;
    if (cp <= 288) return (int)(cp - 256);
    if (cp <= 322) return (int)(cp - 289 + 127);
    if (cp == 323) return 173;
    return -1;
}
