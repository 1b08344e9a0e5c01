// Registers the CPU kernels of the ops/linalg family.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/linalg/linalg_kernels.h"

namespace onnx_amp {

void RegisterLinalgCpuKernels(KernelRegistry& registry) {
  // MatMul and Gemm apply a fused activation (KernelDef::fuses_activation).
  registry.Register({"", "MatMul", DeviceKind::kCpu, &MatMulCpu, false, true});
  registry.Register({"", "Gemm", DeviceKind::kCpu, &GemmCpu, false, true});
  registry.Register({"", "Einsum", DeviceKind::kCpu, &EinsumCpu});
}

}  // namespace onnx_amp
