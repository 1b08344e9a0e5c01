// Registers the CPU kernels of the ops/conv family.
#include "ops/conv/conv_kernels.h"
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterConvCpuKernels(KernelRegistry& registry) {
  // Conv applies a fused activation (KernelDef::fuses_activation).
  registry.Register({"", "Conv", DeviceKind::kCpu, &ConvCpu, false, true});
  registry.Register({"", "ConvTranspose", DeviceKind::kCpu, &ConvTransposeCpu});
  registry.Register({"", "MaxPool", DeviceKind::kCpu, &MaxPoolCpu});
  registry.Register({"", "AveragePool", DeviceKind::kCpu, &AveragePoolCpu});
  registry.Register({"", "LpPool", DeviceKind::kCpu, &LpPoolCpu});
  registry.Register({"", "GlobalAveragePool", DeviceKind::kCpu, &GlobalAveragePoolCpu});
  registry.Register({"", "GlobalMaxPool", DeviceKind::kCpu, &GlobalMaxPoolCpu});
  registry.Register({"", "GlobalLpPool", DeviceKind::kCpu, &GlobalLpPoolCpu});
  registry.Register({kOnnxAmpDomain, "ConvGrad", DeviceKind::kCpu, &ConvGradKernel});
  registry.Register({kOnnxAmpDomain, "MaxPoolGrad", DeviceKind::kCpu, &MaxPoolGradKernel});
  registry.Register({kOnnxAmpDomain, "AveragePoolGrad", DeviceKind::kCpu, &AveragePoolGradKernel});
}

}  // namespace onnx_amp
