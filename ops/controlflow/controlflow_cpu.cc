// The CPU kernels of ops/controlflow.
#include "ops/controlflow/controlflow_kernels.h"
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {

void RegisterControlFlowCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "If", DeviceKind::kCpu, &IfCpu});
  registry.Register({"", "Loop", DeviceKind::kCpu, &LoopCpu});
  registry.Register({"", "Scan", DeviceKind::kCpu, &ScanCpu});
  KernelDef identity{"", "Identity", DeviceKind::kCpu, &IdentityCpu};
  identity.channels_last = kElementWiseChannelsLast;
  registry.Register(identity);
  registry.Register({"", "Constant", DeviceKind::kCpu, &ConstantCpu});
}

}  // namespace onnx_amp
