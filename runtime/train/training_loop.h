// A whole training run: epochs over seeded shuffles of the training set, one
// Trainer::Step per optimizer step (over `accumulation_steps` micro-batches), evaluation
// at the end of each epoch and of the run, atomic checkpoints from which `resume`
// continues bit-identically, and one JSON line per step and per epoch in the metrics
// file. Progress goes to the caller's callbacks, which decide what to print.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "runtime/core/status.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"

namespace onnx_amp {

struct TrainingRunOptions {
  int64_t batch_size = 32;         // samples per micro-batch
  int64_t accumulation_steps = 1;  // micro-batches per optimizer step
  int64_t epochs = 1;
  int64_t max_steps = 0;  // > 0: this many optimizer steps instead of `epochs`
  uint64_t seed = 0;      // of the data shuffle
  std::filesystem::path checkpoint_dir;  // empty: no checkpoints
  int64_t checkpoint_every = 0;          // steps between checkpoints (one is always written at the end)
  bool resume = false;                   // continue from the checkpoint in checkpoint_dir, if there is one
  std::filesystem::path metrics;         // JSON lines; empty: none
};

struct StepPlan {
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
};

// The run's length, for the learning-rate schedule and the loop; a step takes batch_size x
// accumulation_steps samples on each of `ranks` data-parallel ranks. Errors:
// InvalidArgument, naming the flag, for a batch size or accumulation below 1, checkpoint
// options without a checkpoint folder, or a training set smaller than one step's batch.
Expected<StepPlan> PlanSteps(const TrainingRunOptions& options, int64_t train_samples, int ranks = 1);

struct StepProgress {
  int64_t epoch = 0;            // 1-based
  int64_t batch = 0;            // steps taken in this epoch
  int64_t steps_per_epoch = 0;
  int64_t global_step = 0;      // steps taken (or skipped) in the run
  StepResult result;
  double milliseconds = 0.0;    // of Trainer::Step
};

struct EpochSummary {
  int64_t epoch = 0;            // 1-based
  double train_loss = NAN;      // mean loss of the epoch's steps that were not skipped
  float loss_scale = 1.0f;
  int64_t skipped_steps = 0;
  double seconds = 0.0;
  std::optional<double> eval_loss;      // when the data has an evaluation set
  std::optional<double> eval_accuracy;  // argmax(prediction) == label
};

struct TrainingCallbacks {
  std::function<void(const std::filesystem::path& checkpoint, int64_t global_step)> resumed;
  std::function<void(const StepProgress&)> step_done;
  std::function<void(const EpochSummary&)> epoch_done;  // also when the run ends mid-epoch
};

// Trains `trainer` on `data` (its schedule's total_steps should be PlanSteps'). With a
// ReplicaSync on the trainer (data parallelism, replica_sync.h) each rank trains on its
// shard of every step, evaluates its share of the evaluation set, and only rank 0 writes
// the metrics and checkpoints; every rank reads the checkpoint on resume. Errors:
// PlanSteps', the data's and checkpoints' (naming the file), and the trainer's.
Status RunTraining(Trainer& trainer, const TrainingData& data, const TrainingRunOptions& options,
                   const TrainingCallbacks& callbacks);

}  // namespace onnx_amp
