// The table of kernels by (domain, op type, device). It is filled by explicit calls
// (ops/cpu_kernels.cc lists every family), never by static initialisers.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "runtime/exec/kernel.h"

namespace onnx_amp {

class KernelRegistry {
 public:
  // Registering the same (domain, op type, device) twice is a bug and asserts.
  void Register(const KernelDef& def);
  const KernelDef* Find(std::string_view domain, std::string_view op_type, DeviceKind device) const;
  std::vector<const KernelDef*> All() const;

 private:
  std::map<std::tuple<std::string, std::string, DeviceKind>, KernelDef> kernels_;
};

// All CPU kernels; built on first use.
const KernelRegistry& CpuKernelRegistry();

}  // namespace onnx_amp
