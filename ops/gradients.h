// The gradient rules: for each differentiable op, a function that writes its backward
// nodes into a GradientContext. Rules live next to their op family
// (ops/<family>/<family>_grad.cc); ops/gradients.cc is the one explicit list that calls
// each family's registration, and FindGradientRule looks a rule up by op.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/status.h"

namespace onnx_amp {

class GradientContext;

using GradientRule = Status (*)(GradientContext& context);

class GradientRegistry {
 public:
  // Registering one (domain, op type) twice is a bug and asserts.
  void Register(std::string_view domain, std::string_view op_type, GradientRule rule);
  GradientRule Find(std::string_view domain, std::string_view op_type) const;
  // Every (domain, op type) with a rule; "" is the default domain.
  std::vector<std::pair<std::string, std::string>> Ops() const;

 private:
  std::map<std::pair<std::string, std::string>, GradientRule, std::less<>> rules_;
};

// The rules of every family, registered on first use.
const GradientRegistry& AllGradientRules();
// "" and "ai.onnx" are both the default domain. nullptr when the op has no rule.
GradientRule FindGradientRule(std::string_view domain, std::string_view op_type);

// Each family's rules, defined in ops/<family>/<family>_grad.cc.
void RegisterElementwiseGradients(GradientRegistry& registry);    // arithmetic, unary math, activations, Cast, Where, Clip
void RegisterReductionGradients(GradientRegistry& registry);      // ReduceSum/Mean/L2/LogSumExp
void RegisterLinalgGradients(GradientRegistry& registry);         // MatMul, Gemm
void RegisterConvGradients(GradientRegistry& registry);           // Conv, MaxPool, AveragePool, GlobalAveragePool
void RegisterNormalizationGradients(GradientRegistry& registry);  // Softmax, LogSoftmax, the losses, BatchNorm, LayerNorm
void RegisterTensorGradients(GradientRegistry& registry);         // shape and data movement, Gather*, Pad, Dropout, Identity

}  // namespace onnx_amp
