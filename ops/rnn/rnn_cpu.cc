// Registers the CPU kernels of the ops/rnn family.
#include "ops/cpu_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/rnn/rnn_kernels.h"

namespace onnx_amp {

void RegisterRnnCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "RNN", DeviceKind::kCpu, &RnnCpu});
  registry.Register({"", "GRU", DeviceKind::kCpu, &GruCpu});
  registry.Register({"", "LSTM", DeviceKind::kCpu, &LstmCpu});
}

}  // namespace onnx_amp
