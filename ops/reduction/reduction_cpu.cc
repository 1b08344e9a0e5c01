#include "ops/cpu_kernels.h"
#include "ops/reduction/reduction_families.h"

namespace onnx_amp {

void RegisterReductionCpuKernels(KernelRegistry& registry) {
  RegisterReduceCpuKernels(registry);
  RegisterArgReduceCpuKernels(registry);
  RegisterCumSumCpuKernels(registry);
  RegisterTopKCpuKernels(registry);
}

}  // namespace onnx_amp
