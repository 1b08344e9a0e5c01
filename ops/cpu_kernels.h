// The CPU kernel families. Each family registers its kernels in one function defined
// in its own folder; ops/cpu_kernels.cc calls them all.
#pragma once

namespace onnx_amp {

class KernelRegistry;

void RegisterElementwiseCpuKernels(KernelRegistry& registry);    // ops/elementwise: unary/binary math, activations, comparisons, logic, Cast, Where, Clip
void RegisterReductionCpuKernels(KernelRegistry& registry);      // ops/reduction: Reduce*, ArgMax/ArgMin, CumSum, TopK
void RegisterNormalizationCpuKernels(KernelRegistry& registry);  // ops/normalization: Softmax, LogSoftmax, LayerNorm, BatchNorm, InstanceNorm, GroupNorm, LpNorm
void RegisterLinalgCpuKernels(KernelRegistry& registry);         // ops/linalg: MatMul, Gemm, Einsum (oneDNN)
void RegisterConvCpuKernels(KernelRegistry& registry);           // ops/conv: Conv, ConvTranspose, pools (oneDNN)
void RegisterTensorCpuKernels(KernelRegistry& registry);         // ops/tensor: Reshape, Transpose, Slice, Concat, Split, Gather*, Scatter*, Expand, Tile, Pad, Resize, Shape, ...
void RegisterControlFlowCpuKernels(KernelRegistry& registry);    // ops/controlflow: If, Loop, Scan, Identity, Constant
void RegisterTrainingCpuKernels(KernelRegistry& registry);       // ops/training: fused gradient and optimizer-step ops (domain ai.onnx_amp)
void RegisterRnnCpuKernels(KernelRegistry& registry);            // ops/rnn: RNN, GRU, LSTM

}  // namespace onnx_amp
