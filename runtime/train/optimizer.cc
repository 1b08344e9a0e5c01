#include "runtime/train/optimizer.h"

#include <cmath>
#include <numbers>
#include <string>

#include "runtime/train/optimizer_math.h"

namespace onnx_amp {

Expected<OptimizerKind> ParseOptimizerKind(std::string_view name) {
  if (name == "sgd") return OptimizerKind::kSgd;
  if (name == "adam") return OptimizerKind::kAdam;
  if (name == "adamw") return OptimizerKind::kAdamW;
  if (name == "rmsprop") return OptimizerKind::kRmsprop;
  return InvalidArgument("--optimizer '" + std::string(name) + "': expected sgd, adam, adamw or rmsprop");
}

Expected<LrScheduleKind> ParseLrScheduleKind(std::string_view name) {
  if (name == "constant") return LrScheduleKind::kConstant;
  if (name == "step") return LrScheduleKind::kStep;
  if (name == "cosine") return LrScheduleKind::kCosine;
  return InvalidArgument("--lr-schedule '" + std::string(name) + "': expected constant, step or cosine");
}

float ScheduledLearningRate(const LrSchedule& schedule, float base, int64_t step) {
  switch (schedule.kind) {
    case LrScheduleKind::kConstant:
      return base;
    case LrScheduleKind::kStep:
      return base * std::pow(schedule.gamma, static_cast<float>(step / std::max<int64_t>(schedule.step_size, 1)));
    case LrScheduleKind::kCosine: {
      if (schedule.total_steps <= 0) return base;
      const double t = std::min<double>(static_cast<double>(step) / static_cast<double>(schedule.total_steps), 1.0);
      return static_cast<float>(0.5 * base * (1.0 + std::cos(std::numbers::pi * t)));
    }
  }
  return base;
}

Optimizer::Optimizer(const OptimizerConfig& config, std::span<const int64_t> sizes) : config_(config) {
  const bool two_slots = config.kind == OptimizerKind::kAdam || config.kind == OptimizerKind::kAdamW;
  const bool one_slot = two_slots || config.kind == OptimizerKind::kRmsprop ||
                        (config.kind == OptimizerKind::kSgd && config.momentum != 0.0f);
  for (int64_t size : sizes) {
    slots_[0].emplace_back(one_slot ? static_cast<size_t>(size) : 0, 0.0f);
    slots_[1].emplace_back(two_slots ? static_cast<size_t>(size) : 0, 0.0f);
  }
}

void Optimizer::Step(std::span<Tensor> weights, std::span<const Tensor> gradients, float learning_rate) {
  ONNX_AMP_ASSERT(weights.size() == slots_[0].size() && gradients.size() == weights.size(),
                  "optimizer step with a parameter count other than at construction");
  const OptimizerConfig& c = config_;
  const double t = static_cast<double>(step_count_ + 1);
  const float alpha = static_cast<float>(learning_rate * std::sqrt(1.0 - std::pow(c.beta2, t)) /
                                         (1.0 - std::pow(c.beta1, t)));
  const float decay_step = c.kind == OptimizerKind::kAdamW ? learning_rate * c.weight_decay : 0.0f;
  for (size_t p = 0; p < weights.size(); ++p) {
    float* w = weights[p].data<float>();
    const float* g = gradients[p].data<float>();
    const int64_t n = weights[p].num_elements();
    ONNX_AMP_ASSERT(gradients[p].num_elements() == n, "gradient and weight sizes differ");
    float* s0 = slots_[0][p].data();
    float* s1 = slots_[1][p].data();
    float unused = 0.0f;
    switch (c.kind) {
      case OptimizerKind::kSgd:
        for (int64_t i = 0; i < n; ++i) {
          SgdUpdate(w[i], s0 ? s0[i] : unused, g[i], learning_rate, c.momentum, c.nesterov);
        }
        break;
      case OptimizerKind::kAdam:
      case OptimizerKind::kAdamW:
        for (int64_t i = 0; i < n; ++i) AdamUpdate(w[i], s0[i], s1[i], g[i], alpha, c.beta1, c.beta2, c.epsilon, decay_step);
        break;
      case OptimizerKind::kRmsprop:
        for (int64_t i = 0; i < n; ++i) RmspropUpdate(w[i], s0[i], g[i], learning_rate, c.rho, c.epsilon);
        break;
    }
  }
  ++step_count_;
}

}  // namespace onnx_amp
