/* cpu.h — the one CPU-feature probe. Every decision about which SIMD code may run starts here:
 * the quant type table picks its kernels from e0_cpu_features() (through e0_simd_level()), and
 * nothing else asks the CPU.
 *
 * The E0_SIMD environment variable turns features off for tests and comparisons: "scalar" turns
 * off every SIMD feature, "avx2" the AVX-512 ones; any other value is ignored. */
#ifndef E0_CPU_H
#define E0_CPU_H

enum e0_cpu_feature {
    E0_CPU_AVX2 = 1u << 0,
    E0_CPU_FMA = 1u << 1,
    E0_CPU_F16C = 1u << 2,
    E0_CPU_AVX512F = 1u << 3,
    E0_CPU_AVX512BW = 1u << 4,
    E0_CPU_AVX512VL = 1u << 5,
    E0_CPU_AVX512DQ = 1u << 6,
    E0_CPU_AVX512VNNI = 1u << 7,
};
#define E0_CPU_AVX512_ALL \
    (E0_CPU_AVX512F | E0_CPU_AVX512BW | E0_CPU_AVX512VL | E0_CPU_AVX512DQ | E0_CPU_AVX512VNNI)

/* The features of this CPU (E0_CPU_* bits) less those E0_SIMD turns off. Probed on the first
 * call from any thread, then the same value for the life of the process. */
unsigned e0_cpu_features(void);
/* The same without E0_SIMD: what the hardware has (tests that compare with F16C instructions). */
unsigned e0_cpu_features_hw(void);
/* What E0_SIMD=`env` leaves of `features` (env may be NULL); e0_cpu_features() applies it. */
unsigned e0_cpu_features_capped(unsigned features, const char *env);

#endif
