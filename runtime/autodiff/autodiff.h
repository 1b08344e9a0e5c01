// Builds a training graph: the forward graph plus the backward nodes written by each
// op's gradient rule (ops/gradients.h), as one ONNX model that the executor, the
// precision passes and `inspect` handle like any other.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

struct AutodiffOptions {
  // A scalar floating output of the forward graph; empty: the graph's only output.
  std::string loss;
  // Values to differentiate with respect to (initializers or graph inputs of a floating
  // type); empty: every floating initializer.
  std::vector<std::string> parameters;
  // Keep the forward graph's other outputs as outputs of the result.
  bool keep_forward_outputs = false;
};

// The result's inputs are the forward inputs plus the seed "<loss>_grad" (a float32
// scalar: loss scaling feeds the scale there); its outputs are the loss, then
// "<param>_grad" for each parameter in order (zeros for one the loss does not depend
// on), then the kept forward outputs. Fan-out contributions are summed; integer and
// bool values get no gradient. Errors: InvalidArgument for a bad loss or parameter;
// Unsupported listing every node on a parameter-to-loss path whose op has no gradient
// rule (name and op type), or the first rule that fails; Internal if the result fails
// the ONNX checker.
Expected<onnx::ModelProto> BuildGradientModel(const onnx::ModelProto& forward, const AutodiffOptions& options);

}  // namespace onnx_amp
