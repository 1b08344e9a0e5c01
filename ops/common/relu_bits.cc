#include "ops/common/relu_bits.h"

namespace onnx_amp {

void ReluOnLowPrecisionBits(DType dtype, const uint16_t* in, uint16_t* out, int64_t count) {
  const uint16_t infinity = dtype == DType::kFloat16 ? 0x7c00 : 0x7f80;
  for (int64_t i = 0; i < count; ++i) {
    const uint16_t h = in[i];
    out[i] = h > 0x8000 && (h & 0x7fff) <= infinity ? uint16_t{0} : h;
  }
}

}  // namespace onnx_amp
