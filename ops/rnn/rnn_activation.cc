#include "ops/rnn/rnn_activation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include "ops/common/elementwise_math.h"
#include "ops/common/lane_functions.h"

namespace onnx_amp {
namespace {

struct ActivationInfo {
  const char* name;
  RnnActivationKind kind;
  bool takes_alpha;
  bool takes_beta;
  float default_alpha;
  float default_beta;
};

constexpr ActivationInfo kActivations[] = {
    {"relu", RnnActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", RnnActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", RnnActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", RnnActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RnnActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", RnnActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", RnnActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"softsign", RnnActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", RnnActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
};

const ActivationInfo& InfoOf(RnnActivationKind kind) {
  for (const ActivationInfo& info : kActivations) {
    if (info.kind == kind) return info;
  }
  ONNX_AMP_ASSERT(false, "every activation kind is in the table");
  return kActivations[0];
}

const ActivationInfo* FindByName(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const ActivationInfo& info : kActivations) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

template <typename Op>
void ApplyOp(const Op& op, float* values, int64_t count) {
  for (int64_t i = 0; i < count; ++i) values[i] = op(values[i]);
}

}  // namespace

void RnnActivation::ApplyInPlace(float* values, int64_t count) const {
  switch (kind) {
    case RnnActivationKind::kRelu: return ApplyOp(ReluOp{}, values, count);
    case RnnActivationKind::kTanh: return ApplyLaneFunction(LaneFunction::kTanh, values, values, count);
    case RnnActivationKind::kSigmoid: return ApplyLaneFunction(LaneFunction::kSigmoid, values, values, count);
    case RnnActivationKind::kAffine:
      for (int64_t i = 0; i < count; ++i) values[i] = alpha * values[i] + beta;
      return;
    case RnnActivationKind::kLeakyRelu: return ApplyOp(LeakyReluOp{alpha}, values, count);
    case RnnActivationKind::kThresholdedRelu: return ApplyOp(ThresholdedReluOp{alpha}, values, count);
    case RnnActivationKind::kScaledTanh:
      for (int64_t i = 0; i < count; ++i) values[i] = alpha * std::tanh(beta * values[i]);
      return;
    case RnnActivationKind::kHardSigmoid: return ApplyOp(HardSigmoidOp{alpha, beta}, values, count);
    case RnnActivationKind::kElu: return ApplyOp(EluOp{alpha}, values, count);
    case RnnActivationKind::kSoftsign: return ApplyOp(SoftsignOp{}, values, count);
    case RnnActivationKind::kSoftplus: return ApplyOp(SoftplusOp{}, values, count);
  }
}

Expected<std::vector<RnnActivation>> ReadRnnActivations(const KernelContext& context, int64_t directions,
                                                        const std::vector<RnnActivationKind>& defaults) {
  const size_t per_direction = defaults.size();
  const size_t total = per_direction * static_cast<size_t>(directions);
  std::vector<const ActivationInfo*> infos;
  const std::vector<std::string> names = context.attr_strings("activations");
  if (names.empty()) {
    for (size_t i = 0; i < total; ++i) infos.push_back(&InfoOf(defaults[i % per_direction]));
  } else {
    if (names.size() != total && !(directions == 2 && names.size() == per_direction)) {
      return context.Error(ErrorCode::kInvalidModel,
                           "activations lists " + std::to_string(names.size()) + " functions, expected " +
                               std::to_string(total) + " (" + std::to_string(per_direction) + " per direction)");
    }
    for (size_t i = 0; i < total; ++i) {
      const std::string& name = names[i % names.size()];
      const ActivationInfo* info = FindByName(name);
      if (info == nullptr) return context.Error(ErrorCode::kUnsupported, "unknown activation '" + name + "'");
      infos.push_back(info);
    }
  }
  const std::vector<float> alphas = context.attr_floats("activation_alpha");
  const std::vector<float> betas = context.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<RnnActivation> activations;
  for (const ActivationInfo* info : infos) {
    RnnActivation activation{info->kind, info->default_alpha, info->default_beta};
    if (info->takes_alpha && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (info->takes_beta && next_beta < betas.size()) activation.beta = betas[next_beta++];
    activations.push_back(activation);
  }
  return activations;
}

}  // namespace onnx_amp
