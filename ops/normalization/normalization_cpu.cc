// Registers the CPU kernels of the ops/normalization family.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/normalization/normalization_kernels.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterNormalizationCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Softmax", DeviceKind::kCpu, &SoftmaxCpu});
  registry.Register({"", "LogSoftmax", DeviceKind::kCpu, &LogSoftmaxCpu});
  registry.Register({"", "Hardmax", DeviceKind::kCpu, &HardmaxCpu});
  registry.Register({"", "LayerNormalization", DeviceKind::kCpu, &LayerNormalizationCpu});
  // BatchNormalization applies a fused activation (KernelDef::fuses_activation).
  KernelDef batch_norm{"", "BatchNormalization", DeviceKind::kCpu, &BatchNormalizationCpu};
  batch_norm.fuses_activation = true;
  batch_norm.channels_last = {.same_order_inputs = 1u << 0, .output = ChannelsLastOutput::kLikeOrderedInputs};
  registry.Register(batch_norm);
  registry.Register({"", "InstanceNormalization", DeviceKind::kCpu, &InstanceNormalizationCpu});
  registry.Register({"", "GroupNormalization", DeviceKind::kCpu, &GroupNormalizationCpu});
  registry.Register({"", "LpNormalization", DeviceKind::kCpu, &LpNormalizationCpu});
  registry.Register({"", "MeanVarianceNormalization", DeviceKind::kCpu, &MeanVarianceNormalizationCpu});
  registry.Register({"", "SoftmaxCrossEntropyLoss", DeviceKind::kCpu, &SoftmaxCrossEntropyLossCpu});
  registry.Register({"", "NegativeLogLikelihoodLoss", DeviceKind::kCpu, &NegativeLogLikelihoodLossCpu});
  // The losses of domain ai.onnx_amp (any opset) and their fused gradients.
  registry.Register({kOnnxAmpDomain, "SoftmaxCrossEntropyLoss", DeviceKind::kCpu, &SoftmaxCrossEntropyLossCpu});
  registry.Register({kOnnxAmpDomain, "NegativeLogLikelihoodLoss", DeviceKind::kCpu, &NegativeLogLikelihoodLossCpu});
  registry.Register({kOnnxAmpDomain, "MeanSquaredError", DeviceKind::kCpu, &MeanSquaredErrorCpu});
  registry.Register(
      {kOnnxAmpDomain, "SoftmaxCrossEntropyLossGrad", DeviceKind::kCpu, &SoftmaxCrossEntropyLossGradKernel});
  registry.Register(
      {kOnnxAmpDomain, "NegativeLogLikelihoodLossGrad", DeviceKind::kCpu, &NegativeLogLikelihoodLossGradKernel});
  registry.Register({kOnnxAmpDomain, "MeanSquaredErrorGrad", DeviceKind::kCpu, &MeanSquaredErrorGradKernel});
  registry.Register({kOnnxAmpDomain, "SoftmaxGrad", DeviceKind::kCpu, &SoftmaxGradKernel});
  registry.Register({kOnnxAmpDomain, "LogSoftmaxGrad", DeviceKind::kCpu, &LogSoftmaxGradKernel});
  registry.Register({kOnnxAmpDomain, "LayerNormalizationGrad", DeviceKind::kCpu, &LayerNormalizationGradKernel});
  KernelDef batch_norm_grad{kOnnxAmpDomain, "BatchNormalizationGrad", DeviceKind::kCpu, &BatchNormalizationGradKernel};
  batch_norm_grad.channels_last = {.same_order_inputs = (1u << 0) | (1u << 1),
                                   .output = ChannelsLastOutput::kLikeOrderedInputs};
  registry.Register(batch_norm_grad);
}

}  // namespace onnx_amp
