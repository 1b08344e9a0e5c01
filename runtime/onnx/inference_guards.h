// Checks that some of ONNX 1.18's shape-inference functions need but do not make: on a
// malformed model they index past an input's dims and crash the process instead of
// failing inference. Later ONNX releases added the checks; until the pinned version has
// them, GuardShapeInference() wraps each such function (once per process) with its
// check, which fails inference the way ONNX's own checks do (an onnx::InferenceError).
// Found by the graph_view and run fuzz targets; each guard has a regression input
// in tests/fuzz/regressions/.
//   Einsum: an operand whose rank differs from its term in the equation, ellipses that
//           stand for different numbers of dims, an output label no input has.
//   ConvTranspose: a weight of rank < 2, or (without kernel_shape) of another rank than
//           the input.
//   Conv, ConvInteger, QLinearConv, DeformConv without kernel_shape: a weight of another rank
//           than the input (the kernel is read from it; graph_view fuzz target).
//   Conv, ConvTranspose, pooling (and their quantized forms): a stride <= 0 (their
//           output-size arithmetic divides by it: SIGFPE; graph_view fuzz target).
//   Data propagation of every op: an input whose static length exceeds any shape vector's
//           (a Range over constants can have 10^16 elements) would become one entry per
//           element; propagation is skipped there (run fuzz target: 1.28e16 entries).
//   Slice:  data propagation (the shape values it follows through Shape -> Slice) over an
//           empty shape with a negative step; skipped for such a slice (run fuzz target).
#pragma once

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// What ONNX 1.18's inference and data propagation assume of the tensors they parse
// (initializers and Constant values of int32, int64, float and double, read for shapes,
// axes, Range bounds ...): raw_data of a whole number of elements. A shorter one makes
// them copy past the end of their buffer (graph_view fuzz target). InvalidModel naming
// the tensor otherwise; run it before ONNX inference on an untrusted model.
Status CheckTensorsForInference(const onnx::ModelProto& model);

// Call before any ONNX shape inference or full check (InferShapes, check_model with
// full_check); cheap after the first call.
void GuardShapeInference();

}  // namespace onnx_amp
