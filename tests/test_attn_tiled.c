/* test_attn_tiled.c — the tiled prefill attention (src/engine/attn_tiled.c, attn_tiled_avx2.c):
 *   - its scalar kernels and AVX2 kernels against a per-position reference in double precision
 *     (the per-position path's arithmetic: q rounded through the key type's vec_dot_type, keys
 *     and values read in their cache type; one softmax per query over all its keys), on random
 *     q / k / v, odd chunk lengths and positions, GQA ratios 1..12, sliding windows with rings,
 *     sinks, every KV cache type (f32, f16, bf16, q8_0, q4_0), the cache head-major (the
 *     engine's layout) or position-major;
 *   - the AVX2 exp against libm's expf; the AVX2 KV conversions (keys transposed, rows) against
 *     the type table's to_float, bit for bit, every KV type;
 *   - the engine: logits of synth models (qwen3 with GQA, gpt-oss with sliding windows and sinks)
 *     from the tiled path against the per-position path (E0_ATTN=pos), every KV type.
 * Tolerances: the output of a head is a convex combination of value rows, so errors are measured
 * against max |v|. The tiled path changes only the summation order (blocks of 64 keys, the online
 * rescaling) and exp (AVX2: a polynomial within 2 ulp): F32 rounding of sums over <= 300 keys and
 * 128-long dots, measured at <= 8.5e-7 max|v| here (the worst is printed); the bound is 4e-6
 * (about 32 F32 ulps of max|v|: the score error |q||k| * hd * 2^-24 passes through exp, and the
 * weights' sum over hundreds of keys adds its own rounding). The per-position path itself differs
 * from the reference by more for F16 / BF16 values (it rounds the weights to the value type:
 * 2^-12 relative each), which is why the comparison is against the exact reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attn_tiled.h"
#include "engine/ctx_impl.h"
#include "quant/quant.h"
#include "t.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

/* per-position reference of one chunk (double), out [n_tok][n_head * hd] */
static void reference(const e0_attn_args *a, double *out) {
    const int64_t hd = a->hd, G = a->n_head / a->n_head_kv, q_dim = a->n_head * hd;
    const uint32_t q_type = (uint32_t)e0_type_traits_of(a->type_k)->vec_dot_type;
    float *qr = malloc((size_t)hd * 4), *kr = malloc((size_t)hd * 4), *vr = malloc((size_t)hd * 4);
    uint8_t *qb = malloc((size_t)hd * 4 + 64);
    int n_keys_max = a->pos0 + a->n_tok;
    double *s = malloc((size_t)n_keys_max * sizeof *s);
    for (int t = 0; t < a->n_tok; t++) {
        const int p = a->pos0 + t;
        const int first = a->n_swa > 0 && p - a->n_swa + 1 > 0 ? (int)(p - a->n_swa + 1) : 0;
        for (int64_t h = 0; h < a->n_head; h++) {
            const int64_t u = h / G;
            const float *q = a->q + (size_t)t * q_dim + (size_t)h * hd;
            if (a->type_k == E0_TYPE_F16) /* the F16 / BF16 dot products round q to their type */
                for (int64_t i = 0; i < hd; i++) qr[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(q[i]));
            else if (a->type_k == E0_TYPE_BF16)
                for (int64_t i = 0; i < hd; i++) qr[i] = e0_bf16_to_fp32(e0_fp32_to_bf16(q[i]));
            else if (q_type == E0_TYPE_F32) memcpy(qr, q, (size_t)hd * 4);
            else {
                e0_kernels_of(q_type)->from_float(q, qb, hd); /* the path's quantizer of q */
                e0_type_traits_of(q_type)->to_float(qb, qr, hd);
            }
            double mx = a->sinks ? a->sinks[h] : -INFINITY;
            for (int j = first; j <= p; j++) {
                size_t row = a->ring ? (size_t)(j % a->ring) : (size_t)j;
                e0_type_traits_of(a->type_k)->to_float(a->k + (size_t)u * a->kvh_k + row * a->pos_k, kr, hd);
                double d = 0;
                for (int64_t i = 0; i < hd; i++) d += (double)qr[i] * kr[i];
                s[j] = d * a->scale;
                if (s[j] > mx) mx = s[j];
            }
            double sum = a->sinks ? exp(a->sinks[h] - mx) : 0;
            for (int j = first; j <= p; j++) sum += s[j] = exp(s[j] - mx);
            double *o = out + (size_t)t * q_dim + (size_t)h * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = 0;
            for (int j = first; j <= p; j++) {
                size_t row = a->ring ? (size_t)(j % a->ring) : (size_t)j;
                e0_type_traits_of(a->type_v)->to_float(a->v + (size_t)u * a->kvh_v + row * a->pos_v, vr, hd);
                /* F16 / BF16 values: the weight rounded to their type (as both paths do) */
                float w = (float)(s[j] / sum);
                e0_kv_round(a->type_v, &w, 1);
                for (int64_t i = 0; i < hd; i++) o[i] += (double)w * vr[i];
            }
        }
    }
    free(qr), free(kr), free(vr), free(qb), free(s);
}

typedef struct {
    int64_t hd, n_head, n_head_kv;
    int n_tok, pos0, ring;
    int64_t n_swa;
    bool sinks;
} shape;

/* worst |tiled - reference| / max|v| over the chunk, for one simd choice; the cache head-major
 * (the engine's: a head's slots contiguous) or position-major (a position's heads contiguous) */
static double run_case(const shape *sh, uint32_t tk, uint32_t tv, bool simd, double qscale, bool head_major) {
    const int64_t hd = sh->hd, kv_dim = sh->n_head_kv * hd, q_dim = sh->n_head * hd;
    const int n_pos = sh->pos0 + sh->n_tok, rows = sh->ring ? sh->ring : n_pos;
    e0_attn_args a = {.hd = hd, .n_head = sh->n_head, .n_head_kv = sh->n_head_kv, .n_tok = sh->n_tok, .pos0 = sh->pos0,
                      .type_k = tk, .type_v = tv, .ring = sh->ring, .n_swa = sh->n_swa, .scale = 1.0f / sqrtf((float)hd), .n_ctx = n_pos};
    a.head_k = e0_row_size(tk, hd);
    a.head_v = e0_row_size(tv, hd);
    a.pos_k = head_major ? a.head_k : (size_t)sh->n_head_kv * a.head_k;
    a.pos_v = head_major ? a.head_v : (size_t)sh->n_head_kv * a.head_v;
    a.kvh_k = head_major ? (size_t)rows * a.head_k : a.head_k;
    a.kvh_v = head_major ? (size_t)rows * a.head_v : a.head_v;
    uint8_t *k = calloc((size_t)rows * (size_t)sh->n_head_kv, a.head_k), *v = calloc((size_t)rows * (size_t)sh->n_head_kv, a.head_v);
    float *q = malloc((size_t)sh->n_tok * q_dim * 4), *out = malloc((size_t)sh->n_tok * q_dim * 4);
    float *x = malloc((size_t)kv_dim * 4), *sinks = malloc((size_t)sh->n_head * 4);
    double *ref = malloc((size_t)sh->n_tok * q_dim * sizeof *ref);
    double vmax = 0;
    for (int p = 0; p < n_pos; p++) { /* a ring keeps the last `rows` positions, as the cache does */
        size_t row = sh->ring ? (size_t)(p % sh->ring) : (size_t)p;
        for (int64_t i = 0; i < kv_dim; i++) x[i] = frand();
        for (int64_t u = 0; u < sh->n_head_kv; u++) e0_kv_store(tk, x + u * hd, hd, k + (size_t)u * a.kvh_k + row * a.pos_k);
        for (int64_t i = 0; i < kv_dim; i++) x[i] = frand(), vmax = fmax(vmax, fabs(x[i]));
        for (int64_t u = 0; u < sh->n_head_kv; u++) e0_kv_store(tv, x + u * hd, hd, v + (size_t)u * a.kvh_v + row * a.pos_v);
    }
    for (int64_t i = 0; i < sh->n_tok * q_dim; i++) q[i] = (float)(frand() * qscale);
    for (int64_t h = 0; h < sh->n_head; h++) sinks[h] = frand() * 2;
    a.q = q, a.out = out, a.k = k, a.v = v, a.sinks = sh->sinks ? sinks : NULL;
    reference(&a, ref);
    size_t bytes = e0_attn_tiled_scratch(hd, sh->n_head / sh->n_head_kv, tk, tv, n_pos);
    void *scratch = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    memset(out, 0xff, (size_t)sh->n_tok * q_dim * 4); /* NaN: every element must be written */
    long n_items = e0_attn_tiled_items(&a);
    for (long it = n_items - 1; it >= 0; it--) e0_attn_tiled_item(&a, it, scratch, simd);
    double worst = 0;
    for (int64_t i = 0; i < sh->n_tok * q_dim; i++) {
        double d = fabs(out[i] - ref[i]) / vmax;
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
    free(k), free(v), free(q), free(out), free(x), free(sinks), free(ref), free(scratch);
    return worst;
}

static void test_against_reference(void) {
    const uint32_t types[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0};
    const shape shapes[] = {
        {.hd = 128, .n_head = 32, .n_head_kv = 4, .n_tok = 37, .pos0 = 0},        /* Qwen3-30B-A3B: G 8 */
        {.hd = 128, .n_head = 32, .n_head_kv = 4, .n_tok = 131, .pos0 = 70},      /* a second chunk */
        {.hd = 64, .n_head = 4, .n_head_kv = 2, .n_tok = 200, .pos0 = 3},         /* G 2: blocks of 32 tokens */
        {.hd = 64, .n_head = 3, .n_head_kv = 3, .n_tok = 71, .pos0 = 0},          /* MHA */
        {.hd = 96, .n_head = 12, .n_head_kv = 1, .n_tok = 9, .pos0 = 250},        /* G 12, hd % 16 = 0 */
        {.hd = 64, .n_head = 8, .n_head_kv = 2, .n_tok = 45, .pos0 = 100, .ring = 60, .n_swa = 16, .sinks = true}, /* gpt-oss */
        {.hd = 64, .n_head = 8, .n_head_kv = 2, .n_tok = 77, .pos0 = 0, .n_swa = 128, .sinks = true},
        {.hd = 32, .n_head = 2, .n_head_kv = 1, .n_tok = 5, .pos0 = 1, .n_swa = 1},   /* a window of one key */
        {.hd = 40, .n_head = 4, .n_head_kv = 4, .n_tok = 19, .pos0 = 7},          /* hd % 16 = 8 (f-types only) */
        {.hd = 36, .n_head = 2, .n_head_kv = 1, .n_tok = 11, .pos0 = 2},          /* hd % 8 != 0: scalar kernels */
    };
    const bool have_avx2 = e0_simd_level() >= E0_SIMD_AVX2;
    /* F16 / BF16 values: both sides round each weight to the value type, and a weight within
     * F32 rounding of a boundary may round the other way: one ulp of the weight (at most 2^-10 of
     * it in F16, 2^-7 in BF16; the weights sum to 1), so the bound adds that times max|v| */
    const double vround[3] = {0, 1.0 / 1024, 1.0 / 128};
    double worst[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t ik = 0; ik < 5; ik++)
            for (size_t iv = 0; iv < 5; iv++) {
                if (ik != iv && s > 0) continue; /* mixed K / V types on the first shape only */
                const int64_t bs_k = e0_type_traits_of(types[ik])->block_size, bs_v = e0_type_traits_of(types[iv])->block_size;
                if (shapes[s].hd % bs_k || shapes[s].hd % bs_v) continue;
                for (int simd = 0; simd <= (int)have_avx2; simd++) {
                    /* q scaled up: sharper softmaxes (scores of +-10), where exp and the rescaling matter */
                    for (int sc = 0; sc < (ik == iv ? 2 : 1); sc++) {
                        double w = run_case(&shapes[s], types[ik], types[iv], simd, sc ? 3.0 : 1.0, (s + ik + sc) % 2 == 0);
                        const int f = types[iv] == E0_TYPE_F16 ? 1 : types[iv] == E0_TYPE_BF16 ? 2 : 0;
                        if (w > worst[f][simd]) worst[f][simd] = w;
                        CHECKF(w <= 4e-6 + vround[f], "shape %zu K %s V %s %s q*%d: |tiled - reference| / max|v| = %.3g", s,
                               e0_kv_type_name(types[ik]), e0_kv_type_name(types[iv]), simd ? "avx2" : "scalar", sc ? 3 : 1, w);
                    }
                }
            }
    const char *vn[3] = {"f32 / q8_0 / q4_0", "f16", "bf16"};
    for (int f = 0; f < 3; f++)
        printf("  V %s: worst |tiled - reference| / max|v|: scalar %.3g, avx2 %.3g%s (bound %.3g)\n", vn[f], worst[f][0],
               worst[f][1], have_avx2 ? "" : " (no AVX2 here)", 4e-6 + vround[f]);
}

static void test_exp(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("no AVX2 + FMA on this CPU (or E0_SIMD caps it)");
    enum { N = 20011 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = -100.0f + 110.0f * (float)i / N;
    x[0] = -INFINITY;
    e0_attn_expf_avx2(x, y, N);
    CHECK(y[0] == 0);
    double worst = 0;
    for (int i = 1; i < N; i++) {
        float e = expf(x[i]);
        if (x[i] < -87.3f) {
            CHECKF(y[i] == 0 || fabsf(y[i] - e) <= 1e-37f, "exp(%g) = %g, expf %g", x[i], y[i], e);
            continue;
        }
        double rel = fabs((double)y[i] - e) / e;
        if (rel > worst) worst = rel;
    }
    printf("  worst relative error of the AVX2 exp on [-87.3, 10]: %.3g (2 ulp = 2.4e-7)\n", worst);
    CHECKF(worst <= 2.4e-7, "%g", worst);
    /* the exp-and-sum of a row */
    float r[24], sum = 0;
    for (int i = 0; i < 24; i++) r[i] = (i == 5) ? -INFINITY : frand() * 5;
    float r2[24];
    memcpy(r2, r, sizeof r);
    float s = e0_attn_exp_sum_avx2(r, 24, 1.5f);
    for (int i = 0; i < 24; i++) {
        float e = expf(r2[i] - 1.5f);
        sum += e;
        CHECKF(fabsf(r[i] - e) <= 2.4e-7f * e, "%d: %g vs %g", i, r[i], e);
    }
    CHECKF(fabsf(s - sum) <= 1e-6f * sum, "%g vs %g", s, sum);
}

/* The causal mask and row max: AVX2 against the scalar loop, bit for bit on the masked row; the
 * max equal (a zero max may differ only in its sign), over windows inside, across and outside the
 * row, with -inf, NaN and zero scores. */
static void test_mask_max(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("no AVX2 + FMA on this CPU (or E0_SIMD caps it)");
    enum { N = 64 };
    int cases = 0;
    for (int n = 8; n <= N; n += 8)
        for (int lo = -9; lo <= n + 1; lo += 3)
            for (int hi = lo - 2; hi <= n + 9; hi += 5) {
                float a[N], b[N];
                for (int j = 0; j < n; j++) a[j] = frand() * 10;
                if (n > 8) a[3] = -INFINITY, a[5] = NAN, a[7] = 0.0f, a[8] = -0.0f;
                memcpy(b, a, sizeof a);
                const float ms = e0_attn_mask_max(a, n, lo, hi), mv = e0_attn_mask_max_avx2(b, n, lo, hi);
                CHECKF(ms == mv || (isinf(ms) && isinf(mv) && ms < 0 && mv < 0), "n %d lo %d hi %d: max %g vs %g", n, lo, hi, ms, mv);
                CHECKF(!memcmp(a, b, (size_t)n * sizeof(float)), "n %d lo %d hi %d: masked rows differ", n, lo, hi);
                cases++;
            }
    CHECK(cases > 100);
}

/* The weights' scaling (and F16 rounding) of the two-pass path: AVX2 against x * c and the scalar
 * F16 round trip, bit for bit, odd lengths included. */
static void test_scale(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("no AVX2 + FMA on this CPU (or E0_SIMD caps it)");
    enum { N = 203 };
    float x[N], y[N], want[N];
    for (int r = 0; r < 2; r++)
        for (int n = 1; n <= N; n += 13) {
            const float c = 1.0f / (3.0f + (float)n);
            for (int i = 0; i < n; i++) x[i] = frand() * (i % 3 ? 1.0f : 1e-4f);
            if (n > 2) x[1] = 0.0f, x[2] = -0.0f;
            memcpy(y, x, sizeof x);
            for (int i = 0; i < n; i++) {
                want[i] = x[i] * c;
                if (r) want[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(want[i]));
            }
            e0_attn_scale_avx2(y, n, c, r == 1);
            CHECKF(!memcmp(y, want, (size_t)n * sizeof(float)), "n %d round %d: differs", n, r);
        }
}

/* The AVX2 KV conversions (e0_kv_load's, which fill the tiled path's key and value blocks)
 * against the type table's to_float, bit for bit, for every KV type, with zero, negative, large
 * and tiny block scales. */
static void test_kv_convert(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("no AVX2 + FMA on this CPU (or E0_SIMD caps it)");
    enum { HD = 128, NROW = 64 };
    const uint32_t types[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0};
    static uint8_t heads[NROW][HD * 4];
    static float row[HD], got[HD];
    int checked = 0;
    for (size_t it = 0; it < sizeof types / sizeof *types; it++) {
        const e0_type_traits *tr = e0_type_traits_of(types[it]);
        for (int j = 0; j < NROW; j++) {
            for (int d = 0; d < HD; d++) row[d] = frand() * (j % 5 == 1 ? 6e4f : j % 5 == 2 ? 1e-6f : 3.0f);
            if (j % 7 == 3) memset(row, 0, sizeof row);
            tr->from_float_ref(row, heads[j], HD);
        }
        for (int j = 0; j < NROW; j++) {
            tr->to_float(heads[j], row, HD);
            memset(got, 0x7f, sizeof got);
            CHECKF(e0_kv_to_f32_avx2(types[it], heads[j], got, HD), "%s: not converted", tr->name);
            CHECKF(!memcmp(got, row, sizeof row), "%s row %d differs", tr->name, j);
            checked++;
        }
    }
    CHECK(checked == 5 * NROW);
    /* lengths and types it does not take are left to the scalar conversion */
    CHECK(!e0_kv_to_f32_avx2(E0_TYPE_Q8_0, heads[0], got, 40));
    CHECK(!e0_kv_to_f32_avx2(E0_TYPE_Q4_0, heads[0], got, 48));
    CHECK(!e0_kv_to_f32_avx2(E0_TYPE_Q4_1, heads[0], got, 64));
}

/* The AVX-512 products against the AVX2 ones, bit for bit, and the scores against their
 * definition (one FMA chain over d, then the scale: fmaf in the same order): every row count of a
 * tile (1 .. 40: the 16-row groups, an 8-row tail and odd rows), key and head widths of every tail
 * (8, 16, 24 past a multiple of 32), outputs at a stride with sentinels past the columns each
 * kernel may write. */
static void test_products(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("no AVX2 + FMA on this CPU (or E0_SIMD caps it)");
    const bool z = e0_simd_level() >= E0_SIMD_AVX512;
    enum { RMAX = 40, LDQ = 48, KMAX = 88, HMAX = 88, LDS = KMAX + 8 };
    static float Q[RMAX * HMAX], QT[HMAX * LDQ], K[KMAX * HMAX], V[KMAX * HMAX], S1[RMAX * LDS], S2[RMAX * LDS],
        O1[RMAX * HMAX], O2[RMAX * HMAX];
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) K[i] = frand() * (i % 7 ? 1.0f : 1e3f);
    for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) V[i] = frand();
    int cases = 0, wrong = 0;
    for (int nr = 1; nr <= RMAX; nr += nr < 18 ? 1 : 7)
        for (int nk8 = 8; nk8 <= KMAX; nk8 += 8)
            for (int64_t hd = 8; hd <= HMAX; hd += 8 * (1 + (nk8 % 24 == 0))) {
                for (int r = 0; r < RMAX; r++)
                    for (int64_t d = 0; d < hd; d++) Q[r * hd + d] = QT[d * LDQ + r] = frand();
                for (int i = 0; i < RMAX * LDS; i++) S1[i] = S2[i] = -7.0f;
                e0_attn_scores_avx2(QT, LDQ, nr, hd, K, nk8, 0.125f, S1, LDS);
                for (int r = 0; r < RMAX; r++)
                    for (int j = 0; j < LDS; j++) {
                        float want = -7.0f;
                        if (r < nr && j < nk8) {
                            want = 0;
                            for (int64_t d = 0; d < hd; d++) want = fmaf(Q[r * hd + d], K[j * hd + d], want);
                            want *= 0.125f;
                        }
                        wrong += memcmp(&want, &S1[r * LDS + j], sizeof want) != 0;
                    }
                if (z) {
                    e0_attn_scores_avx512(QT, LDQ, nr, hd, K, nk8, 0.125f, S2, LDS);
                    CHECKF(!memcmp(S1, S2, sizeof S1), "scores nr %d nk8 %d hd %lld differ", nr, nk8, (long long)hd);
                    for (int i = 0; i < RMAX * HMAX; i++) O1[i] = O2[i] = (float)(i % 5) - 2.0f;
                    e0_attn_pv_avx2(S1, nr, LDS, nk8, V, hd, O1);
                    e0_attn_pv_avx512(S1, nr, LDS, nk8, V, hd, O2);
                    CHECKF(!memcmp(O1, O2, sizeof O1), "pv nr %d nk8 %d hd %lld differ", nr, nk8, (long long)hd);
                }
                cases++;
            }
    CHECKF(wrong == 0, "%d scores differ from the FMA chain", wrong);
    CHECK(cases > 1000);
}

/* ---- the engine: tiled against per-position (E0_ATTN=pos) ---- */

/* Logits of 157 tokens (chunks of 64: three chunks, the last one odd) with both paths, every KV
 * type. F32 KV: only the summation order differs, bound 1e-5 of max |logit| (measured ~5e-7).
 * Other types: a cache in a rounded type re-rounds the next layer's k / v, where a change of 1e-7
 * may move a value across a rounding step (and F16 / BF16 weights may round the other way):
 * bound 1e-3 (measured <= 1.8e-4). */
static void test_engine(void) {
    const char *archs[][2] = {{"qwen3", "--n-head 8 --n-head-kv 2 --n-layer 2 --seed 3"},
                              {"gpt-oss", "--n-swa 16 --swa-period 2 --seed 4"}};
    const char *kv[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
    char model[600], a[600], b[600], cmd[8192], toks[2048];
    snprintf(a, sizeof a, "%s/attn-tiled-a.bin", t_build());
    snprintf(b, sizeof b, "%s/attn-tiled-b.bin", t_build());
    size_t o = 0;
    for (int i = 0; i < 157; i++) o += (size_t)snprintf(toks + o, sizeof toks - o, "%s%d", i ? "," : "", (i * 37 + 5) % 500 + 3);
    for (int m = 0; m < 2; m++) {
        snprintf(model, sizeof model, "%s/attn-tiled-%s.gguf", t_build(), archs[m][0]);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch %s --type f32 %s --out '%s' >/dev/null 2>&1", t_build(),
                 archs[m][0], archs[m][1], model);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
        for (int k = 0; k < 5; k++) {
            const char *env[2] = {"E0_ATTN=pos ", ""};
            const char *out[2] = {a, b};
            for (int p = 0; p < 2; p++) {
                snprintf(cmd, sizeof cmd, "%s%s/bin/edge0-infer logits -m '%s' --tokens %s --out '%s' -ctk %s -ctv %s -b 64 -t 2",
                         env[p], t_build(), model, toks, out[p], kv[k], kv[k]);
                CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            }
            size_t na = 0, nb = 0;
            float *x = t_read_file(a, &na), *y = t_read_file(b, &nb);
            na /= sizeof(float), nb /= sizeof(float);
            CHECKF(na && na == nb && na % 157 == 0, "%s %s: %zu and %zu logits", archs[m][0], kv[k], na, nb);
            if (na && na == nb) {
                double mx = 0, d = 0;
                for (size_t i = 0; i < na; i++) mx = fmax(mx, fabs(x[i])), d = fmax(d, fabs((double)x[i] - y[i]));
                if (!(d <= d)) d = INFINITY;
                const double bound = k == 0 ? 1e-5 : 1e-3;
                printf("  %s KV %s: max |tiled - per-position| / max |logit| = %.3g (bound %g)\n", archs[m][0], kv[k], d / mx, bound);
                CHECKF(d <= bound * mx, "%s KV %s: %g", archs[m][0], kv[k], d / mx);
            }
            free(x), free(y);
        }
        unlink(model);
    }
    unlink(a), unlink(b);
}

int main(void) {
    RUN(test_against_reference);
    RUN(test_exp);
    RUN(test_mask_max);
    RUN(test_scale);
    RUN(test_kv_convert);
    RUN(test_products);
    RUN(test_engine);
    return T_DONE();
}
