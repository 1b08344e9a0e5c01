// One training step, as two graphs run by the same CPU executor:
//   1. the training graph (forward + float32 loss + backward seeded with the loss scale),
//      once per micro-batch; the float32 gradients are summed over micro-batches (one
//      micro-batch: its gradients are used as they come, no copy);
//   2. the update graph (update_graph.h): unscale-and-check once, the mean over
//      micro-batches and optional clipping by global norm (after unscaling), and the
//      optimizer's update op per parameter, skipped when a gradient or the loss was
//      inf/NaN. It takes the master weights and slots in and hands the new ones back;
//      the trainer keeps those tensors (no copy), and a skipped step keeps the old ones,
//      so weights, slots and the step count stay bit-identical. With
//      TrainerConfig::weight_copies it also rewrites the weights' low-precision copies
//      that the training graph then reads in place of its weight Casts (weight_copies.h).
// The loss scaler's state machine stays here, fed by the update graph's skip flag and
// first non-finite gradient.
//
// On a device that can capture its work, a steady step (same batch shape, one
// micro-batch, one process) is captured once as a graph of both runs and then replayed:
// one launch instead of one per kernel (step_capture_policy.h says when; the captured
// step's fixed device inputs are in captured_step.h).
//
// Why two graphs even for one micro-batch: the update must see the sum over every
// micro-batch, unscaled once, so it cannot sit inside the per-micro-batch graph; one
// design for both cases keeps a single path, and feeding one graph's outputs to the
// other costs no copy. The training graph also stays a plain gradient graph that
// `onnx-amp run` can check against a reference.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/thread_pool.h"
#include "runtime/executor/executor.h"
#include "runtime/train/loss_scaler.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/replica_sync.h"
#include "runtime/train/step_capture_policy.h"
#include "runtime/train/training_graph.h"
#include "runtime/train/update_graph.h"

namespace onnx_amp {

class Device;

struct TrainerConfig {
  // Runs both graphs on this device where it has kernels (nullptr: the CPU); weights and
  // optimizer slots then live on the device between steps.
  Device* device = nullptr;
  OptimizerConfig optimizer;
  LrSchedule schedule;
  LossScalerConfig scaler;
  float clip_norm = 0.0f;  // 0: no clipping
  int num_threads = 0;
  size_t max_memory_bytes = 0;  // ExecutorOptions::max_memory_bytes of each graph's runs
  // On a device that supports it: capture the steady step in a graph and replay it.
  bool capture_steps = true;
  // On the CPU under a mixed policy: keep the weights' low-precision copies between steps,
  // rewritten by the update, instead of casting each weight in every micro-batch
  // (weight_copies.h). It pays when steps have several micro-batches, and costs memory:
  // the Casts' outputs live only while a step's graph needs them, where the copies stay
  // (MLP U=4096, mixed_bfloat16, peak RSS: one micro-batch of 1024, 363 MiB against 323
  // without; 4 of 256, 494 MiB against 454, and float32 457). Off by default.
  bool weight_copies = false;
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
  // How the step ran when that changed or fell back for a new reason (a CUDA graph
  // captured; why a step runs eagerly), once per reason; usually "".
  std::string note;
};

struct EvalResult {
  double loss_sum = 0.0;  // sum of per-batch mean losses times batch size
  int64_t correct = 0;    // argmax(prediction) == label (sparse labels only)
  int64_t count = 0;
};

struct CapturedStep;

class Trainer {
 public:
  ~Trainer();
  static Expected<std::unique_ptr<Trainer>> Create(TrainingGraph graph, const TrainerConfig& config);

  // One optimizer step over `micro_batches` (at least one). `while_queued` runs once the
  // step's device work is queued and before its results are awaited (the training loop
  // makes and stages the next batch there).
  Expected<StepResult> Step(std::span<const Batch> micro_batches, const std::function<Status()>& while_queued = {});
  // On a device: starts copying `batch` there (through page-locked memory, on the copy
  // queue, beside the queued step); the next Step or Evaluate given this batch takes the
  // copy. Does nothing on the CPU.
  Status Stage(const Batch& batch);
  bool stages_batches() const { return config_.device != nullptr; }
  // Adds one batch's loss and accuracy to `result`; weights unchanged.
  Status Evaluate(const Batch& batch, EvalResult& result);

  const TrainingGraph& graph() const { return graph_; }
  const onnx::ModelProto& update_model() const { return update_.model; }
  // Whether the training graph reads weight copies that the update keeps
  // (TrainerConfig::weight_copies, where a weight is cast to float16/bfloat16 on the CPU).
  bool keeps_weight_copies() const;
  // The master weights and the optimizer's slots live on the device while training on
  // one; call MoveStateToHost() before reading or replacing them on the host (the next
  // Step or Evaluate takes them back).
  Status MoveStateToHost();
  // Writing through the non-const form is allowed: the weights' low-precision copies
  // are made afresh from them before the next step.
  std::vector<NamedTensor>& weights() {
    copies_stale_ = true;
    return graph_.parameters;
  }
  const std::vector<NamedTensor>& weights() const { return graph_.parameters; }
  Optimizer& optimizer() { return optimizer_; }
  const Optimizer& optimizer() const { return optimizer_; }
  LossScaler& scaler() { return scaler_; }
  // Data-parallel training: the step's gradients and loss are summed over the replicas
  // before the update graph, and the skip decision is theirs together; on the CPU, a sync
  // that overlaps the backward pass gets each gradient as soon as the executor finishes it.
  // Null (the default): a single process. Not owned.
  void set_replica_sync(ReplicaSync* sync);
  ReplicaSync* replica_sync() const { return sync_; }
  // Time per op type in the step and update graphs' runs (Step, not Evaluate) since the
  // trainer was made or ResetOpTimes was called. A replayed device graph adds nothing.
  const OpTimeTotals& op_times() const { return op_times_; }
  void ResetOpTimes() { op_times_ = {}; }

 private:
  Trainer(TrainingGraph graph, UpdateGraph update, const TrainerConfig& config, std::vector<Shape> shapes);
  // The batch's tensors as the graphs are fed them: its staged device copy when it has one.
  Expected<std::map<std::string, Tensor>> Feeds(const Batch& batch);
  // Runs the update graph on the step's summed gradients and `loss` (the float32 mean
  // loss, on the host or the device) and takes its results.
  Status Update(std::vector<Tensor> gradients, int64_t micro_batches, const Tensor& loss, StepResult& result,
                const std::function<Status()>& while_queued);
  // Takes micro-batch gradient `p` of the training graph: checks it, and keeps it in
  // `gradients` (one micro-batch) or adds it to the float32 sums (several; the `first`
  // micro-batch of the step starts them).
  Status TakeGradient(size_t p, const Tensor& produced, const std::string& name, bool accumulate, bool first,
                      std::vector<Tensor>& gradients);
  // The update graph's skip decision (with the replicas'), the scaler told, `result` filled.
  Status TakeSkipDecision(bool skip, int64_t first, StepResult& result);
  // The step as a captured graph: captures it first when `capture`. False when the
  // capture failed (result.note says why; nothing ran, the caller runs the step eagerly).
  Expected<bool> GraphStep(const Batch& batch, bool capture, StepResult& result,
                           const std::function<Status()>& while_queued);
  // The fixed device inputs of the captured step, written for this step.
  Status WriteCapturedInputs(const Batch& batch, float scale);
  // Records both runs of a step into captured_->graph.
  Status CaptureStep();
  // Weights and slots onto the device the graphs run on (nothing on the CPU).
  Status MoveStateToDevice();
  // A host copy of a graph output (the tensor itself on the CPU).
  Expected<Tensor> OnHost(const Tensor& tensor) const;
  // Makes the weights' low-precision copies from the weights where they may differ.
  void RefreshCopies();

  TrainingGraph graph_;
  UpdateGraph update_;
  TrainerConfig config_;
  Optimizer optimizer_;
  LossScaler scaler_;
  std::unique_ptr<Executor> train_;
  std::unique_ptr<Executor> eval_;
  std::unique_ptr<Executor> update_executor_;
  std::vector<Tensor> sums_;  // float32 gradient sums, used when a step has several micro-batches
  ThreadPool threads_;        // for the sums
  // Per parameter, where the training graph reads a low-precision copy of it (on the CPU:
  // weight_copies.h): the copy's type (kUndefined: none), the graph inputs it feeds, and
  // the copy, which the update rewrites. Stale until made, and after the weights were
  // handed out for writing.
  std::vector<DType> copy_types_;
  std::vector<std::vector<std::string>> copy_inputs_;
  std::vector<Tensor> copies_;
  bool copies_stale_ = true;
  OpTimeTotals op_times_;

  // Two staging slots in turn: a batch's page-locked copy and device copy. A slot is
  // rewritten two stages later, when the step that read it has finished (every step
  // waits for its results).
  struct StagedBatch {
    const void* host_data = nullptr;  // the staged batch's host tensors; nullptr: free
    const void* host_target = nullptr;
    std::shared_ptr<Buffer> pinned;
    Batch on_device;
  };
  StagedBatch staged_[2];
  int next_slot_ = 0;
  ReplicaSync* sync_ = nullptr;
  StepCapturePolicy capture_policy_;
  std::unique_ptr<CapturedStep> captured_;  // the captured step's device state and graph
};

}  // namespace onnx_amp
