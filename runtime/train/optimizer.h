// The optimizer over float32 master weights: one fused pass over every parameter per
// step (optimizer_math.h per element), its state (slots and step count), and the
// learning-rate schedules. Defaults follow Keras.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

enum class OptimizerKind { kSgd, kAdam, kAdamW, kRmsprop };

Expected<OptimizerKind> ParseOptimizerKind(std::string_view name);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kRmsprop;
  float learning_rate = 0.001f;  // Keras: 0.001 for Adam/AdamW/RMSprop (SGD: 0.01)
  float momentum = 0.0f;         // SGD
  bool nesterov = false;         // SGD
  float beta1 = 0.9f;            // Adam, AdamW
  float beta2 = 0.999f;
  float rho = 0.9f;              // RMSprop
  float epsilon = 1e-7f;
  float weight_decay = 0.004f;   // AdamW (Keras default)
};

enum class LrScheduleKind { kConstant, kStep, kCosine };

Expected<LrScheduleKind> ParseLrScheduleKind(std::string_view name);

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  int64_t step_size = 1000;  // kStep: multiply by gamma every step_size steps
  float gamma = 0.1f;
  int64_t total_steps = 0;   // kCosine: decays to 0 over this many steps
};

// The learning rate for optimizer step `step` (0-based).
float ScheduledLearningRate(const LrSchedule& schedule, float base, int64_t step);

class Optimizer {
 public:
  // One slot set per parameter, sized by element count.
  Optimizer(const OptimizerConfig& config, std::span<const int64_t> sizes);

  const OptimizerConfig& config() const { return config_; }
  int64_t step_count() const { return step_count_; }
  // Slot 0: SGD velocity, Adam m, RMSprop v; slot 1: Adam v (empty otherwise).
  std::vector<std::vector<float>>& slots(int k) { return slots_[k]; }
  const std::vector<std::vector<float>>& slots(int k) const { return slots_[k]; }
  void set_step_count(int64_t count) { step_count_ = count; }

  // Updates `weights` (float32) from `gradients` (float32, unscaled) at `learning_rate`
  // and counts the step. Shapes must match the sizes given at construction.
  void Step(std::span<Tensor> weights, std::span<const Tensor> gradients, float learning_rate);

 private:
  OptimizerConfig config_;
  int64_t step_count_ = 0;
  std::vector<std::vector<float>> slots_[2];
};

}  // namespace onnx_amp
