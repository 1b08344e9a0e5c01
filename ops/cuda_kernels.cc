#include "ops/cuda_kernels.h"

#include "ops/kernel_registry.h"

namespace onnx_amp {

const KernelRegistry& CudaKernelRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterElementwiseCudaKernels(r);
    RegisterReductionCudaKernels(r);
    RegisterNormalizationCudaKernels(r);
    RegisterLinalgCudaKernels(r);
    RegisterConvCudaKernels(r);
    RegisterTensorCudaKernels(r);
    RegisterTrainingCudaKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_amp
