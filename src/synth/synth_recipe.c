/* synth_recipe.c — per-tensor types of a synth model: `--type-map 'REGEX=TYPE,...'` (POSIX
 * extended regexes searched in the GGUF tensor name, first match wins) and `--ftype NAME`, the
 * llama.cpp file types (Q4_K_M, IQ3_XXS, MXFP4_MOE, ...) with llama.cpp's own recipe: which
 * tensors get which type, read from llama.cpp's src/llama-quant.cpp (llama_tensor_get_type and
 * tensor_type_fallback at the pinned version), so that a synth file has the mix of a real file.
 *
 * The recipe walks the tensors in llama.cpp's order (by layer, model tensors first, then by
 * name) because some choices depend on counters (attn_v's "use more bits" layers; the IQ1/IQ2
 * mixes count ffn_down tensors). Choices that depend on things synth models never have (the
 * Falcon architecture, LLaMA-70B's type) are left out. The importance matrix changes a few
 * choices (IQ3_XXS's attn_v / ffn_down, IQ4_*'s and Q4_0/Q5_0's first ffn_down layers): the recipe
 * is applied as llama-quantize applies it with an importance matrix for the file types it
 * refuses without one (IQ1_*, IQ2_*, IQ3_XXS, IQ3_XS, Q2_K_S) and without one for the others.
 *
 * Types are ggml ids, including ones not in this engine's type table yet: the plan is complete,
 * and synth_write refuses a file with a type it cannot write ("type X not supported yet"). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "quant/quant.h"
#include "synth/synth_impl.h"

/* ---- every ggml type id: name and block size (for plans with types not in quant.c yet) ---- */
enum {
    G_F32 = 0, G_F16 = 1, G_Q4_0 = 2, G_Q4_1 = 3, G_Q5_0 = 6, G_Q5_1 = 7, G_Q8_0 = 8, G_Q2_K = 10, G_Q3_K = 11,
    G_Q4_K = 12, G_Q5_K = 13, G_Q6_K = 14, G_IQ2_XXS = 16, G_IQ2_XS = 17, G_IQ3_XXS = 18, G_IQ1_S = 19, G_IQ4_NL = 20,
    G_IQ3_S = 21, G_IQ2_S = 22, G_IQ4_XS = 23, G_IQ1_M = 29, G_BF16 = 30, G_TQ1_0 = 34, G_TQ2_0 = 35, G_MXFP4 = 39,
    G_NVFP4 = 40, G_Q1_0 = 41, G_Q2_0 = 42, G_COUNT = 43
};

static const struct {
    const char *name;
    int block;
} ggml_types[G_COUNT] = {
    [G_F32] = {"f32", 1},         [G_F16] = {"f16", 1},         [G_Q4_0] = {"q4_0", 32},      [G_Q4_1] = {"q4_1", 32},
    [G_Q5_0] = {"q5_0", 32},      [G_Q5_1] = {"q5_1", 32},      [G_Q8_0] = {"q8_0", 32},      [9] = {"q8_1", 32},
    [G_Q2_K] = {"q2_K", 256},     [G_Q3_K] = {"q3_K", 256},     [G_Q4_K] = {"q4_K", 256},     [G_Q5_K] = {"q5_K", 256},
    [G_Q6_K] = {"q6_K", 256},     [15] = {"q8_K", 256},         [G_IQ2_XXS] = {"iq2_xxs", 256}, [G_IQ2_XS] = {"iq2_xs", 256},
    [G_IQ3_XXS] = {"iq3_xxs", 256}, [G_IQ1_S] = {"iq1_s", 256}, [G_IQ4_NL] = {"iq4_nl", 32},  [G_IQ3_S] = {"iq3_s", 256},
    [G_IQ2_S] = {"iq2_s", 256},   [G_IQ4_XS] = {"iq4_xs", 256}, [G_IQ1_M] = {"iq1_m", 256},   [G_BF16] = {"bf16", 1},
    [G_TQ1_0] = {"tq1_0", 256},   [G_TQ2_0] = {"tq2_0", 256},   [G_MXFP4] = {"mxfp4", 32},    [G_NVFP4] = {"nvfp4", 64},
    [G_Q1_0] = {"q1_0", 128},     [G_Q2_0] = {"q2_0", 64},
};

const char *synth_ggml_type_name(uint32_t type) {
    return type < G_COUNT && ggml_types[type].name ? ggml_types[type].name : "unknown";
}

int synth_ggml_type_from_name(const char *name) {
    for (int t = 0; t < G_COUNT; t++)
        if (ggml_types[t].name && !strcasecmp(ggml_types[t].name, name)) return t;
    return -1;
}

static int64_t block_of(uint32_t type) { return type < G_COUNT && ggml_types[type].block ? ggml_types[type].block : 1; }
static int is_quantized(uint32_t t) { return t != G_F32 && t != G_F16 && t != G_BF16; }

/* ---- llama_ftype values and their default types ---- */
enum {
    F_ALL_F32 = 0, F_F16 = 1, F_Q4_0 = 2, F_Q4_1 = 3, F_Q8_0 = 7, F_Q5_0 = 8, F_Q5_1 = 9, F_Q2_K = 10, F_Q3_K_S = 11,
    F_Q3_K_M = 12, F_Q3_K_L = 13, F_Q4_K_S = 14, F_Q4_K_M = 15, F_Q5_K_S = 16, F_Q5_K_M = 17, F_Q6_K = 18,
    F_IQ2_XXS = 19, F_IQ2_XS = 20, F_Q2_K_S = 21, F_IQ3_XS = 22, F_IQ3_XXS = 23, F_IQ1_S = 24, F_IQ4_NL = 25,
    F_IQ3_S = 26, F_IQ3_M = 27, F_IQ2_S = 28, F_IQ2_M = 29, F_IQ4_XS = 30, F_IQ1_M = 31, F_BF16 = 32, F_TQ1_0 = 36,
    F_TQ2_0 = 37, F_MXFP4_MOE = 38, F_NVFP4 = 39, F_Q1_0 = 40, F_Q2_0 = 41
};

static const struct {
    const char *name;
    int ftype;
    uint32_t dflt; /* llama_ftype_get_default_type */
    int imatrix;   /* llama.cpp refuses to make it without an importance matrix */
} ftypes[] = {
    {"F32", F_ALL_F32, G_F32, 0},      {"F16", F_F16, G_F16, 0},          {"BF16", F_BF16, G_BF16, 0},
    {"Q4_0", F_Q4_0, G_Q4_0, 0},       {"Q4_1", F_Q4_1, G_Q4_1, 0},       {"Q5_0", F_Q5_0, G_Q5_0, 0},
    {"Q5_1", F_Q5_1, G_Q5_1, 0},       {"Q8_0", F_Q8_0, G_Q8_0, 0},       {"Q2_K", F_Q2_K, G_Q2_K, 0},
    {"Q2_K_S", F_Q2_K_S, G_Q2_K, 1},   {"Q3_K_S", F_Q3_K_S, G_Q3_K, 0},   {"Q3_K_M", F_Q3_K_M, G_Q3_K, 0},
    {"Q3_K_L", F_Q3_K_L, G_Q3_K, 0},   {"Q4_K_S", F_Q4_K_S, G_Q4_K, 0},   {"Q4_K_M", F_Q4_K_M, G_Q4_K, 0},
    {"Q5_K_S", F_Q5_K_S, G_Q5_K, 0},   {"Q5_K_M", F_Q5_K_M, G_Q5_K, 0},   {"Q6_K", F_Q6_K, G_Q6_K, 0},
    {"IQ2_XXS", F_IQ2_XXS, G_IQ2_XXS, 1}, {"IQ2_XS", F_IQ2_XS, G_IQ2_XS, 1}, {"IQ2_S", F_IQ2_S, G_IQ2_XS, 1},
    {"IQ2_M", F_IQ2_M, G_IQ2_S, 1},    {"IQ3_XXS", F_IQ3_XXS, G_IQ3_XXS, 1}, {"IQ3_XS", F_IQ3_XS, G_IQ3_S, 1},
    {"IQ3_S", F_IQ3_S, G_IQ3_S, 0},    {"IQ3_M", F_IQ3_M, G_IQ3_S, 0},    {"IQ1_S", F_IQ1_S, G_IQ1_S, 1},
    {"IQ1_M", F_IQ1_M, G_IQ1_M, 1},    {"IQ4_NL", F_IQ4_NL, G_IQ4_NL, 0}, {"IQ4_XS", F_IQ4_XS, G_IQ4_XS, 0},
    {"TQ1_0", F_TQ1_0, G_TQ1_0, 0},    {"TQ2_0", F_TQ2_0, G_TQ2_0, 0},    {"MXFP4_MOE", F_MXFP4_MOE, G_MXFP4, 0},
    {"Q1_0", F_Q1_0, G_Q1_0, 0},       {"Q2_0", F_Q2_0, G_Q2_0, 0}, /* (llama.cpp has no NVFP4 file type recipe) */
};
#define N_FTYPES (sizeof ftypes / sizeof ftypes[0])

int synth_ftype_from_name(const char *name) {
    for (size_t i = 0; i < N_FTYPES; i++)
        if (!strcasecmp(ftypes[i].name, name)) return ftypes[i].ftype;
    return -1;
}

const char *synth_ftype_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (size_t i = 0; i < N_FTYPES && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? " " : "", ftypes[i].name);
    }
    return buf;
}

static int ftype_row(int ftype) {
    for (size_t i = 0; i < N_FTYPES; i++)
        if (ftypes[i].ftype == ftype) return (int)i;
    return -1;
}

uint32_t synth_ftype_default_type(int ftype) {
    const int r = ftype_row(ftype);
    return r < 0 ? G_F32 : ftypes[r].dflt;
}

/* ---- --type-map ---- */
typedef struct map_rule {
    regex_t re;
    uint32_t type;
} map_rule;

struct synth_type_map {
    map_rule *rules;
    size_t n;
};

void synth_type_map_free(synth_type_map *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) regfree(&m->rules[i].re);
    free(m->rules);
    free(m);
}

int synth_type_map_parse(const char *spec, synth_type_map **out, e0_err *e) {
    *out = NULL;
    if (!spec || !*spec) return e0_fail(e, "--type-map: empty (expected REGEX=TYPE,...)");
    if (strlen(spec) > 65536) return e0_fail(e, "--type-map: longer than 64 KiB");
    synth_type_map *m = calloc(1, sizeof *m);
    char *copy = strdup(spec);
    size_t cap = 1;
    for (const char *c = spec; *c; c++) cap += *c == ',';
    if (m) m->rules = calloc(cap, sizeof *m->rules);
    if (!m || !copy || !m->rules) {
        free(copy);
        synth_type_map_free(m);
        return e0_fail(e, "out of memory");
    }
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
        char *eq = strrchr(item, '=');
        if (!eq || eq == item || !eq[1]) {
            rc = e0_fail(e, "--type-map: '%s' is not REGEX=TYPE", item);
            break;
        }
        *eq = 0;
        const int t = synth_ggml_type_from_name(eq + 1);
        if (t < 0 || t == 9 || t == 15) {
            rc = e0_fail(e, "--type-map: unknown tensor type '%s' in '%s=%s'", eq + 1, item, eq + 1);
            break;
        }
        int err = regcomp(&m->rules[m->n].re, item, REG_EXTENDED | REG_NOSUB);
        if (err) {
            char msg[128];
            regerror(err, &m->rules[m->n].re, msg, sizeof msg);
            rc = e0_fail(e, "--type-map: bad regex '%s': %s", item, msg);
            break;
        }
        m->rules[m->n++].type = (uint32_t)t;
    }
    free(copy);
    if (!rc && m->n == 0) rc = e0_fail(e, "--type-map: no REGEX=TYPE item");
    if (rc) {
        synth_type_map_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

/* The type of the first rule whose regex matches somewhere in name, or -1. */
static int map_lookup(const synth_type_map *m, const char *name) {
    for (size_t i = 0; m && i < m->n; i++)
        if (regexec(&m->rules[i].re, name, 0, NULL, 0) == 0) return (int)m->rules[i].type;
    return -1;
}

/* ---- llama.cpp's recipe ---- */
enum cat { C_TOKEN_EMBD, C_ATTN_Q, C_ATTN_V, C_ATTN_K, C_ATTN_QKV, C_ATTN_KV_B, C_ATTN_OUT, C_FFN_UP, C_FFN_GATE, C_FFN_DOWN,
           C_OUTPUT, C_OTHER };

static enum cat category(const char *n) {
    if (!strcmp(n, "output.weight")) return C_OUTPUT;
    if (!strcmp(n, "token_embd.weight") || !strcmp(n, "per_layer_token_embd.weight")) return C_TOKEN_EMBD;
    if (strstr(n, "attn_qkv.weight")) return C_ATTN_QKV;
    if (strstr(n, "attn_kv_b.weight")) return C_ATTN_KV_B;
    if (strstr(n, "attn_v.weight")) return C_ATTN_V;
    if (strstr(n, "attn_k.weight")) return C_ATTN_K;
    if (strstr(n, "attn_q.weight")) return C_ATTN_Q;
    if (strstr(n, "attn_output.weight")) return C_ATTN_OUT;
    if (strstr(n, "ffn_up")) return C_FFN_UP;
    if (strstr(n, "ffn_gate")) return C_FFN_GATE;
    if (strstr(n, "ffn_down")) return C_FFN_DOWN;
    return C_OTHER;
}
static int is_attn_v(enum cat c) { return c == C_ATTN_V || c == C_ATTN_QKV || c == C_ATTN_KV_B; }

typedef struct recipe {
    int ftype, has_imatrix, tied;
    int64_t n_gqa, n_expert, n_layer;
    int n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;
} recipe;

static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The layer of a per-layer FFN tensor: from its name in MoE models, else the running count. */
static int layer_of(const recipe *R, int counter, const char *name) {
    int il = counter;
    if (R->n_expert > 1 && sscanf(name, "blk.%d.", &il) != 1) il = counter;
    return il;
}

static int any_of(int f, const int *list, int n) {
    for (int i = 0; i < n; i++)
        if (list[i] == f) return 1;
    return 0;
}
#define ANY(f, ...) any_of(f, (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

static uint32_t recipe_type(recipe *R, uint32_t t, const synth_tensor_desc *d, enum cat c) {
    const int f = R->ftype;
    const int n = (int)R->n_layer;
    if (c == C_OUTPUT || (R->tied && c == C_TOKEN_EMBD)) {
        if (f == F_MXFP4_MOE) t = G_Q8_0;
        else if ((int64_t)d->ne[0] % block_of(t)) t = G_Q8_0;
        else if (ANY(f, F_IQ2_XXS, F_IQ2_XS, F_IQ3_XXS, F_IQ1_S, F_IQ2_S, F_IQ2_M, F_IQ1_M)) t = G_Q5_K;
        else if (t != G_Q8_0) t = G_Q6_K;
    } else if (f == F_MXFP4_MOE) {
        t = d->ne[2] > 1 ? G_MXFP4 : G_Q8_0; /* expert tensors (3-D) */
    } else if (c == C_TOKEN_EMBD) {
        if (ANY(f, F_IQ2_XXS, F_IQ2_XS, F_IQ1_S, F_IQ1_M)) t = G_Q2_K;
        else if (ANY(f, F_IQ2_S, F_IQ2_M, F_IQ3_XXS)) t = G_IQ3_S;
        else if (ANY(f, F_TQ1_0, F_TQ2_0, F_Q2_0)) t = G_Q4_K;
    } else if (ANY(f, F_IQ2_XXS, F_IQ2_XS, F_IQ1_S, F_IQ2_S, F_IQ2_M, F_IQ1_M)) {
        const int s_m = f == F_IQ2_S || f == F_IQ2_M;
        if (is_attn_v(c)) {
            t = R->n_gqa >= 4 || R->n_expert >= 4 ? G_Q4_K : s_m ? G_IQ3_S : G_Q2_K;
            R->i_attn_v++;
        } else if (R->n_expert == 8 && c == C_ATTN_K) {
            t = G_Q4_K;
        } else if (c == C_FFN_DOWN) {
            if (R->i_ffn_down < n / 8) t = s_m ? G_IQ3_S : G_Q2_K;
            R->i_ffn_down++;
        } else if (c == C_ATTN_OUT) {
            if (R->n_expert == 8) t = G_Q5_K;
            else if (f == F_IQ1_S || f == F_IQ1_M) t = G_IQ2_XXS;
            else if (s_m) t = G_IQ3_S;
        }
    } else if (is_attn_v(c)) {
        const int gqa4 = R->n_gqa >= 4;
        if (f == F_Q2_K) t = gqa4 ? G_Q4_K : G_Q3_K;
        else if (f == F_Q2_K_S && gqa4) t = G_Q4_K;
        else if (f == F_IQ3_XXS) t = gqa4 ? G_Q4_K : !R->has_imatrix ? G_IQ3_S : G_IQ3_XXS;
        else if ((f == F_IQ3_XS || f == F_IQ3_S) && gqa4) t = G_Q4_K;
        else if (f == F_IQ3_M) t = G_Q4_K;
        else if (f == F_Q3_K_M) t = R->i_attn_v < 2 ? G_Q5_K : G_Q4_K;
        else if (f == F_Q3_K_L) t = G_Q5_K;
        else if ((f == F_IQ4_NL || f == F_IQ4_XS) && gqa4) t = G_Q5_K;
        else if ((f == F_Q4_K_M || f == F_Q5_K_M) && more_bits(R->i_attn_v, R->n_attn_v)) t = G_Q6_K;
        else if (f == F_Q4_K_S && R->i_attn_v < 4) t = G_Q5_K;
        if (R->n_expert == 8) t = G_Q8_0;
        R->i_attn_v++;
    } else if (c == C_ATTN_K) {
        if (R->n_expert == 8) t = G_Q8_0;
        else if (f == F_IQ3_XS) t = G_IQ3_XXS;
        else if (f == F_IQ3_XXS) t = G_IQ2_S;
    } else if (c == C_ATTN_Q) {
        if (f == F_IQ3_XS) t = G_IQ3_XXS;
        else if (f == F_IQ3_XXS) t = G_IQ2_S;
    } else if (c == C_FFN_DOWN) {
        const int il = layer_of(R, R->i_ffn_down, d->name);
        if (f == F_Q2_K) t = G_Q3_K;
        else if (f == F_Q2_K_S) {
            if (il < n / 8) t = G_Q4_K;
        } else if (f == F_IQ3_XXS && !R->has_imatrix) t = il < n / 8 ? G_Q4_K : G_Q3_K;
        else if (f == F_Q3_K_M) t = il < n / 16 ? G_Q5_K : G_Q4_K; /* (Falcon: Q3_K in some layers) */
        else if (f == F_IQ3_M && (il < n / 8 || (R->n_expert == 8 && more_bits(il, n)))) t = G_Q4_K;
        else if (f == F_Q3_K_L) t = G_Q5_K;
        else if (f == F_Q4_K_M) {
            if (more_bits(il, n)) t = G_Q6_K;
        } else if (il < n / 8 && (f == F_IQ4_NL || f == F_IQ4_XS) && !R->has_imatrix) t = G_Q5_K;
        else if (f == F_Q5_K_M && more_bits(il, n)) t = G_Q6_K;
        else if (f == F_Q4_K_S && il < n / 8) t = G_Q5_K;
        else if ((f == F_Q4_0 || f == F_Q5_0) && R->has_imatrix && il < n / 8) t = f == F_Q4_0 ? G_Q4_1 : G_Q5_1;
        R->i_ffn_down++;
    } else if (c == C_ATTN_OUT) {
        if (R->n_expert == 8) {
            if (ANY(f, F_Q2_K, F_IQ3_XS, F_IQ3_XXS, F_Q3_K_S, F_Q3_K_M, F_IQ4_NL, F_Q4_K_S, F_Q4_K_M, F_IQ3_S, F_IQ3_M, F_IQ4_XS))
                t = G_Q5_K;
        } else {
            if (f == F_Q2_K) t = G_Q3_K;
            else if (f == F_IQ3_XXS) t = G_IQ3_S;
            else if (f == F_Q3_K_M) t = G_Q4_K;
            else if (f == F_Q3_K_L) t = G_Q5_K;
            else if (f == F_IQ3_M) t = G_Q4_K;
        }
    } else if (c == C_ATTN_QKV) {
        if (f == F_Q3_K_M || f == F_Q3_K_L || f == F_IQ3_M) t = G_Q4_K;
        else if (f == F_Q4_K_M) t = G_Q5_K;
        else if (f == F_Q5_K_M) t = G_Q6_K;
    } else if (c == C_FFN_GATE || c == C_FFN_UP) {
        int *counter = c == C_FFN_GATE ? &R->i_ffn_gate : &R->i_ffn_up;
        const int il = layer_of(R, *counter, d->name);
        if (f == F_IQ3_XS && il >= n / 8 && il < 7 * n / 8) t = G_IQ3_XXS;
        (*counter)++;
    }
    return t;
}

/* llama.cpp's tensor_type_fallback: rows that are not whole blocks of t. */
static int fallback(uint32_t t, const synth_tensor_desc *d, uint32_t *out, e0_err *e) {
    const int64_t nc = (int64_t)d->ne[0];
    *out = t;
    if (nc % block_of(t) == 0) return 0;
    switch (t) {
    case G_IQ1_S: case G_IQ1_M: case G_IQ2_XXS: case G_IQ2_XS: case G_IQ2_S: case G_IQ3_XXS: case G_IQ3_S: case G_IQ4_XS:
        *out = G_IQ4_NL;
        break;
    case G_Q2_0: case G_Q2_K: case G_Q3_K: case G_TQ1_0: case G_TQ2_0: *out = G_Q4_0; break;
    case G_Q4_K: *out = G_Q5_0; break;
    case G_Q5_K: *out = G_Q5_1; break;
    case G_Q6_K: *out = G_Q8_0; break;
    default:
        if (block_of(t) > 32)
            return e0_fail(e, "tensor %s: rows of %lld do not fit type %s and llama.cpp defines no fallback for it", d->name,
                           (long long)nc, synth_ggml_type_name(t));
    }
    if (nc % block_of(*out)) *out = G_F16;
    return 0;
}

/* llama.cpp's tensor order: by layer (model tensors, layer -1, first), then by name. */
typedef struct ordered {
    int layer;
    const char *name;
    size_t idx;
} ordered;

static int cmp_llama_order(const void *a, const void *b) {
    const ordered *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

int synth_assign_types(const synth_params *p, const synth_tensor_desc *t, size_t n, uint32_t *types, e0_err *e) {
    recipe R = {.ftype = p->use_ftype ? p->ftype : -1, .n_gqa = p->n_head / (p->n_head_kv ? p->n_head_kv : 1),
                .n_expert = p->n_expert, .n_layer = p->n_layer, .tied = 1};
    const int row = p->use_ftype ? ftype_row(p->ftype) : -1;
    if (p->use_ftype && row < 0) return e0_fail(e, "unknown file type %d", p->ftype);
    R.has_imatrix = row >= 0 && ftypes[row].imatrix;
    const uint32_t dflt = row >= 0 ? ftypes[row].dflt : p->type;
    ordered *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return e0_fail(e, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int il = -1;
        order[i] = (ordered){sscanf(t[i].name, "blk.%d.", &il) == 1 ? il : -1, t[i].name, i};
        const enum cat c = category(t[i].name);
        R.n_attn_v += is_attn_v(c);
        if (c == C_OUTPUT) R.tied = 0;
    }
    qsort(order, n, sizeof *order, cmp_llama_order);
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        const synth_tensor_desc *d = &t[order[k].idx];
        uint32_t ty = d->quantizable ? dflt : G_F32;
        if (d->quantizable && is_quantized(dflt)) {
            const int m = map_lookup(p->type_map, d->name);
            if (m >= 0) ty = (uint32_t)m;
            else if (row >= 0) ty = recipe_type(&R, ty, d, category(d->name));
            rc = fallback(ty, d, &ty, e);
        } else if (d->quantizable && p->type_map) { /* a float --type: the map still applies */
            const int m = map_lookup(p->type_map, d->name);
            if (m >= 0) rc = fallback((uint32_t)m, d, &ty, e);
        }
        types[order[k].idx] = ty;
    }
    free(order);
    return rc ? -1 : 0;
}
