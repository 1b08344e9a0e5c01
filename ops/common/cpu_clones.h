// ONNX_AMP_CPU_CLONES builds a function three times, for AVX-512, for AVX2 and for the
// baseline x86-64, and the loader picks one by the CPU (GCC's target_clones): the loops
// the compiler vectorises run on the widest vectors the CPU has, in a binary that runs on
// any x86-64. A file that uses it is compiled with -ffp-contract=off (its CMakeLists), so
// that no clone fuses a multiply and an add into one rounding the baseline one does not
// have: every clone gives the same bits.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNX_AMP_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ONNX_AMP_CPU_CLONES
#endif
