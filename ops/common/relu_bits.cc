#include "ops/common/relu_bits.h"

#include "ops/common/cpu_clones.h"
#include "runtime/core/cpu_isa_cap.h"

namespace onnx_amp {

ONNX_AMP_CPU_CLONES void ReluOnLowPrecisionBits(DType dtype, const uint16_t* in, uint16_t* out, int64_t count) {
  const uint16_t infinity = dtype == DType::kFloat16 ? 0x7c00 : 0x7f80;
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = in[i];
    out[i] = h > 0x8000 && (h & 0x7fff) <= infinity ? uint16_t{0} : h;
  }
}

ONNX_AMP_CPU_CLONES void ReluGradOnLowPrecisionBits(DType dtype, const uint16_t* dy, const uint16_t* y, uint16_t* dx,
                                                    int64_t count) {
  const bool half = dtype == DType::kFloat16;
  const uint16_t infinity = half ? 0x7c00 : 0x7f80;
  const uint16_t quiet = half ? 0x0200 : 0x0040;        // the quiet bit of a NaN
  const uint16_t default_nan = half ? 0xfe00 : 0xffc0;  // x86's inf * 0, rounded
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t g = dy[i], v = y[i];
    const uint16_t magnitude = g & 0x7fff;
    const bool positive = v > 0 && v <= infinity;  // y > 0: sign clear, not zero, not NaN
    const uint16_t times_zero = magnitude == infinity ? default_nan : static_cast<uint16_t>(g & 0x8000);
    const uint16_t product = positive ? g : times_zero;
    dx[i] = magnitude > infinity ? static_cast<uint16_t>(g | quiet) : product;
  }
}

bool ReluGradRowsWithSumsOnAvx512() {
#if defined(__x86_64__)
  static const bool on = CpuIsaAllowed(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512bw");
  return on;
#else
  return false;
#endif
}

ONNX_AMP_CPU_CLONES void ReluFloat32(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

}  // namespace onnx_amp
