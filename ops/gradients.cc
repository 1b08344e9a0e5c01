#include "ops/gradients.h"

#include "runtime/core/status.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

namespace {

const GradientRegistry& Rules() {
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

}  // namespace

void GradientRegistry::Register(std::string_view domain, std::string_view op_type, GradientRule rule) {
  const bool inserted =
      rules_.emplace(std::make_pair(std::string(CanonicalDomain(domain)), std::string(op_type)), rule).second;
  ONNX_AMP_ASSERT(inserted, "gradient rule registered twice");
}

GradientRule GradientRegistry::Find(std::string_view domain, std::string_view op_type) const {
  auto it = rules_.find(std::make_pair(std::string(CanonicalDomain(domain)), std::string(op_type)));
  return it == rules_.end() ? nullptr : it->second;
}

GradientRule FindGradientRule(std::string_view domain, std::string_view op_type) {
  return Rules().Find(domain, op_type);
}

}  // namespace onnx_amp
