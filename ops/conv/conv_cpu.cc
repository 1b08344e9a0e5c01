// Registers the CPU kernels of the ops/conv family.
#include "ops/conv/conv_kernels.h"
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterConvCpuKernels(KernelRegistry& registry) {
  // Conv applies a fused activation (KernelDef::fuses_activation); Conv and MaxPool take
  // channels-last activations (runtime/executor/plan_layouts.h).
  KernelDef conv{"", "Conv", DeviceKind::kCpu, &ConvCpu};
  conv.fuses_activation = true;
  conv.takes_channels_last = true;
  registry.Register(conv);
  registry.Register({"", "ConvTranspose", DeviceKind::kCpu, &ConvTransposeCpu});
  KernelDef max_pool{"", "MaxPool", DeviceKind::kCpu, &MaxPoolCpu};
  max_pool.takes_channels_last = true;
  registry.Register(max_pool);
  registry.Register({"", "AveragePool", DeviceKind::kCpu, &AveragePoolCpu});
  registry.Register({"", "LpPool", DeviceKind::kCpu, &LpPoolCpu});
  registry.Register({"", "GlobalAveragePool", DeviceKind::kCpu, &GlobalAveragePoolCpu});
  registry.Register({"", "GlobalMaxPool", DeviceKind::kCpu, &GlobalMaxPoolCpu});
  registry.Register({"", "GlobalLpPool", DeviceKind::kCpu, &GlobalLpPoolCpu});
  registry.Register({kOnnxAmpDomain, "ConvGrad", DeviceKind::kCpu, &ConvGradKernel});
  // MaxPoolGrad applies a folded ReluGrad (KernelDef::fuses_relu_grad).
  KernelDef max_pool_grad{kOnnxAmpDomain, "MaxPoolGrad", DeviceKind::kCpu, &MaxPoolGradKernel};
  max_pool_grad.fuses_relu_grad = true;
  registry.Register(max_pool_grad);
  registry.Register({kOnnxAmpDomain, "AveragePoolGrad", DeviceKind::kCpu, &AveragePoolGradKernel});
}

}  // namespace onnx_amp
