// ConvertInitializers: a float32 initializer read only by low consumers is converted
// in place; one read by low and float32 consumers is duplicated, the low copy feeding
// the low consumers (no Cast at run time, the float32 readers keep exact weights).
//   before: W:float -> MatMul(fp16), W:float -> ReduceSum(fp32)
//   after:  W_amp_float16:float16 -> MatMul, W:float -> ReduceSum
// float16 clamps finite values beyond +-65504 and reports each clamped tensor;
// bfloat16 rounds to nearest even. An initializer still stored as external data is
// not read here: it gets the low dtype and a transform that converts it chunk by chunk
// when the model is written (SaveModelStreaming), which fills its clamp record.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/passes/pass_context.h"
#include "runtime/onnx/external_stream.h"

namespace onnx_amp {

// Initializers converted while the model is written.
struct StreamedInitializers {
  std::unordered_map<std::string, ChunkTransform> transforms;  // by tensor name
  std::vector<std::shared_ptr<ClampedTensor>> records;         // complete once written
};

Status ConvertInitializers(PassContext& context);

}  // namespace onnx_amp
