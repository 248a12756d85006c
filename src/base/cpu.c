/* cpu.c — the CPU-feature probe (see cpu.h): CPUID through the compiler's __builtin_cpu_*,
 * run once under pthread_once. */
#include "base/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* clang before 16 rejects "f16c" in __builtin_cpu_supports; every AVX2 CPU has F16C. */
#if defined(__clang__) && __clang_major__ < 16
#define E0_CPU_HAS_F16C() __builtin_cpu_supports("avx2")
#else
#define E0_CPU_HAS_F16C() __builtin_cpu_supports("f16c")
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static unsigned hw_features, features;

static void probe(void) {
    unsigned f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init(); /* __builtin_cpu_supports takes string literals only: one call per flag */
    if (__builtin_cpu_supports("avx2")) f |= E0_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= E0_CPU_FMA;
    if (E0_CPU_HAS_F16C()) f |= E0_CPU_F16C;
    if (__builtin_cpu_supports("avx512f")) f |= E0_CPU_AVX512F;
    if (__builtin_cpu_supports("avx512bw")) f |= E0_CPU_AVX512BW;
    if (__builtin_cpu_supports("avx512vl")) f |= E0_CPU_AVX512VL;
    if (__builtin_cpu_supports("avx512dq")) f |= E0_CPU_AVX512DQ;
    if (__builtin_cpu_supports("avx512vnni")) f |= E0_CPU_AVX512VNNI;
#endif
    hw_features = f;
    features = e0_cpu_features_capped(f, getenv("E0_SIMD"));
}

unsigned e0_cpu_features_capped(unsigned f, const char *env) {
    if (env && !strcmp(env, "scalar")) return 0;
    if (env && !strcmp(env, "avx2")) return f & ~(unsigned)E0_CPU_AVX512_ALL;
    return f;
}

unsigned e0_cpu_features(void) {
    pthread_once(&probe_once, probe);
    return features;
}

unsigned e0_cpu_features_hw(void) {
    pthread_once(&probe_once, probe);
    return hw_features;
}
