/* deltanet.c — the hybrid models' own layer pieces (qwen35, qwen35moe, qwen3next; llama.cpp's
 * src/models/qwen35*.cpp, qwen3next.cpp and delta-net-base.cpp define them, ggml-cpu computes them):
 *
 *   - the Gated DeltaNet layer (e0_deltanet_layer), with its per-sequence state: a causal conv1d
 *     window and the delta-rule matrix of every value head (e0_recurrent_*);
 *   - the gated attention of their full-attention layers (wq gives q and a gate per head; the
 *     attention output is multiplied by sigmoid(gate)) and the interleaved multi-section RoPE
 *     of qwen35* (e0_rope_imrope), used by forward.c.
 *
 * One DeltaNet layer, for a chunk of n tokens (xn [n][E] normed input -> out [n][E]):
 *   qkv = attn_qkv xn [n][C]  (C = conv channels = 2*Hk*S + Hv*S: q of Hk key heads, k, v of Hv
 *                              value heads, S = ssm.state_size)
 *   z = attn_gate xn [n][Hv*S];  beta = sigmoid(b), g = softplus(a + dt_bias) * ssm_a [n][Hv]
 *                              (b, a: ssm_beta / ssm_alpha, or interleaved per key head in ssm_ba)
 *   conv: window = [state (K-1 rows); qkv (n rows)] per channel; y[t][c] = sum_k window[t+k][c] *
 *         w[c][k]; silu; the last K-1 window rows become the state
 *   q, k: L2-normalized per head (eps = rms_eps); q scaled by 1/sqrt(S)
 *   per value head h (key head kh = h % Hk for qwen35*, h / (Hv/Hk) for qwen3next), token by
 *   token, with the state M[j][i] (j over S value dims, i over S key dims):
 *         M *= exp(g);  d[j] = (v[j] - M[j].k) * beta;  M[j] += d[j] * k;  o[j] = M[j].q
 *   o: RMSNorm per head (ssm_norm) * silu(z); out = ssm_out o
 * The recurrence is evaluated token by token for prefill and decode alike — the form llama.cpp's
 * CPU backend uses (its fused ggml_gated_delta_net for both; the chunked parallel form is only its
 * fallback graph), so a prefill of N tokens then one decode step gives the same numbers as a prefill
 * of N + 1, and the prefill chunk size does not change the result. Value heads are split across
 * threads (each head's recurrence is one thread's, so results do not depend on the thread count).
 *
 * The state (ctx_impl.h rs): conv [n_recr][K-1][C] and ssm [n_recr][Hv][S][S] floats, allocated
 * beside the KV cache in the E0_MEM_RECURRENT ledger category, zeroed by e0_recurrent_reset (a
 * new sequence). It cannot be rolled back to an earlier position (see e0_ctx_truncate). */
#include <math.h>
#include <string.h>

#include "engine/ctx_impl.h"

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float siluf(float x) { return x / (1.0f + expf(-x)); }
/* ggml's softplus: log(1 + e^x), x itself above 20 */
static inline float softplusf(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* ---- the state ---- */

int64_t e0_recurrent_layers(const e0_hparams *hp) { return hp->hybrid ? hp->n_layer - hp->n_layer_kv : 0; }

int64_t e0_recurrent_conv_dim(const e0_hparams *hp) { return 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner; }

uint64_t e0_recurrent_bytes(const e0_hparams *hp) {
    const uint64_t nr = (uint64_t)e0_recurrent_layers(hp);
    if (!nr) return 0;
    const uint64_t conv = (uint64_t)(hp->ssm_d_conv - 1) * (uint64_t)e0_recurrent_conv_dim(hp);
    const uint64_t ssm = (uint64_t)hp->ssm_dt_rank * (uint64_t)hp->ssm_d_state * (uint64_t)hp->ssm_d_state;
    return nr * (conv + ssm) * sizeof(float);
}

void e0_recurrent_reset(e0_ctx *c) {
    if (c->rs.conv) memset(c->rs.conv, 0, c->rs.bytes_conv);
    if (c->rs.ssm) memset(c->rs.ssm, 0, c->rs.bytes_ssm);
}

/* ---- the delta rule ---- */

typedef struct {
    e0_ctx *c;
    float *ssm;   /* this layer's [Hv][S][S] */
    int n_tok;
} dn_task;

/* Value heads [lo, hi) of the chunk: the recurrence over its tokens, o = dn.o [n][Hv*S]. */
static void delta_worker(void *arg, int ith, int nth) {
    const dn_task *t = arg;
    e0_ctx *c = t->c;
    const e0_hparams *hp = c->hp;
    const int64_t S = hp->ssm_d_state, Hk = hp->ssm_n_group, Hv = hp->ssm_dt_rank, C = c->rs.conv_dim;
    const int64_t rep = Hv / Hk;
    const float scale = 1.0f / sqrtf((float)S);
    float *d = c->rs.delta + (size_t)ith * (size_t)S;
    long lo, hi;
    e0_split((long)Hv, ith, nth, &lo, &hi);
    for (long h = lo; h < hi; h++) {
        const int64_t kh = hp->dn_heads_tiled ? h % Hk : h / rep;
        float *M = t->ssm + (size_t)h * (size_t)(S * S);
        for (int i = 0; i < t->n_tok; i++) {
            const float *row = c->rs.qkv + (size_t)i * (size_t)C; /* conv output, q and k normalized */
            const float *q = row + kh * S, *k = row + Hk * S + kh * S, *v = row + 2 * Hk * S + h * S;
            const float g = expf(c->rs.gdec[(size_t)i * Hv + h]), beta = c->rs.beta[(size_t)i * Hv + h];
            for (int64_t j = 0; j < S * S; j++) M[j] *= g;
            for (int64_t j = 0; j < S; j++) d[j] = (v[j] - e0_dot_f32(S, M + j * S, k)) * beta;
            for (int64_t j = 0; j < S; j++) e0_axpy(S, d[j], k, M + j * S);
            float *o = c->rs.o + (size_t)i * (size_t)hp->ssm_d_inner + (size_t)h * (size_t)S;
            for (int64_t j = 0; j < S; j++) o[j] = e0_dot_f32(S, M + j * S, q) * scale;
        }
    }
}

/* L2 norm of n values in place, as ggml_l2_norm: x / max(||x||, eps). */
static void l2_norm(float *x, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    const float s = 1.0f / fmaxf(sqrtf((float)ss), eps);
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

void e0_deltanet_layer(e0_ctx *c, int il, int n_tok, float *out) {
    const e0_hparams *hp = c->hp;
    const e0_layer *L = &c->m->layers[il];
    const int64_t E = hp->n_embd, S = hp->ssm_d_state, Hk = hp->ssm_n_group, Hv = hp->ssm_dt_rank;
    const int64_t C = c->rs.conv_dim, K = hp->ssm_d_conv, DI = hp->ssm_d_inner;
    const int64_t r = il - e0_hparams_kv_layer(hp, il); /* rank among the DeltaNet layers */
    float *conv_state = c->rs.conv + (size_t)r * (size_t)((K - 1) * C);
    float *ssm = c->rs.ssm + (size_t)r * (size_t)(Hv * S * S);

    /* projections: xn [n][E] -> qkv [n][C], z [n][DI], b/a (or ba) [n][Hv] each */
    e0_matmul_input(c, c->act.xn, n_tok, E);
    e0_matmul jobs[4];
    int nj = 0;
    jobs[nj++] = e0_matmul_job(c, &L->dn_qkv, c->rs.qkv);
    jobs[nj++] = e0_matmul_job(c, &L->dn_gate, c->rs.z);
    if (hp->dn_ba_fused) jobs[nj++] = e0_matmul_job(c, &L->dn_ba, c->rs.ba);
    else {
        jobs[nj++] = e0_matmul_job(c, &L->dn_beta, c->rs.beta);
        jobs[nj++] = e0_matmul_job(c, &L->dn_alpha, c->rs.ba);
    }
    e0_matmul_run(c->threads.cur, jobs, nj);
    (void)E;

    /* beta = sigmoid(b), gdec = softplus(a + dt_bias) * ssm_a [n][Hv]. ssm_ba holds, per key
     * head, its Hv/Hk betas then its Hv/Hk alphas; value head h = kh * rep + j. */
    const int64_t rep = Hv / Hk;
    for (int i = 0; i < n_tok; i++) {
        float *beta = c->rs.beta + (size_t)i * Hv, *g = c->rs.gdec + (size_t)i * Hv;
        for (int64_t h = 0; h < Hv; h++) {
            float b, a;
            if (hp->dn_ba_fused) {
                const float *ba = c->rs.ba + (size_t)i * (size_t)(2 * Hv);
                const int64_t kh = h / rep, j = h % rep;
                b = ba[kh * 2 * rep + j];
                a = ba[kh * 2 * rep + rep + j];
            } else {
                b = beta[h];
                a = c->rs.ba[(size_t)i * Hv + h];
            }
            beta[h] = sigmoidf(b);
            g[h] = softplusf(a + L->dn_dt[h]) * L->dn_a[h];
        }
    }

    /* causal conv1d over [state; qkv] per channel, then silu; the window's last K-1 rows are the
     * next state. win [(K-1) + n][C]; the result overwrites qkv [n][C]. */
    float *win = c->rs.win;
    memcpy(win, conv_state, (size_t)((K - 1) * C) * sizeof(float));
    memcpy(win + (K - 1) * C, c->rs.qkv, (size_t)n_tok * (size_t)C * sizeof(float));
    for (int i = 0; i < n_tok; i++) {
        float *y = c->rs.qkv + (size_t)i * (size_t)C;
        for (int64_t ch = 0; ch < C; ch++) {
            const float *w = L->dn_conv + ch * K;
            float s = 0.0f;
            for (int64_t k = 0; k < K; k++) s += win[(size_t)(i + k) * (size_t)C + (size_t)ch] * w[k];
            y[ch] = siluf(s);
        }
    }
    memcpy(conv_state, win + (size_t)n_tok * (size_t)C, (size_t)((K - 1) * C) * sizeof(float));

    /* q, k: L2 norm per key head */
    for (int i = 0; i < n_tok; i++) {
        float *row = c->rs.qkv + (size_t)i * (size_t)C;
        for (int64_t h = 0; h < 2 * Hk; h++) l2_norm(row + h * S, S, hp->rms_eps);
    }

    /* the delta rule, value heads across threads: -> o [n][DI] */
    dn_task t = {.c = c, .ssm = ssm, .n_tok = n_tok};
    e0_pool_run(c->threads.cur, delta_worker, &t);

    /* o = rmsnorm(o per head) * ssm_norm * silu(z); out [n][E] = ssm_out o */
    for (int i = 0; i < n_tok; i++) {
        float *o = c->rs.o + (size_t)i * (size_t)DI;
        const float *z = c->rs.z + (size_t)i * (size_t)DI;
        for (int64_t h = 0; h < Hv; h++) e0_rmsnorm(o + h * S, o + h * S, L->dn_norm, S, hp->rms_eps);
        for (int64_t j = 0; j < DI; j++) o[j] *= siluf(z[j]);
    }
    e0_matmul_input(c, c->rs.o, n_tok, DI);
    e0_matmul_weight(c, &L->dn_out, out);
}

/* ---- gated attention and RoPE of the hybrids' attention layers ---- */

void e0_gated_q_split(const e0_hparams *hp, const float *qg, int n_tok, float *q) {
    const int64_t hd = hp->head_dim, qd = hp->n_head * hd;
    for (int i = 0; i < n_tok; i++)
        for (int64_t h = 0; h < hp->n_head; h++)
            memcpy(q + (size_t)i * qd + h * hd, qg + (size_t)i * 2 * qd + h * 2 * hd, (size_t)hd * sizeof(float));
}

void e0_gated_apply(const e0_hparams *hp, const float *qg, int n_tok, float *att) {
    const int64_t hd = hp->head_dim, qd = hp->n_head * hd;
    for (int i = 0; i < n_tok; i++)
        for (int64_t h = 0; h < hp->n_head; h++) {
            const float *g = qg + (size_t)i * 2 * qd + h * 2 * hd + hd;
            float *a = att + (size_t)i * qd + h * hd;
            for (int64_t d = 0; d < hd; d++) a[d] *= sigmoidf(g[d]);
        }
}

/* Text positions: sections t, h, w all take pos, so a pair rotates as NEOX does unless llama.cpp's
 * interleaving gives it the fourth section (position 0: cos 1, sin 0, left as it is). Pair p of
 * the n_rot/2: sector = p % (sum of sections); it is t, h or w when sector % 3 is 0, 1, 2 and
 * sector < 3 * that section's size. */
void e0_rope_imrope(float *x, int64_t n_rot, int pos, float base, const int32_t sections[4]) {
    const int sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int64_t i = 0; i < n_rot; i += 2) {
        const int sector = (int)((i / 2) % sect_dims);
        const int m3 = sector % 3;
        const bool rotated = sector < 3 * sections[m3];
        const float th = theta;
        theta *= theta_scale;
        if (!rotated) continue;
        const float c = cosf(th), s = sinf(th);
        const int64_t i0 = i / 2, i1 = i / 2 + n_rot / 2;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x0 * s + x1 * c;
    }
}
