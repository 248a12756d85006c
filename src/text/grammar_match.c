/* grammar_match.c — matching text against a parsed grammar (see grammar.h).
 *
 * The matcher keeps a set of stacks; each stack holds element positions (grammar_impl.h), top
 * last, and its top is always a character group (rule references are expanded into every
 * alternative as soon as they reach the top: `expand`). An empty stack means the text so far
 * completes the grammar. Taking a code point keeps the stacks whose top group matches it, pops
 * that group and expands again. Bytes are decoded as strict UTF-8 on the way in; a character cut
 * at the end of a piece is kept (pval / prem) while its possible values can still match.
 *
 * Stack sets are interned as states and each (state, code point) step is remembered (a DFA
 * built lazily): trying a whole vocabulary from one state steps each distinct character once,
 * and inside a JSON string most characters lead back to the same state. The cache is dropped
 * (the current state kept) when it holds more than CACHE_STATES states, CACHE_STEPS steps or
 * CACHE_WORDS positions. */
#include <stdlib.h>
#include <string.h>

#include "text/grammar.h"
#include "text/grammar_impl.h"

typedef struct {
    uint32_t *pos; /* the stacks' positions, one after the other */
    size_t npos, cappos;
    size_t *off;   /* stack i: pos[off[i] .. off[i] + len[i]) */
    uint32_t *len;
    uint64_t *hash;
    size_t n, cap;
    uint32_t *table; /* open addressing: stack index + 1, 0 = empty; tcap a power of two > 2n */
    size_t tcap;
} gset;

#define CACHE_STATES 4096
#define CACHE_STEPS (1u << 17)
#define CACHE_WORDS (1u << 22)   /* positions in the interned sets: dropped beyond this, between texts */
#define CACHE_WORDS_MAX (1u << 24) /* ... and never more than this (a step past it counts as a limit) */
enum { STEP_REFUSED = -1, STEP_LIMIT = -2 }; /* a step's result besides a state */

typedef struct {
    gset set;
    bool can_end, must_end;
} gstate;

typedef struct {
    uint64_t key;  /* state << 21 | code point, + 1 (0: empty slot) */
    int32_t to;    /* a state, STEP_REFUSED or STEP_LIMIT */
} gstep;

struct e0_gmatch {
    const e0_grammar *g;
    gstate *st;           /* interned stack sets */
    size_t n_st, cap_st;
    size_t st_words;      /* positions in their sets */
    int32_t *st_table;    /* open addressing: state + 1, by the set's hash; st_tcap a power of two */
    size_t st_tcap;
    gstep *steps;         /* remembered steps, open addressing; steps_cap a power of two */
    size_t n_steps, steps_cap;
    int32_t cur;          /* the current state */
    gset a;               /* scratch: a step's result before it is interned */
    uint32_t *tmp;        /* stacks being built */
    size_t ntmp, captmp;
    uint32_t pval;        /* partial UTF-8 character: bits so far */
    int prem;             /* its bytes still to come (0: none) */
    int plen;             /* its length (1..4) */
    size_t work;          /* work in this step (E0_GRAMMAR_MAX_WORK): expansions + positions copied / 32 */
    uint64_t work_total;  /* the same, over the matcher's life (e0_gmatch_work) */
    bool overflow;
};

static void set_free(gset *s) {
    free(s->pos);
    free(s->off);
    free(s->len);
    free(s->hash);
    free(s->table);
}

static void set_clear(gset *s) {
    if (s->n && s->table) memset(s->table, 0, s->tcap * sizeof *s->table);
    s->n = s->npos = 0;
}

static uint64_t hash_of(const uint32_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Add a stack unless the set has it. false when out of memory or past the limit. */
static bool set_add(e0_gmatch *m, gset *s, const uint32_t *p, size_t n) {
    uint64_t h = hash_of(p, n);
    if (s->tcap < 2 * (s->n + 1)) { /* grow the table, and put every stack back */
        size_t tcap = s->tcap ? s->tcap * 2 : 16;
        while (tcap < 2 * (s->n + 1)) tcap *= 2;
        uint32_t *t = calloc(tcap, sizeof *t);
        if (!t) return m->overflow = true, false;
        for (size_t i = 0; i < s->n; i++) {
            size_t k = s->hash[i] & (tcap - 1);
            while (t[k]) k = (k + 1) & (tcap - 1);
            t[k] = (uint32_t)i + 1;
        }
        free(s->table);
        s->table = t, s->tcap = tcap;
    }
    size_t k = h & (s->tcap - 1);
    for (; s->table[k]; k = (k + 1) & (s->tcap - 1)) {
        size_t i = s->table[k] - 1;
        if (s->hash[i] == h && s->len[i] == n && (n == 0 || !memcmp(s->pos + s->off[i], p, n * sizeof *p))) return true;
    }
    if (s->n >= E0_GRAMMAR_MAX_STACKS) return m->overflow = true, false;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        size_t *o = realloc(s->off, cap * sizeof *o);
        if (o) s->off = o;
        uint32_t *l = realloc(s->len, cap * sizeof *l);
        if (l) s->len = l;
        uint64_t *hh = realloc(s->hash, cap * sizeof *hh);
        if (hh) s->hash = hh;
        if (!o || !l || !hh) return m->overflow = true, false;
        s->cap = cap;
    }
    if (s->npos + n > s->cappos) {
        size_t cap = s->cappos ? s->cappos : 64;
        while (cap < s->npos + n) cap *= 2;
        uint32_t *np = realloc(s->pos, cap * sizeof *np);
        if (!np) return m->overflow = true, false;
        s->pos = np, s->cappos = cap;
    }
    if (n) memcpy(s->pos + s->npos, p, n * sizeof *p);
    s->off[s->n] = s->npos;
    s->len[s->n] = (uint32_t)n;
    s->hash[s->n] = h;
    s->table[k] = (uint32_t)s->n + 1;
    s->npos += n;
    s->n++;
    return true;
}

static bool tmp_reserve(e0_gmatch *m, size_t extra) {
    if (m->ntmp + extra <= m->captmp) return true;
    size_t cap = m->captmp ? m->captmp : 256;
    while (cap < m->ntmp + extra) cap *= 2;
    uint32_t *t = realloc(m->tmp, cap * sizeof *t);
    if (!t) return m->overflow = true, false;
    m->tmp = t, m->captmp = cap;
    return true;
}

/* The stack tmp[base .. base+len): expand a rule reference on top into each alternative, until
 * every resulting stack has a character group on top (or is empty); add those to dst. */
static void expand(e0_gmatch *m, gset *dst, size_t base, size_t len, int depth) {
    const e0_grammar *g = m->g;
    if (len == 0) {
        set_add(m, dst, NULL, 0);
        return;
    }
    size_t units = 1 + (len >> 5);
    m->work += units, m->work_total += units;
    if (len > E0_GRAMMAR_MAX_DEPTH || depth > E0_GRAMMAR_MAX_DEPTH || m->work > E0_GRAMMAR_MAX_WORK) {
        m->overflow = true;
        return;
    }
    uint32_t top = m->tmp[base + len - 1];
    const gel *e = &g->el[top];
    if (e->type != G_REF) {
        set_add(m, dst, m->tmp + base, len);
        return;
    }
    bool has_next = !gel_is_end(&g->el[top + 1]);
    for (uint32_t alt = g->rule_start[e->v];;) {
        size_t nb = m->ntmp;
        if (!tmp_reserve(m, len + 1)) return;
        memcpy(m->tmp + nb, m->tmp + base, (len - 1) * sizeof *m->tmp);
        size_t nl = len - 1;
        if (has_next) m->tmp[nb + nl++] = top + 1;
        if (!gel_is_end(&g->el[alt])) m->tmp[nb + nl++] = alt;
        m->ntmp = nb + nl;
        expand(m, dst, nb, nl, depth + 1);
        m->ntmp = nb;
        if (m->overflow) return;
        while (!gel_is_end(&g->el[alt])) alt++;
        if (g->el[alt].type == G_END) break;
        alt++;
    }
}

/* Does the character group at pos match cp? */
static bool group_matches(const gel *el, uint32_t pos, uint32_t cp) {
    if (el[pos].type == G_ANY) return true;
    bool positive = el[pos].type == G_CHAR, found = false;
    do {
        if (el[pos + 1].type == G_RNG_UPPER) {
            found = found || (el[pos].v <= cp && cp <= el[pos + 1].v);
            pos += 2;
        } else {
            found = found || el[pos].v == cp;
            pos++;
        }
    } while (el[pos].type == G_CHAR_ALT);
    return found == positive;
}

/* Could the group at pos match some code point in [lo, hi]? (for a partly received character) */
static bool group_may_match(const gel *el, uint32_t pos, uint32_t lo, uint32_t hi) {
    if (el[pos].type != G_CHAR) return true; /* any, or a complement: nearly always */
    do {
        uint32_t a = el[pos].v, b = a;
        if (el[pos + 1].type == G_RNG_UPPER) b = el[pos + 1].v, pos++;
        pos++;
        if (a <= hi && b >= lo) return true;
    } while (el[pos].type == G_CHAR_ALT);
    return false;
}

static uint32_t after_group(const gel *el, uint32_t pos) {
    if (el[pos].type == G_ANY) return pos + 1;
    pos++;
    while (el[pos].type == G_RNG_UPPER || el[pos].type == G_CHAR_ALT) pos++;
    return pos;
}

/* dst = the stacks of src after code point cp. */
static void step(e0_gmatch *m, const gset *src, gset *dst, uint32_t cp) {
    const gel *el = m->g->el;
    set_clear(dst);
    m->work = 0;
    for (size_t i = 0; i < src->n && !m->overflow; i++) {
        size_t n = src->len[i];
        if (n == 0) continue;
        const uint32_t *s = src->pos + src->off[i];
        if (!group_matches(el, s[n - 1], cp)) continue;
        m->ntmp = 0;
        if (!tmp_reserve(m, n)) return;
        memcpy(m->tmp, s, (n - 1) * sizeof *s);
        size_t nl = n - 1;
        uint32_t q = after_group(el, s[n - 1]);
        if (!gel_is_end(&el[q])) m->tmp[nl++] = q;
        m->ntmp = nl;
        expand(m, dst, 0, nl, 0);
    }
}

/* A set's hash, from its stacks' hashes in order. */
static uint64_t set_hash(const gset *s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s->n;
    for (size_t i = 0; i < s->n; i++) h = (h ^ s->hash[i]) * 0x100000001B3ull;
    return h ^ (h >> 31);
}

static bool set_equal(const gset *x, const gset *y) {
    if (x->n != y->n || x->npos != y->npos) return false;
    for (size_t i = 0; i < x->n; i++)
        if (x->hash[i] != y->hash[i] || x->len[i] != y->len[i] ||
            (x->len[i] && memcmp(x->pos + x->off[i], y->pos + y->off[i], x->len[i] * sizeof *x->pos)))
            return false;
    return true;
}

/* Copy src into dst (dst's arrays are made for it). false when out of memory. */
static bool set_copy(gset *dst, const gset *src) {
    memset(dst, 0, sizeof *dst);
    size_t n = src->n ? src->n : 1, np = src->npos ? src->npos : 1;
    dst->pos = malloc(np * sizeof *dst->pos);
    dst->off = malloc(n * sizeof *dst->off);
    dst->len = malloc(n * sizeof *dst->len);
    dst->hash = malloc(n * sizeof *dst->hash);
    if (!dst->pos || !dst->off || !dst->len || !dst->hash) return set_free(dst), memset(dst, 0, sizeof *dst), false;
    if (src->npos) memcpy(dst->pos, src->pos, src->npos * sizeof *dst->pos);
    if (src->n) {
        memcpy(dst->off, src->off, src->n * sizeof *dst->off);
        memcpy(dst->len, src->len, src->n * sizeof *dst->len);
        memcpy(dst->hash, src->hash, src->n * sizeof *dst->hash);
    }
    dst->n = dst->cap = src->n, dst->npos = dst->cappos = src->npos; /* no table: an interned set is never added to */
    return true;
}

/* The state of set s (interned when new), or -1 when out of memory. */
static int32_t intern(e0_gmatch *m, const gset *s) {
    uint64_t h = set_hash(s);
    if (m->st_tcap < 2 * (m->n_st + 1)) {
        size_t cap = m->st_tcap ? m->st_tcap * 2 : 64;
        int32_t *t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < m->n_st; i++) {
            size_t k = set_hash(&m->st[i].set) & (cap - 1);
            while (t[k]) k = (k + 1) & (cap - 1);
            t[k] = (int32_t)i + 1;
        }
        free(m->st_table);
        m->st_table = t, m->st_tcap = cap;
    }
    size_t k = h & (m->st_tcap - 1);
    for (; m->st_table[k]; k = (k + 1) & (m->st_tcap - 1))
        if (set_equal(&m->st[m->st_table[k] - 1].set, s)) return m->st_table[k] - 1;
    if (m->n_st == m->cap_st) {
        size_t cap = m->cap_st ? m->cap_st * 2 : 64;
        gstate *n = realloc(m->st, cap * sizeof *n);
        if (!n) return -1;
        m->st = n, m->cap_st = cap;
    }
    gstate *g = &m->st[m->n_st];
    if (!set_copy(&g->set, s)) return -1;
    g->can_end = false;
    for (size_t i = 0; i < s->n; i++) g->can_end |= s->len[i] == 0;
    g->must_end = s->n == 1 && s->len[0] == 0;
    m->st_table[k] = (int32_t)m->n_st + 1;
    m->st_words += s->npos + s->n;
    return (int32_t)m->n_st++;
}

/* Remember a step (dropped silently when out of memory: it is only a cache). */
static void remember(e0_gmatch *m, uint64_t key, int32_t to) {
    if (m->steps_cap < 2 * (m->n_steps + 1)) {
        size_t cap = m->steps_cap ? m->steps_cap * 2 : 1024;
        gstep *t = calloc(cap, sizeof *t);
        if (!t) return;
        for (size_t i = 0; i < m->steps_cap; i++)
            if (m->steps[i].key) {
                size_t k = (m->steps[i].key * 0x9E3779B97F4A7C15ull) >> 20 & (cap - 1);
                while (t[k].key) k = (k + 1) & (cap - 1);
                t[k] = m->steps[i];
            }
        free(m->steps);
        m->steps = t, m->steps_cap = cap;
    }
    size_t k = (key * 0x9E3779B97F4A7C15ull) >> 20 & (m->steps_cap - 1);
    while (m->steps[k].key) k = (k + 1) & (m->steps_cap - 1);
    m->steps[k] = (gstep){key, to};
    m->n_steps++;
}

/* The state after code point cp from state `from` (computed once, then remembered). */
static int32_t step_to(e0_gmatch *m, int32_t from, uint32_t cp) {
    uint64_t key = ((uint64_t)from << 21 | cp) + 1;
    if (m->steps_cap) {
        size_t k = (key * 0x9E3779B97F4A7C15ull) >> 20 & (m->steps_cap - 1);
        for (; m->steps[k].key; k = (k + 1) & (m->steps_cap - 1))
            if (m->steps[k].key == key) return m->steps[k].to;
    }
    m->overflow = false;
    step(m, &m->st[from].set, &m->a, cp);
    int32_t to = m->overflow ? STEP_LIMIT
                 : m->a.n == 0 ? STEP_REFUSED
                 : m->st_words + m->a.npos > CACHE_WORDS_MAX ? STEP_LIMIT
                                                              : intern(m, &m->a);
    if (to == -1 && !m->overflow && m->a.n) to = STEP_LIMIT, m->overflow = true; /* out of memory */
    m->overflow = false;
    remember(m, key, to);
    return to;
}

static void cache_free(e0_gmatch *m) {
    for (size_t i = 0; i < m->n_st; i++) set_free(&m->st[i].set);
    m->n_st = m->st_words = 0;
    if (m->st_table) memset(m->st_table, 0, m->st_tcap * sizeof *m->st_table);
    if (m->steps) memset(m->steps, 0, m->steps_cap * sizeof *m->steps);
    m->n_steps = 0;
}

/* Between texts: a full cache is dropped, the current state kept (as state 0). */
static void cache_trim(e0_gmatch *m) {
    if (m->n_st <= CACHE_STATES && m->n_steps <= CACHE_STEPS && m->st_words <= CACHE_WORDS) return;
    gset keep;
    if (!set_copy(&keep, &m->st[m->cur].set)) return;
    cache_free(m);
    m->cur = intern(m, &keep);
    set_free(&keep);
    if (m->cur < 0) m->cur = 0, m->overflow = true; /* out of memory: nothing left to match */
}

static void init_state(e0_gmatch *m) {
    const e0_grammar *g = m->g;
    set_clear(&m->a);
    m->pval = 0, m->prem = 0, m->plen = 0;
    m->overflow = false;
    m->work = 0;
    for (uint32_t alt = g->rule_start[g->root];;) {
        m->ntmp = 0;
        if (!tmp_reserve(m, 1)) return;
        size_t nl = 0;
        if (!gel_is_end(&g->el[alt])) m->tmp[nl++] = alt;
        m->ntmp = nl;
        expand(m, &m->a, 0, nl, 0);
        if (m->overflow) return;
        while (!gel_is_end(&g->el[alt])) alt++;
        if (g->el[alt].type == G_END) break;
        alt++;
    }
    if (m->n_st > CACHE_STATES || m->n_steps > CACHE_STEPS || m->st_words > CACHE_WORDS) cache_free(m);
    if ((m->cur = intern(m, &m->a)) < 0) m->overflow = true;
}

e0_gmatch *e0_gmatch_new(const e0_grammar *g, e0_err *e) {
    e0_gmatch *m = calloc(1, sizeof *m);
    if (!m) return e0_fail(e, "out of memory"), NULL;
    m->g = g;
    init_state(m);
    if (m->overflow) {
        e0_fail(e, "grammar: its start exceeds the matcher's limits (%d stacks, depth %d, %u expansions)", E0_GRAMMAR_MAX_STACKS,
                E0_GRAMMAR_MAX_DEPTH, E0_GRAMMAR_MAX_WORK);
        e0_gmatch_free(m);
        return NULL;
    }
    return m;
}

void e0_gmatch_free(e0_gmatch *m) {
    if (!m) return;
    cache_free(m);
    free(m->st);
    free(m->st_table);
    free(m->steps);
    set_free(&m->a);
    free(m->tmp);
    free(m);
}

void e0_gmatch_reset(e0_gmatch *m) { init_state(m); }

/* Run text through the grammar from the current state: the resulting state, or STEP_REFUSED /
 * STEP_LIMIT (m->overflow set for the latter); *pval / *prem / *plen: the partial character. */
static int32_t run(e0_gmatch *m, const unsigned char *t, size_t n, uint32_t *pval, int *prem, int *plen) {
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000}; /* by sequence length: no overlong forms */
    cache_trim(m);
    int32_t src = m->cur;
    uint32_t v = m->pval;
    int r = m->prem, len = m->plen;
    m->overflow = false; /* says whether a limit refused this text */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = t[i];
        if (r == 0) {
            if (c < 0x80) v = c, len = 1;
            else if ((c & 0xE0) == 0xC0) v = c & 0x1F, r = 1, len = 2;
            else if ((c & 0xF0) == 0xE0) v = c & 0x0F, r = 2, len = 3;
            else if ((c & 0xF8) == 0xF0) v = c & 0x07, r = 3, len = 4;
            else return STEP_REFUSED; /* a continuation byte or 0xF8.. without a lead */
        } else {
            if ((c & 0xC0) != 0x80) return STEP_REFUSED;
            v = v << 6 | (c & 0x3F);
            r--;
        }
        /* the values this sequence can still reach must include a valid (RFC 3629) character */
        uint32_t lo = v << (6 * r), hi = lo | ((1u << (6 * r)) - 1);
        if (lo < least[len]) lo = least[len];
        if (hi > 0x10FFFF) hi = 0x10FFFF;
        if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) return STEP_REFUSED;
        if (r) continue;
        src = step_to(m, src, v);
        if (src < 0) {
            m->overflow = src == STEP_LIMIT;
            return src;
        }
    }
    if (r) { /* the character's possible values [lo, hi] must still be able to match */
        uint32_t lo = v << (6 * r), hi = lo | ((1u << (6 * r)) - 1);
        if (lo < least[len]) lo = least[len];
        const gset *s = &m->st[src].set;
        bool ok = false;
        for (size_t i = 0; i < s->n && !ok; i++)
            if (s->len[i]) ok = group_may_match(m->g->el, s->pos[s->off[i] + s->len[i] - 1], lo, hi);
        if (!ok) return STEP_REFUSED;
    }
    *pval = v, *prem = r, *plen = len;
    return src;
}

bool e0_gmatch_allows(e0_gmatch *m, const char *text, size_t n) {
    uint32_t v;
    int r, l;
    return run(m, (const unsigned char *)text, n, &v, &r, &l) >= 0;
}

bool e0_gmatch_accept(e0_gmatch *m, const char *text, size_t n) {
    uint32_t v;
    int r, l;
    int32_t s = run(m, (const unsigned char *)text, n, &v, &r, &l);
    if (s < 0) return false; /* the state is unchanged; m->overflow says whether a limit refused it */
    m->cur = s;
    m->pval = v, m->prem = r, m->plen = l;
    return true;
}

bool e0_gmatch_can_end(const e0_gmatch *m) { return m->prem == 0 && m->st[m->cur].can_end; }

bool e0_gmatch_must_end(const e0_gmatch *m) { return m->prem == 0 && m->st[m->cur].must_end; }

bool e0_gmatch_overflow(const e0_gmatch *m) { return m->overflow; }

uint64_t e0_gmatch_work(const e0_gmatch *m) { return m->work_total; }

