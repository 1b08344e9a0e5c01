// ONNX_AMP_CPU_CLONES builds a function three times, for AVX-512, for x86-64-v3 (AVX2
// with FMA and F16C: every AVX2 CPU made) and for the baseline x86-64, and the loader
// picks one by the CPU (GCC's target_clones): the loops the compiler vectorises run on the
// widest vectors the CPU has, in a binary that runs on any x86-64. A file that uses it is
// compiled with -ffp-contract=off (its CMakeLists), so that no clone fuses a multiply and
// an add into one rounding the baseline one does not have: every clone gives the same
// bits. Fused multiply-adds are written out where wanted (MulAddLanes in float_lanes.h),
// and are then single instructions in the AVX-512 and x86-64-v3 clones and calls to fmaf
// in the baseline one: the same bits, slowly, on CPUs older than AVX2.
#pragma once

#include <string>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONNX_AMP_CPU_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#define ONNX_AMP_CPU_CLONES_BUILT 1
#else
#define ONNX_AMP_CPU_CLONES
#define ONNX_AMP_CPU_CLONES_BUILT 0
#endif

namespace onnx_amp {

// The clone the loader picks on this CPU, for `onnx-amp --version`: the check GCC's
// resolver makes (__builtin_cpu_supports), read the same way.
std::string DescribeCpuClones();

}  // namespace onnx_amp
