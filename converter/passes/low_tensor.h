// Converts float32 TensorProto data to float16 or bfloat16, in place. float16 clamps
// finite values beyond +-65504 (a Cast would turn them into inf) and counts what it
// clamped or flushed to zero; bfloat16 only rounds (nearest even, NaN kept).
#pragma once

#include <cstddef>
#include <cstdint>

#include "converter/report.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx { class TensorProto; }

namespace onnx_amp {

// `tensor` must hold float32 data inline (not external). The record names the tensor.
Expected<ClampedTensor> ConvertTensorToLow(onnx::TensorProto& tensor, DType low);

// Whether ConvertTensorToLow can convert it (float32, data inline).
bool CanConvertTensor(const onnx::TensorProto& tensor);

// Converts `count` float32 values to `low` (float16 clamps and counts into `record`), as
// ConvertTensorToLow does for a whole tensor and SaveModelStreaming's transforms for each
// chunk of one still in its file.
void ConvertChunkToLow(const float* in, uint16_t* out, size_t count, DType low, ClampedTensor& record);

}  // namespace onnx_amp
