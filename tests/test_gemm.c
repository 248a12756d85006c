/* test_gemm.c — the multi-token kernels used by prefill matrix products (vec_dot_4: 4 tokens;
 * gemm: 1..E0_GEMM_TOKENS tokens): for every SIMD level the CPU has and every type that has one,
 * they must equal the vec_dot of the same level on each token bit for bit (memcmp), on quantized,
 * random-byte and extreme data, odd block counts and padded strides; and e0_matmul_run must give,
 * for every token count, exactly the per-token vec_dot results (so results never depend on how
 * tokens are batched). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "quant/quant.h"
#include "quant/quant_iq2.h"
#include "t.h"

/* ---- deterministic random numbers ---- */
static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rng_u64(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rng_gauss(void) {
    double u1 = ((double)(rng_u64() >> 11) + 1) / 9007199254740993.0, u2 = (double)(rng_u64() >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

static void *xalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    return p;
}

/* Where a block keeps its float fields (fp16 or f32), so random bytes can be given finite
 * scales: NaN inputs would make bit-for-bit comparison depend on NaN payload rules. */
typedef struct {
    int type;
    int n;
    struct { int off, bytes; } f[2];
} float_fields;
enum { Q8K_D = offsetof(e0_block_q8_K, d) }; /* Q8_K's d (blocks.h: after qs and bsums) */
static const float_fields k_fields[] = {
    {E0_TYPE_Q4_0, 1, {{0, 2}}},        {E0_TYPE_Q4_1, 2, {{0, 2}, {2, 2}}}, {E0_TYPE_Q5_0, 1, {{0, 2}}},
    {E0_TYPE_Q5_1, 2, {{0, 2}, {2, 2}}}, {E0_TYPE_Q8_0, 1, {{0, 2}}},        {E0_TYPE_Q8_1, 2, {{0, 2}, {2, 2}}},
    {E0_TYPE_Q2_K, 2, {{80, 2}, {82, 2}}}, {E0_TYPE_Q3_K, 1, {{108, 2}}},    {E0_TYPE_Q4_K, 2, {{0, 2}, {2, 2}}},
    {E0_TYPE_Q5_K, 2, {{0, 2}, {2, 2}}}, {E0_TYPE_Q6_K, 1, {{208, 2}}},      {E0_TYPE_Q8_K, 1, {{Q8K_D, 4}}},
    {E0_TYPE_IQ2_XXS, 1, {{0, 2}}},      {E0_TYPE_IQ1_S, 1, {{0, 2}}},       {E0_TYPE_IQ1_M, 0, {{0, 0}}}, /* IQ1_M: below */
    /* iq4_xs: fp16 d at 0; mxfp4: only an E8M0 byte (every value finite), so no field to fix */
    {E0_TYPE_IQ4_XS, 1, {{0, 2}}}, {E0_TYPE_MXFP4, 0, {{0, 0}}},
    {E0_TYPE_IQ3_XXS, 1, {{0, 2}}},     {E0_TYPE_IQ3_S, 1, {{0, 2}}},
    {E0_TYPE_IQ4_NL, 1, {{0, 2}}},
    {E0_TYPE_Q4_KX, 2, {{0, 2}, {2, 2}}}, {E0_TYPE_Q8_KX, 1, {{Q8K_D, 4}}}, /* q4_K, q6_K repacked (quant_kx.h) */
    {E0_TYPE_Q6_KX, 1, {{208, 2}}},      {E0_TYPE_Q8_KP, 1, {{Q8K_D, 4}}},
    {E0_TYPE_Q4_KV, 2, {{0, 2}, {2, 2}}}, {E0_TYPE_Q6_KV, 1, {{208, 2}}}, /* the same for AVX-512 (quant_kv.h) */
    {E0_TYPE_Q8_KV, 1, {{Q8K_D, 4}}},
};

static const float_fields *fields_of(int type) {
    for (size_t i = 0; i < sizeof k_fields / sizeof k_fields[0]; i++)
        if (k_fields[i].type == type) return &k_fields[i];
    return NULL;
}

enum fill_mode { FILL_QUANTIZED, FILL_RANDOM, FILL_EXTREME, FILL_MODES };

/* A row of nblocks blocks of `type`: quantized gaussian data, random bytes with finite random
 * scales, or all bytes 0xFF / 0x80 with the largest finite scales. Returns 0 if the type's
 * float fields are unknown here. */
static int fill_blocks(int type, uint8_t *dst, int64_t nblocks, int mode) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    const float_fields *ff = fields_of(type);
    if (!ff) return 0;
    const int64_t n = nblocks * t->block_size;
    if (mode == FILL_QUANTIZED) {
        float *x = xalloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++) x[i] = rng_gauss() * ((rng_u64() & 63) ? 1.0f : 12.0f);
        t->from_float_ref(x, dst, n);
        free(x);
        return 1;
    }
    const size_t bytes = (size_t)nblocks * t->type_size;
    const uint8_t extreme = (rng_u64() & 1) ? 0xFF : 0x80; /* max codes / most negative int8 */
    for (size_t i = 0; i < bytes; i++) dst[i] = mode == FILL_RANDOM ? (uint8_t)rng_u64() : extreme;
    for (int64_t b = 0; b < nblocks; b++) {
        uint8_t *blk = dst + (size_t)b * t->type_size;
        for (int k = 0; k < ff->n; k++) {
            uint8_t *p = blk + ff->f[k].off;
            if (ff->f[k].bytes == 2) { /* fp16: random finite, or +-65504 */
                uint16_t h = mode == FILL_RANDOM ? (uint16_t)(rng_u64() & 0xBBFF) : (uint16_t)((rng_u64() & 0x8000) | 0x7BFF);
                memcpy(p, &h, 2);
            } else {
                float f = mode == FILL_RANDOM ? rng_gauss() * 0.01f : 1e30f;
                memcpy(p, &f, 4);
            }
        }
        if (type == E0_TYPE_IQ1_M) /* its fp16 d is the top nibbles of the 4 scale words: make it finite */
            blk[IQ1M_SC + 7] = (uint8_t)((blk[IQ1M_SC + 7] & 0x0f) | (mode == FILL_RANDOM ? 0x20 : 0x60));
    }
    return 1;
}

enum { A_PAD = 40, S_STRIDE = 3, MAX_NT = E0_GEMM_TOKENS_MAX > E0_DOT_TOKENS ? E0_GEMM_TOKENS_MAX : E0_DOT_TOKENS };

/* One type at one level: vec_dot_4 (nt = 0) or gemm on nt tokens against nt x vec_dot of that
 * level. */
static void check_type_multi(int type, int level, int nt) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    const e0_kernels kn = e0_kernels_at(t, level);
    const e0_type_traits *at = e0_type_traits_of((uint32_t)t->vec_dot_type);
    const int ntok = nt ? nt : E0_DOT_TOKENS;
    static const int64_t block_counts[] = {1, 2, 3, 7, 8};
    for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0]; bc++) {
        const int64_t nb = block_counts[bc], n = nb * t->block_size;
        const size_t a_stride = (size_t)nb * at->type_size + A_PAD; /* padded rows */
        uint8_t *w = xalloc((size_t)nb * t->type_size), *a = xalloc(a_stride * MAX_NT);
        for (int mode = 0; mode < FILL_MODES; mode++) {
            for (int rep = 0; rep < 6; rep++) {
                CHECKF(fill_blocks(type, w, nb, mode), "%s: float fields unknown to the test", t->name);
                for (int k = 0; k < ntok; k++) fill_blocks(t->vec_dot_type, a + k * a_stride, nb, rep & 1 ? mode : FILL_RANDOM);
                float want[MAX_NT], got[MAX_NT * S_STRIDE];
                for (int k = 0; k < ntok; k++) kn.vec_dot(n, &want[k], w, a + k * a_stride);
                const float sentinel = -1234.5f;
                for (int i = 0; i < MAX_NT * S_STRIDE; i++) got[i] = sentinel;
                if (nt) kn.gemm(n, 1, w, 0, nt, a, a_stride, got, S_STRIDE);
                else kn.vec_dot_4(n, got, S_STRIDE, w, a, a_stride);
                for (int k = 0; k < ntok; k++)
                    CHECKF(!memcmp(&got[k * S_STRIDE], &want[k], sizeof(float)),
                           "%s %s %s nt %d blocks %lld mode %d token %d: %.9g vs %.9g", e0_simd_name(level), t->name,
                           nt ? "gemm" : "vec_dot_4", ntok, (long long)nb, mode, k, got[k * S_STRIDE], want[k]);
                for (int i = 0; i < MAX_NT * S_STRIDE; i++)
                    if (i % S_STRIDE || i >= ntok * S_STRIDE) CHECKF(got[i] == sentinel, "%s wrote outside its outputs", t->name);
            }
        }
        free(w);
        free(a);
    }
}

/* Every level this CPU runs (scalar included; E0_SIMD caps it). */
static void test_vec_dot_4_matches_vec_dot(void) {
    const int top = e0_simd_level();
    for (int level = E0_SIMD_SCALAR; level <= top; level++) {
        int n_checked = 0;
        for (int type = 0; type < E0_TYPE_COUNT; type++) {
            const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
            if (!t || !e0_kernels_at(t, level).vec_dot_4) continue;
            check_type_multi(type, level, 0);
            n_checked++;
        }
        /* the prefill types must have it wherever there is SIMD (else the test checked nothing) */
        if (level >= E0_SIMD_AVX2) {
            CHECK(e0_kernels_at(e0_type_traits_of(E0_TYPE_Q4_K), level).vec_dot_4 != NULL);
            CHECK(e0_kernels_at(e0_type_traits_of(E0_TYPE_Q6_K), level).vec_dot_4 != NULL);
            CHECK(n_checked >= 2);
        }
        printf("# %s: %d types with vec_dot_4\n", e0_simd_name(level), n_checked);
    }
}

/* gemm for every token count 1..E0_GEMM_TOKENS (or the type's larger gemm_tokens), every level
 * that has one. */
static void test_gemm_matches_vec_dot(void) {
    const int top = e0_simd_level();
    for (int level = E0_SIMD_SCALAR; level <= top; level++) {
        int n_checked = 0;
        for (int type = 0; type < E0_TYPE_COUNT; type++) {
            const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
            if (!t || !e0_kernels_at(t, level).gemm) continue;
            for (int nt = 1; nt <= e0_kernels_at(t, level).gemm_tokens; nt++) check_type_multi(type, level, nt);
            n_checked++;
        }
        /* AVX2 has one for each prefill type (else the test checked nothing) */
        if (level == E0_SIMD_AVX2) {
            static const int need[] = {E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K, E0_TYPE_Q8_0, E0_TYPE_Q4_KX, E0_TYPE_Q6_KX};
            for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
                CHECKF(e0_kernels_at(e0_type_traits_of((uint32_t)need[i]), level).gemm != NULL, "type %d has no avx2 gemm", need[i]);
            /* IQ2_XXS's gemm takes the wider token groups (checked up to that count above) */
            CHECK(e0_kernels_at(e0_type_traits_of(E0_TYPE_IQ2_XXS), level).gemm_tokens == E0_GEMM_TOKENS_MAX);
        }
        if (level == E0_SIMD_AVX512) {
            CHECK(e0_kernels_at(e0_type_traits_of(E0_TYPE_Q4_KV), level).gemm != NULL);
            CHECK(e0_kernels_at(e0_type_traits_of(E0_TYPE_Q6_KV), level).gemm != NULL);
        }
        printf("# %s: %d types with gemm\n", e0_simd_name(level), n_checked);
    }
}

/* gemm on whole tiles: 1..E0_GEMM_ROWS rows (odd counts included) x 1..gemm_tokens tokens,
 * rows of mixed fills (quantized, random, extreme) at a weight stride and base off every vector
 * alignment (by 4 bytes: the block structs' own alignment, as in files), tokens likewise, outputs
 * at a stride past the row count: every (row, token)
 * equals that level's vec_dot bit for bit, and nothing outside the outputs is written. */
static void check_gemm_tiles(int type, int level) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type), *at = e0_type_traits_of((uint32_t)t->vec_dot_type);
    const e0_kernels kn = e0_kernels_at(t, level);
    /* 17: past the chunks of 16 (quant_kv_avx512.c, quant_kx_avx2.c) and 8 (gemm_avx2.c) blocks of
     * token terms; 65: past q8_0's 64 (gemm_avx2.c), for the 32-value types only (a K-quant row
     * of 65 blocks would add minutes under the sanitizers and no new path) */
    static const int64_t block_counts[] = {1, 3, 8, 17, 65};
    static const int row_counts[] = {1, 2, 5, E0_GEMM_ROWS - 1, E0_GEMM_ROWS};
    for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0]; bc++) {
        const int64_t nb = block_counts[bc], n = nb * t->block_size;
        if (nb > 17 && t->block_size > 32) continue;
        const size_t w_stride = (size_t)nb * t->type_size + 4, a_stride = (size_t)nb * at->type_size + 4;
        uint8_t *wb = xalloc(w_stride * E0_GEMM_ROWS + 4), *ab = xalloc(a_stride * E0_GEMM_TOKENS_MAX + 4);
        uint8_t *w = wb + 4, *a = ab + 4; /* bases off the 32-byte alignment */
        for (int r = 0; r < E0_GEMM_ROWS; r++) fill_blocks(type, w + (size_t)r * w_stride, nb, (int)((r + bc) % FILL_MODES));
        for (int k = 0; k < E0_GEMM_TOKENS_MAX; k++) fill_blocks(t->vec_dot_type, a + (size_t)k * a_stride, nb, (int)((k * 5 + bc) % FILL_MODES));
        for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
            const int nr = row_counts[ri];
            const size_t s_stride = (size_t)nr + 3;
            for (int nt = 1; nt <= kn.gemm_tokens; nt++) {
                float got[(E0_GEMM_ROWS + 3) * E0_GEMM_TOKENS_MAX];
                const float sentinel = -1234.5f;
                for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) got[i] = sentinel;
                kn.gemm(n, nr, w, w_stride, nt, a, a_stride, got, s_stride);
                for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
                    const size_t r = i % s_stride, k = i / s_stride;
                    if (r < (size_t)nr && k < (size_t)nt) {
                        float want;
                        kn.vec_dot(n, &want, w + r * w_stride, a + k * a_stride);
                        CHECKF(!memcmp(&got[i], &want, sizeof want), "%s %s gemm blocks %lld rows %d nt %d: row %zu token %zu: %.9g vs %.9g",
                               e0_simd_name(level), t->name, (long long)nb, nr, nt, r, k, got[i], want);
                    } else CHECKF(got[i] == sentinel, "%s %s gemm wrote outside its outputs (rows %d nt %d)", e0_simd_name(level), t->name, nr, nt);
                }
            }
        }
        free(wb);
        free(ab);
    }
}

static void test_gemm_tiles(void) {
    const int top = e0_simd_level();
    for (int level = E0_SIMD_SCALAR; level <= top; level++)
        for (int type = 0; type < E0_TYPE_COUNT; type++) {
            const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
            if (t && e0_kernels_at(t, level).gemm && fields_of(type)) check_gemm_tiles(type, level);
        }
}

/* e0_matmul_run for n_tok = 1..19 (several gemm groups, full groups of 4 plus remainders), two threads, a row count
 * that is not a multiple of the row block: every output equals the per-token vec_dot. The
 * product runs the kernels of this process's level (run the suite with E0_SIMD=scalar / avx2 for
 * the others; the 4-token kernels of every level are checked above). */
static void check_matmul(e0_pool *pool, int type) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    const e0_vec_dot_fn dot = e0_kernels_of((uint32_t)type)->vec_dot;
    const e0_type_traits *at = e0_type_traits_of((uint32_t)t->vec_dot_type);
    const int64_t nb = 3, n_in = nb * t->block_size, n_out = 37;
    const int max_tok = 2 * E0_GEMM_TOKENS + 3;
    const size_t row_bytes = (size_t)nb * t->type_size, xq_stride = (size_t)nb * at->type_size + 8;
    const int64_t y_stride = n_out + 5;
    uint8_t *w = xalloc(row_bytes * (size_t)n_out), *xq = xalloc(xq_stride * (size_t)max_tok);
    float *y = xalloc(sizeof(float) * (size_t)(y_stride * max_tok)), *want = xalloc(sizeof(float) * (size_t)n_out);
    for (int64_t r = 0; r < n_out; r++) fill_blocks(type, w + (size_t)r * row_bytes, nb, (int)(r % FILL_MODES));
    for (int k = 0; k < max_tok; k++) fill_blocks(t->vec_dot_type, xq + (size_t)k * xq_stride, nb, k % 3 ? FILL_QUANTIZED : FILL_RANDOM);
    for (int n_tok = 1; n_tok <= max_tok; n_tok++) {
        memset(y, 0, sizeof(float) * (size_t)(y_stride * max_tok));
        const e0_matmul job = {.w = w, .type = (uint32_t)type, .n_in = n_in, .n_out = n_out, .row_bytes = row_bytes,
                               .xq = xq, .xq_stride = xq_stride, .n_tok = n_tok, .y = y, .y_stride = y_stride};
        e0_matmul_run(pool, &job, 1);
        for (int k = 0; k < n_tok; k++) {
            for (int64_t r = 0; r < n_out; r++) dot(n_in, &want[r], w + (size_t)r * row_bytes, xq + (size_t)k * xq_stride);
            CHECKF(!memcmp(y + (size_t)k * (size_t)y_stride, want, sizeof(float) * (size_t)n_out), "%s %s n_tok %d token %d",
                   e0_simd_name(e0_simd_level()), t->name, n_tok, k);
        }
    }
    free(w);
    free(xq);
    free(y);
    free(want);
}

static void test_matmul_independent_of_batching(void) {
    e0_pool *pool = e0_pool_new(2);
    CHECK(pool != NULL);
    if (!pool) return;
    static const int types[] = {E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K, E0_TYPE_Q8_0, E0_TYPE_Q4_0, E0_TYPE_IQ3_XXS,
                                E0_TYPE_IQ2_XXS, E0_TYPE_IQ4_XS, E0_TYPE_MXFP4, E0_TYPE_IQ3_S, E0_TYPE_IQ4_NL};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_matmul(pool, types[i]);
    /* the types q4_K and q6_K are kept in at this level (repacked: quant_kx.h, quant_kv.h) */
    if (e0_repack_type(E0_TYPE_Q4_K) != E0_TYPE_Q4_K) check_matmul(pool, (int)e0_repack_type(E0_TYPE_Q4_K));
    if (e0_repack_type(E0_TYPE_Q6_K) != E0_TYPE_Q6_K) check_matmul(pool, (int)e0_repack_type(E0_TYPE_Q6_K));
    e0_pool_free(pool);
}

/* One dispatch of jobs with different types and token counts (like a layer's experts), so the
 * blocks are handed out dynamically across jobs: each output equals its per-token vec_dot. */
static void test_matmul_mixed_jobs(void) {
    e0_pool *pool = e0_pool_new(2);
    CHECK(pool != NULL);
    if (!pool) return;
    enum { NJ = 4, N_OUT = 53, NB = 2, MAX_TOK = 12 };
    static const int types[NJ] = {E0_TYPE_Q4_K, E0_TYPE_Q6_K, E0_TYPE_Q8_0, E0_TYPE_Q4_K};
    static const int n_toks[NJ] = {5, 1, 12, 9};
    e0_matmul jobs[NJ];
    uint8_t *w[NJ], *xq[NJ];
    float *y[NJ];
    for (int j = 0; j < NJ; j++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)types[j]), *at = e0_type_traits_of((uint32_t)t->vec_dot_type);
        const int64_t n_in = (int64_t)(t->block_size == QK_K ? NB : 8 * NB) * t->block_size;
        const size_t row_bytes = e0_row_size((uint32_t)types[j], n_in), xs = e0_row_size((uint32_t)t->vec_dot_type, n_in);
        w[j] = xalloc(row_bytes * N_OUT);
        xq[j] = xalloc(xs * MAX_TOK);
        y[j] = xalloc(sizeof(float) * N_OUT * MAX_TOK);
        for (int r = 0; r < N_OUT; r++) fill_blocks(types[j], w[j] + (size_t)r * row_bytes, n_in / t->block_size, FILL_QUANTIZED);
        for (int k = 0; k < n_toks[j]; k++) fill_blocks(t->vec_dot_type, xq[j] + (size_t)k * xs, n_in / at->block_size, FILL_QUANTIZED);
        jobs[j] = (e0_matmul){.w = w[j], .type = (uint32_t)types[j], .n_in = n_in, .n_out = N_OUT, .row_bytes = row_bytes,
                              .xq = xq[j], .xq_stride = xs, .n_tok = n_toks[j], .y = y[j], .y_stride = N_OUT};
    }
    e0_matmul_run(pool, jobs, NJ);
    for (int j = 0; j < NJ; j++) {
        const e0_vec_dot_fn dot = e0_kernels_of((uint32_t)types[j])->vec_dot;
        for (int k = 0; k < n_toks[j]; k++)
            for (int r = 0; r < N_OUT; r++) {
                float want;
                dot(jobs[j].n_in, &want, w[j] + (size_t)r * jobs[j].row_bytes, xq[j] + (size_t)k * jobs[j].xq_stride);
                CHECKF(!memcmp(&y[j][k * N_OUT + r], &want, sizeof want), "job %d token %d row %d", j, k, r);
            }
        free(w[j]);
        free(xq[j]);
        free(y[j]);
    }
    e0_pool_free(pool);
}

int main(void) {
    RUN(test_vec_dot_4_matches_vec_dot);
    RUN(test_gemm_matches_vec_dot);
    RUN(test_gemm_tiles);
    RUN(test_matmul_independent_of_batching);
    RUN(test_matmul_mixed_jobs);
    return T_DONE();
}
