#include "converter/passes/low_tensor.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/convert.h"
#include "runtime/core/float16.h"

namespace onnx_amp {
namespace {

// Clamps out-of-range finite values and records them; counts values that round to 0.
void ClampForHalf(std::vector<float>& values, ClampedTensor& record) {
  for (float& v : values) {
    if (!std::isfinite(v)) continue;
    if (std::fabs(v) > kFloat16Max) {
      if (record.clamped == 0 || std::fabs(v) > std::fabs(record.worst)) record.worst = v;
      ++record.clamped;
      v = std::copysign(kFloat16Max, v);
    } else if (v != 0.0f && (FloatToHalfBits(v) & 0x7FFFu) == 0) {
      ++record.flushed_to_zero;
    }
  }
}

}  // namespace

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

  std::vector<uint16_t> bits(values.size());
  switch (low) {
    case DType::kFloat16:
      ClampForHalf(values, record);
      ConvertFloatToHalf(values.data(), bits.data(), values.size());
      break;
    case DType::kBFloat16:
      ConvertFloatToBFloat16(values.data(), bits.data(), values.size());
      break;
    default:
      return InternalError("ConvertTensorToLow: " + std::string(DTypeName(low)) + " is not a low dtype");
  }
  tensor.clear_float_data();
  tensor.set_raw_data(bits.data(), bits.size() * sizeof(uint16_t));
  tensor.set_data_type(ToOnnx(low));
  return record;
}

}  // namespace onnx_amp
