#include "converter/passes/low_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/convert.h"
#include "runtime/core/float16.h"

namespace onnx_amp {
namespace {

constexpr uint16_t kFloat16MaxBits = 0x7BFF;

}  // namespace

// The AVX2 clone vectorizes the search for values to clamp or count.
__attribute__((target_clones("avx2", "default"))) void ConvertChunkToLow(const float* in, uint16_t* out,
                                                                         size_t count, DType low,
                                                                         ClampedTensor& record) {
  if (low == DType::kBFloat16) {
    ConvertFloatToBFloat16(in, out, count);
    return;
  }
  ONNX_AMP_ASSERT(low == DType::kFloat16, "ConvertChunkToLow: not a low dtype");
  ConvertFloatToHalf(in, out, count);
  // Finite values beyond the range became inf: clamp them to +-65504.
  // Such values and flushed ones are rare: a vectorizable test finds the blocks that
  // hold any, and only those are walked value by value.
  constexpr size_t kBlock = 256;
  constexpr int32_t kFloat16MaxMagnitude = 0x477FE000;  // 65504.0f
  constexpr int32_t kInfMagnitude = 0x7F800000;
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t end = std::min(count, begin + kBlock);
    int32_t special = 0;
    for (size_t i = begin; i < end; ++i) {
      int32_t bits = 0;
      std::memcpy(&bits, in + i, sizeof(bits));
      const int32_t magnitude = bits & 0x7FFFFFFF;  // float magnitudes order as int32
      const int32_t half_magnitude = out[i] & 0x7FFF;
      special |= static_cast<int32_t>(magnitude > kFloat16MaxMagnitude && magnitude < kInfMagnitude) |
                 static_cast<int32_t>(half_magnitude == 0 && magnitude != 0);
    }
    if (special == 0) continue;
    for (size_t i = begin; i < end; ++i) {
      const float magnitude = std::fabs(in[i]);
      if (magnitude > kFloat16Max && std::isfinite(magnitude)) {
        if (record.clamped == 0 || magnitude > std::fabs(record.worst)) record.worst = in[i];
        ++record.clamped;
        out[i] = static_cast<uint16_t>((out[i] & 0x8000u) | kFloat16MaxBits);
      } else if ((out[i] & 0x7FFFu) == 0 && magnitude != 0.0f) {
        ++record.flushed_to_zero;
      }
    }
  }
}

bool CanConvertTensor(const onnx::TensorProto& tensor) {
  return tensor.data_type() == onnx::TensorProto::FLOAT &&
         tensor.data_location() != onnx::TensorProto::EXTERNAL && tensor.external_data_size() == 0;
}

Expected<ClampedTensor> ConvertTensorToLow(onnx::TensorProto& tensor, DType low) {
  ClampedTensor record;
  record.name = tensor.name();
  if (!CanConvertTensor(tensor)) {
    return InternalError("tensor '" + tensor.name() + "' is not inline float32 data");
  }
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) count *= dim;
  std::vector<float> values;
  if (!tensor.raw_data().empty()) {
    if (tensor.raw_data().size() != static_cast<size_t>(count) * sizeof(float)) {
      return InvalidModel("tensor '" + tensor.name() + "': raw_data holds " + std::to_string(tensor.raw_data().size()) +
                          " bytes for " + std::to_string(count) + " float32 values");
    }
    values.resize(count);
    std::memcpy(values.data(), tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    if (tensor.float_data_size() != count) {
      return InvalidModel("tensor '" + tensor.name() + "': float_data holds " + std::to_string(tensor.float_data_size()) +
                          " values for shape of " + std::to_string(count));
    }
    values.assign(tensor.float_data().begin(), tensor.float_data().end());
  }

  if (low != DType::kFloat16 && low != DType::kBFloat16) {
    return InternalError("ConvertTensorToLow: " + std::string(DTypeName(low)) + " is not a low dtype");
  }
  std::vector<uint16_t> bits(values.size());
  ConvertChunkToLow(values.data(), bits.data(), values.size(), low, record);
  tensor.clear_float_data();
  tensor.set_raw_data(bits.data(), bits.size() * sizeof(uint16_t));
  tensor.set_data_type(ToOnnx(low));
  return record;
}

}  // namespace onnx_amp
