#include "ops/common/float_vec_isa.h"

#include "runtime/core/convert.h"

namespace onnx_amp {

// The conversions' paths (runtime/core/convert.h) cover AVX2 + F16C and AVX-512 F + BW.
bool CpuHasFloatVecAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return ConvertPathSupported(ConvertPath::kAvx2F16c) && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool CpuHasFloatVecAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  return CpuHasFloatVecAvx2() && ConvertPathSupported(ConvertPath::kAvx512) && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

}  // namespace onnx_amp
