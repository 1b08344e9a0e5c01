// ONNX schemas of the losses of domain "ai.onnx_amp" and of their fused gradients. The
// trainer builds its loss from them, so that the loss and its gradient never depend on
// the model's opset (ONNX's own losses need opset 12/13, and scattering a gradient into
// picked classes needs opset 16):
//   SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss: as ONNX's opset-13 ops;
//   MeanSquaredError(prediction, target): mean over every element of (prediction - target)^2;
//   SoftmaxCrossEntropyLossGrad, NegativeLogLikelihoodLossGrad, MeanSquaredErrorGrad.
// Kernels: ops/normalization/loss.cc and loss_grad.cc; gradient rules: normalization_grad.cc.
#pragma once

#include <vector>

#include <onnx/defs/schema.h>

namespace onnx_amp {

// Listed by NormalizationOnnxAmpSchemas (normalization_schemas.cc).
std::vector<onnx::OpSchema> LossOpSchemas();

}  // namespace onnx_amp
