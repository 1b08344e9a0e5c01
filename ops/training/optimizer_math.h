// Per-element optimizer updates on float32 master weights, shared by the CPU and CUDA
// optimizer kernels. Formulas and defaults follow Keras (the mixed-precision guide's
// framework); where PyTorch differs the README says so.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/core/host_device.h"

namespace onnx_amp {

// SGD (Keras): v = momentum*v - lr*g; w += v, or with Nesterov w += momentum*v - lr*g.
// momentum 0 is plain SGD: w -= lr*g.
ONNX_AMP_HD void SgdUpdate(float& weight, float& velocity, float gradient, float learning_rate, float momentum,
                           bool nesterov) {
  if (momentum == 0.0f) {
    weight -= learning_rate * gradient;
    return;
  }
  velocity = momentum * velocity - learning_rate * gradient;
  weight += nesterov ? momentum * velocity - learning_rate * gradient : velocity;
}

// Adam (Keras): the bias corrections fold into the step size
//   alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t), computed once per step by the caller
//   (AdamStepSize);
//   m += (g - m)(1 - beta1); v += (g^2 - v)(1 - beta2); w -= alpha * m / (sqrt(v) + eps).
// AdamW first decays the weight: w -= lr * weight_decay * w.
ONNX_AMP_HD void AdamUpdate(float& weight, float& m, float& v, float gradient, float alpha, float beta1, float beta2,
                            float epsilon, float decay_step) {
  weight -= decay_step * weight;
  m += (gradient - m) * (1.0f - beta1);
  v += (gradient * gradient - v) * (1.0f - beta2);
  weight -= alpha * m / (sqrtf(v) + epsilon);
}

// Adam's alpha for update t = step + 1 (`step` updates applied before), in double and
// rounded once.
ONNX_AMP_HD float AdamStepSize(float learning_rate, float beta1, float beta2, int64_t step) {
  const double t = static_cast<double>(step + 1);
  const double beta1_t = std::pow(static_cast<double>(beta1), t);
  const double beta2_t = std::pow(static_cast<double>(beta2), t);
  return static_cast<float>(learning_rate * std::sqrt(1.0 - beta2_t) / (1.0 - beta1_t));
}

// RMSprop (Keras, no momentum, not centred): v = rho*v + (1-rho)*g^2;
// w -= lr * g / sqrt(v + eps). (PyTorch divides by sqrt(v) + eps instead.)
ONNX_AMP_HD void RmspropUpdate(float& weight, float& v, float gradient, float learning_rate, float rho,
                               float epsilon) {
  v = rho * v + (1.0f - rho) * gradient * gradient;
  weight -= learning_rate * gradient / sqrtf(v + epsilon);
}

}  // namespace onnx_amp
