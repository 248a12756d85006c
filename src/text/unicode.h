/* unicode.h — the Unicode facts the tokenizers need: general-category flags (from a table
 * generated at build time from UnicodeData.txt, see tools/gen_unicode.sh), the White_Space set,
 * lenient UTF-8 decoding exactly as llama.cpp does it, and GPT-2's byte<->unicode mapping. */
#ifndef E0_UNICODE_H
#define E0_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* One bit per general-category group (same grouping as llama.cpp's unicode_cpt_flags). */
enum {
    E0_UCAT_UNDEFINED = 1,   /* Cn, unassigned */
    E0_UCAT_NUMBER = 2,      /* \p{N} */
    E0_UCAT_LETTER = 4,      /* \p{L} */
    E0_UCAT_SEPARATOR = 8,   /* \p{Z} */
    E0_UCAT_MARK = 16,       /* \p{M} */
    E0_UCAT_PUNCT = 32,      /* \p{P} */
    E0_UCAT_SYMBOL = 64,     /* \p{S} */
    E0_UCAT_CONTROL = 128,   /* \p{C} other than Cn */
};

typedef struct e0_ucat_range {
    uint32_t first, last;
    uint32_t flags;
} e0_ucat_range;

/* The generated table (sorted, non-overlapping; gaps are unassigned). */
extern const e0_ucat_range e0_ucat_ranges[];
extern const size_t e0_ucat_nranges;

#define E0_UNICODE_MAX 0x110000u

/* Category flag of a code point: one E0_UCAT_* bit; 0 for values beyond U+10FFFF. */
unsigned e0_ucat(uint32_t cp);
/* Unicode White_Space property (what llama.cpp calls is_whitespace). */
int e0_uni_is_space(uint32_t cp);

/* Decode one code point at s[0..len) the way llama.cpp's unicode_cpt_from_utf8 does: structure
 * checks only (lead byte and continuation bytes; overlong forms and surrogates are accepted).
 * Returns the sequence length (1..4) and sets *cp, or returns 0 for an invalid sequence (the
 * caller treats that single byte as U+FFFD, as llama.cpp does). len must be > 0. */
size_t e0_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);
/* Length of the UTF-8 sequence announced by a lead byte (llama.cpp's unicode_len_utf8:
 * 0x00-0xBF -> 1, 0xC0-0xDF -> 2, 0xE0-0xEF -> 3, 0xF0-0xFF -> 4). */
static inline size_t e0_utf8_len(unsigned char lead) {
    static const unsigned char lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[lead >> 4];
}
/* Strict check used by the streaming decoder: length of the complete, valid (RFC 3629) UTF-8
 * sequence at s, 0 if s[0..len) is a valid but incomplete prefix, -1 if invalid. */
int e0_utf8_valid_prefix(const unsigned char *s, size_t len);
/* Encode cp (< 0x110000) into out (4 bytes room); returns the length. */
size_t e0_utf8_encode(uint32_t cp, char *out);

/* GPT-2 byte-level mapping: every byte has a printable code point (bytes 33-126, 161-172,
 * 174-255 map to themselves; the rest to 256, 257, ... in byte order). */
uint32_t e0_byte_to_cp(unsigned char b);
/* Inverse: the byte for a code point, or -1 if cp is not in the mapping. */
int e0_cp_to_byte(uint32_t cp);

#endif
