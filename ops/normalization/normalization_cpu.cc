// Registers the CPU kernels of the ops/normalization family.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/normalization/normalization_kernels.h"

namespace onnx_amp {

void RegisterNormalizationCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Softmax", DeviceKind::kCpu, &SoftmaxCpu});
  registry.Register({"", "LogSoftmax", DeviceKind::kCpu, &LogSoftmaxCpu});
  registry.Register({"", "Hardmax", DeviceKind::kCpu, &HardmaxCpu});
  registry.Register({"", "LayerNormalization", DeviceKind::kCpu, &LayerNormalizationCpu});
  registry.Register({"", "BatchNormalization", DeviceKind::kCpu, &BatchNormalizationCpu});
  registry.Register({"", "InstanceNormalization", DeviceKind::kCpu, &InstanceNormalizationCpu});
  registry.Register({"", "GroupNormalization", DeviceKind::kCpu, &GroupNormalizationCpu});
  registry.Register({"", "LpNormalization", DeviceKind::kCpu, &LpNormalizationCpu});
  registry.Register({"", "MeanVarianceNormalization", DeviceKind::kCpu, &MeanVarianceNormalizationCpu});
  registry.Register({"", "SoftmaxCrossEntropyLoss", DeviceKind::kCpu, &SoftmaxCrossEntropyLossCpu});
  registry.Register({"", "NegativeLogLikelihoodLoss", DeviceKind::kCpu, &NegativeLogLikelihoodLossCpu});
}

}  // namespace onnx_amp
