#include "ops/cpu_kernels.h"
#include "ops/elementwise/elementwise_families.h"

namespace onnx_amp {

void RegisterElementwiseCpuKernels(KernelRegistry& registry) {
  RegisterUnaryMathCpuKernels(registry);
  RegisterLaneUnaryCpuKernels(registry);
  RegisterActivationCpuKernels(registry);
  RegisterBinaryArithmeticCpuKernels(registry);
  RegisterLogicCpuKernels(registry);
  RegisterCompareCpuKernels(registry);
  RegisterVariadicCpuKernels(registry);
  RegisterWhereCpuKernels(registry);
  RegisterClipCpuKernels(registry);
  RegisterCastCpuKernels(registry);
}

}  // namespace onnx_amp
