// Registers the CPU kernels of the ops/linalg family.
#include <string_view>

#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/linalg/linalg_kernels.h"

namespace onnx_amp {

void RegisterLinalgCpuKernels(KernelRegistry& registry) {
  // MatMul and Gemm apply a fused activation and may store a widened output
  // (KernelDef::fuses_activation, fuses_widening_cast); MatMul adds a folded bias row
  // (fuses_bias_add: Gemm has its own C).
  for (const auto& [op_type, compute] : {std::pair{"MatMul", &MatMulCpu}, std::pair{"Gemm", &GemmCpu}}) {
    KernelDef def{"", op_type, DeviceKind::kCpu, compute};
    def.fuses_activation = true;
    def.fuses_widening_cast = true;
    def.fuses_bias_add = std::string_view(op_type) == "MatMul";
    registry.Register(def);
  }
  registry.Register({"", "Einsum", DeviceKind::kCpu, &EinsumCpu});
}

}  // namespace onnx_amp
