// The CPU kernels of the ops/normalization family (registered by normalization_cpu.cc).
// Statistics (max, sums, means, variances) are float32 for float32/float16/bfloat16
// tensors and float64 for float64 tensors; each output is rounded once.
#pragma once

#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status SoftmaxCpu(KernelContext& context);                   // softmax.cc
Status LogSoftmaxCpu(KernelContext& context);                // softmax.cc
Status HardmaxCpu(KernelContext& context);                   // softmax.cc
Status LayerNormalizationCpu(KernelContext& context);        // layer_norm.cc
Status BatchNormalizationCpu(KernelContext& context);        // batch_norm.cc
Status InstanceNormalizationCpu(KernelContext& context);     // instance_group_norm.cc
Status GroupNormalizationCpu(KernelContext& context);        // instance_group_norm.cc
Status LpNormalizationCpu(KernelContext& context);           // lp_mvn_norm.cc
Status MeanVarianceNormalizationCpu(KernelContext& context); // lp_mvn_norm.cc
Status SoftmaxCrossEntropyLossCpu(KernelContext& context);   // loss.cc
Status NegativeLogLikelihoodLossCpu(KernelContext& context);  // loss.cc
Status MeanSquaredErrorCpu(KernelContext& context);            // loss.cc: (prediction, target) -> loss

// The fused gradients of domain ai.onnx_amp.
Status SoftmaxGradKernel(KernelContext& context);               // softmax_grad_cpu.cc: (dY, Y) -> dX
Status LogSoftmaxGradKernel(KernelContext& context);            // softmax_grad_cpu.cc: (dY, Y) -> dX
Status LayerNormalizationGradKernel(KernelContext& context);    // normalization_grad_cpu.cc: (dY, X, scale, mean, inv_std) -> dX, dScale, dBias
Status BatchNormalizationGradKernel(KernelContext& context);    // normalization_grad_cpu.cc: (dY, X, scale, mean, var) -> dX, dScale, dBias
// loss_grad.cc
Status SoftmaxCrossEntropyLossGradKernel(KernelContext& context);    // (dLoss, log_prob, labels, [weights]) -> dScores
Status NegativeLogLikelihoodLossGradKernel(KernelContext& context);  // (dLoss, input, labels, [weights]) -> dInput
Status MeanSquaredErrorGradKernel(KernelContext& context);           // (dLoss, prediction, target) -> dPrediction

}  // namespace onnx_amp
