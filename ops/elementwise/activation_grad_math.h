// The slopes of the activation gradients (ReluGrad, SigmoidGrad, TanhGrad, GeluGrad of
// domain ai.onnx_amp): dX = dY * slope(V), V the forward input X or output Y. Shared by
// the CPU and CUDA kernels, float32 arithmetic.
#pragma once

#include <cmath>

#include "runtime/core/host_device.h"

namespace onnx_amp {

// relu'(x) = 1 for x > 0, else 0; the same test at y = relu(x), which the gradient rule
// passes (ops/elementwise/elementwise_grad.cc).
struct ReluSlope {
  ONNX_AMP_HD float operator()(float v) const { return v > 0.0f ? 1.0f : 0.0f; }
};
// sigmoid' = y * (1 - y)
struct SigmoidSlope {
  ONNX_AMP_HD float operator()(float y) const { return y * (1.0f - y); }
};
// tanh' = 1 - y^2
struct TanhSlope {
  ONNX_AMP_HD float operator()(float y) const { return 1.0f - y * y; }
};
// Exact: gelu(x) = x * Phi(x), gelu' = Phi(x) + x * phi(x).
struct GeluSlope {
  ONNX_AMP_HD float operator()(float x) const {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752440f));
    const float pdf = expf(-0.5f * x * x) * 0.39894228040143267794f;
    return cdf + x * pdf;
  }
};
// tanh form: gelu(x) = x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3),
// gelu' = (1 + t)/2 + x/2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2).
struct GeluTanhSlope {
  ONNX_AMP_HD float operator()(float x) const {
    const float k = 0.79788456080286535588f;
    const float t = tanhf(k * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
  }
};

}  // namespace onnx_amp
