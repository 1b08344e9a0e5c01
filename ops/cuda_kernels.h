// The CUDA kernel families, registered like the CPU ones (cpu_kernels.h): one function
// per family folder, called by CudaKernelRegistry(). Built when nvcc is present.
#pragma once

namespace onnx_amp {

class KernelRegistry;

void RegisterElementwiseCudaKernels(KernelRegistry& registry);    // ops/elementwise: unary math, activations and their gradients, broadcasting binary ops, Where, Cast
void RegisterReductionCudaKernels(KernelRegistry& registry);      // ops/reduction: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSumExp
void RegisterNormalizationCudaKernels(KernelRegistry& registry);  // ops/normalization: Softmax, LogSoftmax, LayerNorm, BatchNorm, the losses, and their gradients
void RegisterLinalgCudaKernels(KernelRegistry& registry);         // ops/linalg: MatMul, Gemm (cuBLASLt)
void RegisterConvCudaKernels(KernelRegistry& registry);           // ops/conv: Conv, ConvGrad (cuDNN), pools and their gradients
void RegisterTensorCudaKernels(KernelRegistry& registry);         // ops/tensor: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Transpose, Concat
void RegisterTrainingCudaKernels(KernelRegistry& registry);       // ops/training: UnscaleAndCheck, GlobalNormClip, optimizer steps

// All CUDA kernels; built on first use.
const KernelRegistry& CudaKernelRegistry();

}  // namespace onnx_amp
