/* quant_impl.h — internal: how the per-type kernel files plug into the type table. */
#ifndef E0_QUANT_IMPL_H
#define E0_QUANT_IMPL_H

#include "quant/quant.h"

/* Each fills the function-pointer fields (to_float, from_float_ref, from_float, vec_dot_ref,
 * vec_dot_avx2, vec_dot_avx512) of its own rows of the table. */
void e0_quant_register_basic(e0_type_traits *table); /* quant_basic.c: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 */
void e0_quant_register_k(e0_type_traits *table);     /* quant_k.c: Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K */

/* Decode reads each weight row from memory exactly once, and the hardware prefetcher alone left
 * a third of the bandwidth unused here: kernels ask for the block `PREFETCH_BLOCKS` ahead (about
 * one 2048-wide row of K-quant blocks) before working on the current one. Measured with
 * `edge0-bench ab`: +36% decode on a Q4_K model (docs/perf.md). Prefetches never fault. */
#define E0_PREFETCH_BLOCKS 8
static inline void e0_prefetch_bytes(const void *p, unsigned bytes) {
    for (unsigned o = 0; o < bytes; o += 64) __builtin_prefetch((const char *)p + o, 0, 3);
}

#endif
