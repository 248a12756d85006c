/* quant_k.c — kernels for the K-quants Q2_K..Q6_K and Q8_K. (to be written) */
#include "quant_impl.h"

void e0_quant_register_k(e0_type_traits *table) { (void)table; }
