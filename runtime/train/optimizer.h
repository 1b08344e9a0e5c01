// The optimizer's configuration and state (slots and step count) over float32 master
// weights, and the learning-rate schedules. Defaults follow Keras; the per-element
// update is optimizer_math.h, run by the update ops of the update graph.
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

// How many slots the optimizer keeps per parameter: SGD with momentum 1 (velocity), plain
// SGD 0, Adam and AdamW 2 (m, v), RMSprop 1 (v).
int SlotCount(const OptimizerConfig& config);

// The optimizer's state on float32 master weights. The update itself runs in the update
// graph (update_graph.h), which takes the slots in and hands new ones back.
class Optimizer {
 public:
  // Zero slots shaped like each parameter.
  Optimizer(const OptimizerConfig& config, std::span<const Shape> shapes);

  const OptimizerConfig& config() const { return config_; }
  int num_slots() const { return num_slots_; }
  // Slot k < num_slots() of every parameter, in parameter order (float32, the
  // parameter's shape). Slot 0: SGD velocity, Adam m, RMSprop v; slot 1: Adam v.
  std::vector<Tensor>& slots(int k);
  const std::vector<Tensor>& slots(int k) const;

  // Updates applied so far (skipped steps do not count).
  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t count) { step_count_ = count; }
  void CountStep() { ++step_count_; }

 private:
  OptimizerConfig config_;
  int num_slots_;
  int64_t step_count_ = 0;
  std::vector<Tensor> slots_[2];
};

}  // namespace onnx_amp
