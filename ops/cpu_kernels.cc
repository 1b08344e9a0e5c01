#include "ops/cpu_kernels.h"

#include "ops/kernel_registry.h"

namespace onnx_amp {

const KernelRegistry& CpuKernelRegistry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterElementwiseCpuKernels(r);
    RegisterReductionCpuKernels(r);
    RegisterNormalizationCpuKernels(r);
    RegisterLinalgCpuKernels(r);
    RegisterConvCpuKernels(r);
    RegisterTensorCpuKernels(r);
    RegisterControlFlowCpuKernels(r);
    RegisterTrainingCpuKernels(r);
    RegisterRnnCpuKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnx_amp
