// Inputs of Paint's overflow-sensitive seed rules: the magnitude summary of a float32
// constant, computed the same way for tensors in memory and for tensors streamed
// chunk by chunk from their external files.
#pragma once

#include <cstddef>
#include <cstdint>

#include "converter/plan.h"

namespace onnx { class AttributeProto; class TensorProto; }

namespace onnx_amp {

// Accumulates ValueSummary over float32 values fed in order, chunk by chunk.
class MagnitudeSummary {
 public:
  void Add(const float* values, size_t count);
  // `size` bytes of little-endian float32 values; a trailing partial value is ignored.
  void AddBytes(const char* data, size_t size);
  ValueSummary Summary() const;

 private:
  bool first_seen_ = false;
  bool first_is_nan_ = false;
  int32_t largest_ = 0;                     // magnitude bits of the largest finite value
  uint32_t smallest_minus_one_ = UINT32_MAX;  // magnitude bits of the smallest non-zero value, minus one
};

// The summary of a float32 tensor whose data is in memory (raw_data or float_data).
ValueSummary SummarizeFloatTensor(const onnx::TensorProto& tensor);

// The summary of a Constant's value_float / value_floats attribute.
ValueSummary SummarizeFloatAttribute(const onnx::AttributeProto& attr);

}  // namespace onnx_amp
