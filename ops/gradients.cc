#include "ops/gradients.h"

#include "runtime/core/onnx_domain.h"
#include "runtime/core/status.h"

namespace onnx_amp {

const GradientRegistry& AllGradientRules() {
  static const GradientRegistry registry = [] {
    GradientRegistry r;
    RegisterElementwiseGradients(r);
    RegisterReductionGradients(r);
    RegisterLinalgGradients(r);
    RegisterConvGradients(r);
    RegisterNormalizationGradients(r);
    RegisterTensorGradients(r);
    return r;
  }();
  return registry;
}

void GradientRegistry::Register(std::string_view domain, std::string_view op_type, GradientRule rule) {
  const bool inserted =
      rules_.emplace(std::make_pair(std::string(CanonicalDomain(domain)), std::string(op_type)), rule).second;
  ONNX_AMP_ASSERT(inserted, "gradient rule registered twice");
}

GradientRule GradientRegistry::Find(std::string_view domain, std::string_view op_type) const {
  auto it = rules_.find(std::make_pair(std::string(CanonicalDomain(domain)), std::string(op_type)));
  return it == rules_.end() ? nullptr : it->second;
}

std::vector<std::pair<std::string, std::string>> GradientRegistry::Ops() const {
  std::vector<std::pair<std::string, std::string>> ops;
  ops.reserve(rules_.size());
  for (const auto& [key, rule] : rules_) ops.push_back(key);
  return ops;
}

GradientRule FindGradientRule(std::string_view domain, std::string_view op_type) {
  return AllGradientRules().Find(domain, op_type);
}

}  // namespace onnx_amp
