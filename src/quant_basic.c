/* quant_basic.c — kernels for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1. (to be written) */
#include "quant_impl.h"

void e0_quant_register_basic(e0_type_traits *table) { (void)table; }
