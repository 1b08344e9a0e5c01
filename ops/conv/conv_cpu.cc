// Registers the CPU kernels of the ops/conv family.
#include "ops/conv/conv_kernels.h"
#include "ops/conv/few_channels_conv.h"
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterConvCpuKernels(KernelRegistry& registry) {
  // Conv applies a fused activation (KernelDef::fuses_activation), and a first layer's
  // max pool on its loops (KernelDef::pools_output). The convolutions, max pools and their
  // gradients take channels-last activations (runtime/executor/plan_layouts.h).
  KernelDef conv{"", "Conv", DeviceKind::kCpu, &ConvCpu};
  conv.fuses_activation = true;
  conv.pools_output = &FewChannelsConvPoolsOutput;
  conv.channels_last = {.any_order_inputs = 1u << 0, .output = ChannelsLastOutput::kAnyOrder};
  registry.Register(conv);
  registry.Register({"", "ConvTranspose", DeviceKind::kCpu, &ConvTransposeCpu});
  // MaxPool reads a channels-last float32 X through the Relu of the Conv before it when
  // the plan moves that Relu here (KernelDef::reads_through_relu).
  KernelDef max_pool{"", "MaxPool", DeviceKind::kCpu, &MaxPoolCpu};
  max_pool.reads_through_relu = true;
  max_pool.channels_last = {.any_order_inputs = 1u << 0, .output = ChannelsLastOutput::kIfInput0};
  registry.Register(max_pool);
  registry.Register({"", "AveragePool", DeviceKind::kCpu, &AveragePoolCpu});
  registry.Register({"", "LpPool", DeviceKind::kCpu, &LpPoolCpu});
  registry.Register({"", "GlobalAveragePool", DeviceKind::kCpu, &GlobalAveragePoolCpu});
  registry.Register({"", "GlobalMaxPool", DeviceKind::kCpu, &GlobalMaxPoolCpu});
  registry.Register({"", "GlobalLpPool", DeviceKind::kCpu, &GlobalLpPoolCpu});
  KernelDef conv_grad{kOnnxAmpDomain, "ConvGrad", DeviceKind::kCpu, &ConvGradKernel};
  conv_grad.channels_last = {.any_order_inputs = (1u << 0) | (1u << 1), .output = ChannelsLastOutput::kAnyOrder};
  registry.Register(conv_grad);
  // MaxPoolGrad applies a folded ReluGrad (KernelDef::fuses_relu_grad).
  KernelDef max_pool_grad{kOnnxAmpDomain, "MaxPoolGrad", DeviceKind::kCpu, &MaxPoolGradKernel};
  max_pool_grad.fuses_relu_grad = true;
  max_pool_grad.channels_last = {.any_order_inputs = 1u << 0, .same_order_inputs = 1u << 1,
                                 .output = ChannelsLastOutput::kLikeOrderedInputs};
  registry.Register(max_pool_grad);
  registry.Register({kOnnxAmpDomain, "AveragePoolGrad", DeviceKind::kCpu, &AveragePoolGradKernel});
}

}  // namespace onnx_amp
