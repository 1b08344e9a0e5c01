// One training step on the CPU executor: forward + float32 loss + backward seeded with
// the loss scale (over one or more micro-batches, scale constant, gradients summed),
// then unscale-and-check once, optional clipping by global norm (after unscaling, not on
// a skipped step), the optimizer on the float32 master weights unless a gradient or the
// loss was inf/NaN (a skipped step changes no weight, slot or step count), and the
// scaler update.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/executor.h"
#include "runtime/train/loss_scaler.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp {

struct TrainerConfig {
  OptimizerConfig optimizer;
  LrSchedule schedule;
  LossScalerConfig scaler;
  float clip_norm = 0.0f;  // 0: no clipping
  int num_threads = 0;
};

struct Batch {
  Tensor data;    // the model's input shape
  Tensor target;  // int64 [N, 1] labels or float [N, ...]
};

struct StepResult {
  float loss = 0.0f;   // mean over micro-batches (unscaled)
  float scale = 1.0f;  // the scale this step ran with
  bool skipped = false;
  std::string first_non_finite;
};

struct EvalResult {
  double loss_sum = 0.0;  // sum of per-batch mean losses times batch size
  int64_t correct = 0;    // argmax(prediction) == label (sparse labels only)
  int64_t count = 0;
};

class Trainer {
 public:
  static Expected<std::unique_ptr<Trainer>> Create(TrainingGraph graph, const TrainerConfig& config);

  // One optimizer step over `micro_batches` (at least one).
  Expected<StepResult> Step(std::span<const Batch> micro_batches);
  // Adds one batch's loss and accuracy to `result`; weights unchanged.
  Status Evaluate(const Batch& batch, EvalResult& result);

  const TrainingGraph& graph() const { return graph_; }
  std::vector<NamedTensor>& weights() { return graph_.parameters; }
  Optimizer& optimizer() { return optimizer_; }
  LossScaler& scaler() { return scaler_; }

 private:
  Trainer(TrainingGraph graph, const TrainerConfig& config, std::vector<int64_t> sizes);
  std::map<std::string, Tensor> Feeds(const Batch& batch) const;

  TrainingGraph graph_;
  TrainerConfig config_;
  Optimizer optimizer_;
  LossScaler scaler_;
  std::unique_ptr<Executor> train_;
  std::unique_ptr<Executor> eval_;
  std::vector<Tensor> gradients_;  // float32, summed over micro-batches
};

// Sizes of the parameters, in order.
std::vector<int64_t> ParameterSizes(const std::vector<NamedTensor>& parameters);

}  // namespace onnx_amp
