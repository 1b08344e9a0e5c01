#include "ops/common/relu_bits.h"

#include "ops/common/cpu_clones.h"

namespace onnx_amp {

ONNX_AMP_CPU_CLONES void ReluOnLowPrecisionBits(DType dtype, const uint16_t* in, uint16_t* out, int64_t count) {
  const uint16_t infinity = dtype == DType::kFloat16 ? 0x7c00 : 0x7f80;
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = in[i];
    out[i] = h > 0x8000 && (h & 0x7fff) <= infinity ? uint16_t{0} : h;
  }
}

ONNX_AMP_CPU_CLONES void ReluFloat32(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

}  // namespace onnx_amp
