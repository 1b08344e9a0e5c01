#include "runtime/train/optimizer.h"

#include <cmath>
#include <numbers>
#include <string>

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

int SlotCount(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return config.momentum != 0.0f ? 1 : 0;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 2;
    case OptimizerKind::kRmsprop:
      return 1;
  }
  return 0;
}

Optimizer::Optimizer(const OptimizerConfig& config, std::span<const Shape> shapes)
    : config_(config), num_slots_(SlotCount(config)) {
  for (int k = 0; k < num_slots_; ++k) {
    for (const Shape& shape : shapes) slots_[k].push_back(Tensor::Zeros(DType::kFloat32, shape));
  }
}

std::vector<Tensor>& Optimizer::slots(int k) {
  ONNX_AMP_ASSERT(k >= 0 && k < num_slots_, "optimizer slot index out of range");
  return slots_[k];
}

const std::vector<Tensor>& Optimizer::slots(int k) const {
  ONNX_AMP_ASSERT(k >= 0 && k < num_slots_, "optimizer slot index out of range");
  return slots_[k];
}

}  // namespace onnx_amp
