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
//   Slice:  data propagation (the shape values it follows through Shape -> Slice) over an
//           empty shape with a negative step; skipped for such a slice (run fuzz target).
#pragma once

namespace onnx_amp {

// Call before any ONNX shape inference or full check (InferShapes, check_model with
// full_check); cheap after the first call.
void GuardShapeInference();

}  // namespace onnx_amp
