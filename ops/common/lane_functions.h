// Element-wise functions whose scalar forms are library calls the compiler cannot
// vectorise, over float32 arrays in 16-lane forms (ops/common/float_lanes.h), built per
// instruction set: for the element-wise kernels (ops/elementwise/lane_unary.h) and the
// RNN gates (ops/rnn/rnn_activation.h).
#pragma once

#include <cstdint>

namespace onnx_amp {

enum class LaneFunction {
  kExp,
  kLog,
  kErf,
  kSigmoid,
  kTanh,
  kGelu,      // x/2 (1 + erf(x / sqrt(2)))
  kGeluTanh,  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};

// out[0, n) = function(in[0, n)); out may be in.
void ApplyLaneFunction(LaneFunction function, const float* in, float* out, int64_t n);

}  // namespace onnx_amp
