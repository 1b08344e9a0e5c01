#include "ops/linalg/float_compute.h"

#include <cstring>

#include "runtime/core/convert.h"

namespace onnx_amp {

std::vector<float> ToFloat32(const Tensor& tensor) {
  const size_t count = static_cast<size_t>(tensor.num_elements());
  std::vector<float> values(count);
  if (count == 0) return values;
  if (tensor.dtype() == DType::kFloat32) {
    std::memcpy(values.data(), tensor.data<float>(), count * sizeof(float));
  } else if (tensor.dtype() == DType::kFloat16) {
    ConvertHalfToFloat(tensor.data<uint16_t>(), values.data(), count);
  } else {
    ONNX_AMP_ASSERT(tensor.dtype() == DType::kBFloat16, "ToFloat32 takes float32, float16 or bfloat16");
    ConvertBFloat16ToFloat(tensor.data<uint16_t>(), values.data(), count);
  }
  return values;
}

void StoreFromFloat32(const float* values, Tensor& out) { StoreFromFloat32Range(values, out, 0, out.num_elements()); }

void StoreFromFloat32Range(const float* values, Tensor& out, int64_t begin, int64_t end) {
  const size_t count = static_cast<size_t>(end - begin);
  if (count == 0) return;
  if (out.dtype() == DType::kFloat32) {
    if (out.data<float>() != values) std::memcpy(out.data<float>() + begin, values + begin, count * sizeof(float));
  } else if (out.dtype() == DType::kFloat16) {
    ConvertFloatToHalf(values + begin, out.data<uint16_t>() + begin, count);
  } else {
    ONNX_AMP_ASSERT(out.dtype() == DType::kBFloat16, "StoreFromFloat32 takes float32, float16 or bfloat16");
    ConvertFloatToBFloat16(values + begin, out.data<uint16_t>() + begin, count);
  }
}

}  // namespace onnx_amp
