// Registers the CPU kernels of the optimizer-step ops (domain ai.onnx_amp).
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/training/training_kernels.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void RegisterTrainingCpuKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
  };
  static constexpr Entry kEntries[] = {
      {"UnscaleAndCheck", UnscaleAndCheckKernel},
      {"GlobalNormClip", GlobalNormClipKernel},
      {"SgdUpdate", SgdUpdateKernel},
      {"AdamUpdate", AdamUpdateKernel},
      {"AdamWUpdate", AdamWUpdateKernel},
      {"RmspropUpdate", RmspropUpdateKernel},
  };
  for (const Entry& entry : kEntries) {
    registry.Register(KernelDef{kOnnxAmpDomain, entry.op_type, DeviceKind::kCpu, entry.compute});
  }
}

}  // namespace onnx_amp
