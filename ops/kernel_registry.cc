#include "ops/kernel_registry.h"

#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

void KernelRegistry::Register(const KernelDef& def) {
  auto key = std::make_tuple(std::string(def.domain), std::string(def.op_type), def.device);
  const bool inserted = kernels_.emplace(std::move(key), def).second;
  ONNX_AMP_ASSERT(inserted, "kernel registered twice");
}

const KernelDef* KernelRegistry::Find(std::string_view domain, std::string_view op_type, DeviceKind device) const {
  auto it = kernels_.find(std::make_tuple(std::string(CanonicalDomain(domain)), std::string(op_type), device));
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<const KernelDef*> KernelRegistry::All() const {
  std::vector<const KernelDef*> all;
  all.reserve(kernels_.size());
  for (const auto& [key, def] : kernels_) all.push_back(&def);
  return all;
}

}  // namespace onnx_amp
