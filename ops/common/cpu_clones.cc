#include "ops/common/cpu_clones.h"

namespace onnx_amp {

std::string DescribeCpuClones() {
  const std::string loops = "element-wise, softmax and normalisation loops: ";
#if ONNX_AMP_CPU_CLONES_BUILT
  if (__builtin_cpu_supports("avx512f")) return loops + "avx512 clone";
  if (__builtin_cpu_supports("x86-64-v3")) return loops + "x86-64-v3 clone (AVX2 with FMA)";
  return loops + "baseline x86-64 clone (no x86-64-v3: the polynomials' fused multiply-adds are fmaf calls)";
#else
  return loops + "built for the compiler's target (no clones in this build)";
#endif
}

}  // namespace onnx_amp
