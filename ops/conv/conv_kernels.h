// The CPU kernels of the ops/conv family (registered by conv_cpu.cc).
#pragma once

#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status ConvCpu(KernelContext& context);               // conv.cc
Status ConvTransposeCpu(KernelContext& context);      // conv_transpose.cc
Status MaxPoolCpu(KernelContext& context);            // pool.cc
Status AveragePoolCpu(KernelContext& context);        // pool.cc
Status LpPoolCpu(KernelContext& context);             // pool.cc
Status GlobalAveragePoolCpu(KernelContext& context);  // global_pool.cc
Status GlobalMaxPoolCpu(KernelContext& context);      // global_pool.cc
Status GlobalLpPoolCpu(KernelContext& context);       // global_pool.cc

// The fused gradients of domain ai.onnx_amp (conv_grad_cpu.cc, window_grad_cpu.cc).
Status ConvGradKernel(KernelContext& context);         // (dY, X, W) -> dX, dW, dB
Status MaxPoolGradKernel(KernelContext& context);      // (dY, X) -> dX
Status AveragePoolGradKernel(KernelContext& context);  // (dY, X) -> dX

}  // namespace onnx_amp
