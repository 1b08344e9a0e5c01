#include "runtime/train/training_loop.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/train/checkpoint.h"

namespace onnx_amp {
namespace {

using Clock = std::chrono::steady_clock;

class MetricsFile {
 public:
  Status Open(const std::filesystem::path& path, bool append) {
    if (path.empty()) return Status::Ok();
    file_.open(path, append ? std::ios::app : std::ios::trunc);
    if (!file_) return IoError(path.string() + ": cannot open for writing");
    return Status::Ok();
  }
  void Write(const nlohmann::json& line) {
    if (file_.is_open()) file_ << line.dump() << '\n' << std::flush;
  }

 private:
  std::ofstream file_;
};

// What a batch needs from the model: its input shape without the batch axis, and the
// class count of its output [N, classes].
struct BatchLayout {
  Shape sample;
  int64_t classes = 0;
};

Expected<BatchLayout> ReadBatchLayout(const TrainingGraph& graph) {
  BatchLayout layout;
  for (const onnx::ValueInfoProto& input : graph.eval_model.graph().input()) {
    if (input.name() != graph.data_input) continue;
    const auto& dims = input.type().tensor_type().shape().dim();
    for (int d = 1; d < dims.size(); ++d) {
      if (dims[d].dim_value() <= 0) return InvalidArgument("input '" + input.name() + "' needs fixed non-batch dims");
      layout.sample.push_back(dims[d].dim_value());
    }
  }
  for (const onnx::ValueInfoProto& output : graph.eval_model.graph().output()) {
    if (output.name() != graph.prediction_output) continue;
    const auto& dims = output.type().tensor_type().shape().dim();
    if (dims.size() == 2) layout.classes = dims[1].dim_value();
  }
  if (layout.classes <= 0) {
    return InvalidArgument("output '" + graph.prediction_output + "' needs a fixed shape [N, classes]");
  }
  return layout;
}

// Under data parallelism each rank evaluates every ranks-th batch and the counts are summed.
Expected<EvalResult> EvaluateSet(Trainer& trainer, const Dataset& data, const BatchLayout& layout, int64_t batch_size) {
  EvalResult result;
  std::vector<int64_t> indices;
  ReplicaSync* sync = trainer.replica_sync();
  const int64_t stride = batch_size * (sync != nullptr ? sync->ranks() : 1);
  for (int64_t start = sync != nullptr ? batch_size * sync->rank() : 0; start < data.size(); start += stride) {
    indices.clear();
    for (int64_t i = start; i < std::min(start + batch_size, data.size()); ++i) indices.push_back(i);
    ONNX_AMP_ASSIGN_OR_RETURN(Batch batch,
                              MakeBatch(data, indices, layout.sample, trainer.graph().loss, layout.classes));
    ONNX_AMP_RETURN_IF_ERROR(trainer.Evaluate(batch, result));
  }
  if (sync != nullptr) {
    double sums[3] = {result.loss_sum, static_cast<double>(result.correct), static_cast<double>(result.count)};
    ONNX_AMP_RETURN_IF_ERROR(sync->SumValues(sums, "the evaluation counts"));
    result = {sums[0], static_cast<int64_t>(sums[1]), static_cast<int64_t>(sums[2])};
  }
  return result;
}

// The loop's state between steps: where the data stream stands and the epoch's tallies.
class TrainingRun {
 public:
  TrainingRun(Trainer& trainer, const TrainingData& data, const TrainingRunOptions& options,
              const TrainingCallbacks& callbacks, StepPlan plan, BatchLayout layout)
      : trainer_(trainer),
        data_(data),
        options_(options),
        callbacks_(callbacks),
        plan_(plan),
        layout_(std::move(layout)),
        sync_(trainer.replica_sync()),
        rank_(sync_ != nullptr ? sync_->rank() : 0),
        ranks_(sync_ != nullptr ? sync_->ranks() : 1) {}

  Status Run() {
    ONNX_AMP_RETURN_IF_ERROR(Start());
    std::vector<Batch> prefetched;
    while (position_.global_step < plan_.total_steps) {
      std::vector<Batch> micro_batches = std::move(prefetched);
      prefetched.clear();
      if (micro_batches.empty()) {
        ONNX_AMP_ASSIGN_OR_RETURN(micro_batches, MicroBatches(position_.batch, order_));
      }
      const auto start = Clock::now();
      // On a device, the next step's batch is made and its copy started while this
      // step runs.
      const auto prefetch = [&]() -> Status {
        if (!trainer_.stages_batches() || options_.accumulation_steps != 1 ||
            position_.global_step + 1 >= plan_.total_steps) {
          return Status::Ok();
        }
        const bool next_epoch = position_.batch + 1 == plan_.steps_per_epoch;
        if (next_epoch) next_order_ = EpochOrder(data_.train.size(), position_.seed, position_.epoch + 1);
        ONNX_AMP_ASSIGN_OR_RETURN(prefetched, MicroBatches(next_epoch ? 0 : position_.batch + 1,
                                                           next_epoch ? next_order_ : order_));
        return trainer_.Stage(prefetched.front());
      };
      ONNX_AMP_ASSIGN_OR_RETURN(StepResult step, trainer_.Step(micro_batches, prefetch));
      const double step_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      ++position_.batch;
      ++position_.global_step;
      if (!step.skipped) epoch_loss_ += step.loss;
      epoch_steps_ += !step.skipped;
      epoch_skipped_ += step.skipped;
      nlohmann::json line = {{"step", position_.global_step}, {"loss", step.loss}, {"scale", step.scale},
                             {"skipped", step.skipped}, {"step_ms", step_ms}};
      if (!step.note.empty()) line["note"] = step.note;  // how the step ran, once per reason
      metrics_.Write(line);
      if (callbacks_.step_done) {
        callbacks_.step_done(StepProgress{position_.epoch + 1, position_.batch, plan_.steps_per_epoch,
                                          position_.global_step, std::move(step), step_ms});
      }
      const bool epoch_done = position_.batch == plan_.steps_per_epoch;
      if (epoch_done || position_.global_step == plan_.total_steps) ONNX_AMP_RETURN_IF_ERROR(FinishEpoch());
      if (epoch_done) {
        ++position_.epoch;
        position_.batch = 0;
        order_ = EpochOrder(data_.train.size(), position_.seed, position_.epoch);
      }
      const bool last = position_.global_step == plan_.total_steps;
      const bool every = options_.checkpoint_every > 0 && position_.global_step % options_.checkpoint_every == 0;
      const bool save = !checkpoint_.empty() && (last || every);
      // Replicas that drifted apart (a bug, or a rank whose memory went bad) must not be saved.
      if (sync_ != nullptr && (save || last)) ONNX_AMP_RETURN_IF_ERROR(CheckReplicasAgree());
      if (save && rank_ == 0) ONNX_AMP_RETURN_IF_ERROR(SaveCheckpoint(checkpoint_, trainer_, position_));
    }
    return Status::Ok();
  }

 private:
  // Resumes from the checkpoint when asked and there is one, and opens the metrics file
  // (appending when resumed). Under data parallelism every rank reads the checkpoint, rank 0
  // alone writes files, and the ranks must start from the same state.
  Status Start() {
    position_.seed = options_.seed;
    position_.ranks = ranks_;
    if (!options_.checkpoint_dir.empty() && rank_ == 0) {
      std::error_code error;
      std::filesystem::create_directories(options_.checkpoint_dir, error);
      if (error) return IoError(options_.checkpoint_dir.string() + ": cannot create the folder: " + error.message());
    }
    if (!options_.checkpoint_dir.empty()) checkpoint_ = options_.checkpoint_dir / "checkpoint.npz";
    const bool resumed = options_.resume && std::filesystem::exists(checkpoint_);
    if (resumed) {
      ONNX_AMP_RETURN_IF_ERROR(LoadCheckpoint(checkpoint_, trainer_, position_));
      if (position_.ranks != ranks_) {
        return InvalidArgument(checkpoint_.string() + ": written by a run over " + std::to_string(position_.ranks) +
                               " rank(s); resume it with the same number (this run has " + std::to_string(ranks_) +
                               ")");
      }
      if (callbacks_.resumed) callbacks_.resumed(checkpoint_, position_.global_step);
    }
    if (sync_ != nullptr) ONNX_AMP_RETURN_IF_ERROR(CheckReplicasAgree());
    if (rank_ == 0) ONNX_AMP_RETURN_IF_ERROR(metrics_.Open(options_.metrics, resumed));
    order_ = EpochOrder(data_.train.size(), position_.seed, position_.epoch);
    epoch_start_ = Clock::now();
    return Status::Ok();
  }

  // The micro-batches of step `batch` of the epoch whose shuffle is `order`. Ranks split
  // every step's samples into contiguous shards, rank 0 first, so N ranks see together what
  // one rank with N times the batch would see.
  Expected<std::vector<Batch>> MicroBatches(int64_t batch, const std::vector<int64_t>& order) const {
    std::vector<Batch> micro_batches;
    for (int64_t k = 0; k < options_.accumulation_steps; ++k) {
      const int64_t micro_batch = (batch * ranks_ + rank_) * options_.accumulation_steps + k;
      const int64_t start = micro_batch * options_.batch_size;
      std::span<const int64_t> indices(order.data() + start, static_cast<size_t>(options_.batch_size));
      ONNX_AMP_ASSIGN_OR_RETURN(Batch batch, MakeBatch(data_.train, indices, layout_.sample, trainer_.graph().loss,
                                                       layout_.classes));
      micro_batches.push_back(std::move(batch));
    }
    return micro_batches;
  }

  // The summary of the epoch so far (with evaluation), to the callback and the metrics.
  Status FinishEpoch() {
    EpochSummary summary;
    summary.epoch = position_.epoch + 1;
    summary.train_loss = epoch_steps_ > 0 ? epoch_loss_ / static_cast<double>(epoch_steps_) : NAN;
    summary.loss_scale = trainer_.scaler().scale();
    summary.skipped_steps = epoch_skipped_;
    summary.seconds = std::chrono::duration<double>(Clock::now() - epoch_start_).count();
    nlohmann::json line = {{"epoch", summary.epoch},
                           {"train_loss", summary.train_loss},
                           {"loss_scale", summary.loss_scale},
                           {"skipped_steps", summary.skipped_steps},
                           {"seconds", summary.seconds}};
    if (data_.eval && data_.eval->size() > 0) {
      ONNX_AMP_ASSIGN_OR_RETURN(EvalResult eval, EvaluateSet(trainer_, *data_.eval, layout_, options_.batch_size * 8));
      summary.eval_loss = eval.loss_sum / static_cast<double>(eval.count);
      summary.eval_accuracy = static_cast<double>(eval.correct) / static_cast<double>(eval.count);
      line["eval_loss"] = *summary.eval_loss;
      line["eval_accuracy"] = *summary.eval_accuracy;
    }
    if (callbacks_.epoch_done) callbacks_.epoch_done(summary);
    metrics_.Write(line);
    epoch_loss_ = 0.0;
    epoch_steps_ = 0;
    epoch_skipped_ = 0;
    epoch_start_ = Clock::now();
    return Status::Ok();
  }

  Status CheckReplicasAgree() {
    return sync_->CheckSameState(ReplicaFingerprint(trainer_, position_, options_),
                                 "training state at step " + std::to_string(position_.global_step) +
                                     " (weights, optimizer, loss scale, data position, flags)");
  }

  Trainer& trainer_;
  const TrainingData& data_;
  const TrainingRunOptions& options_;
  const TrainingCallbacks& callbacks_;
  const StepPlan plan_;
  const BatchLayout layout_;
  ReplicaSync* const sync_;  // null: one process
  const int rank_;
  const int ranks_;
  std::filesystem::path checkpoint_;
  MetricsFile metrics_;
  DataPosition position_;
  std::vector<int64_t> order_;       // this epoch's shuffle
  std::vector<int64_t> next_order_;  // the next epoch's, while its first batch is prefetched
  Clock::time_point epoch_start_;
  double epoch_loss_ = 0.0;
  int64_t epoch_steps_ = 0;
  int64_t epoch_skipped_ = 0;
};

}  // namespace

Expected<StepPlan> PlanSteps(const TrainingRunOptions& options, int64_t train_samples, int ranks) {
  if (options.batch_size <= 0) return InvalidArgument("--batch-size must be positive");
  if (options.accumulation_steps <= 0) return InvalidArgument("--accumulation-steps must be positive");
  if ((options.checkpoint_every > 0 || options.resume) && options.checkpoint_dir.empty()) {
    return InvalidArgument("--checkpoint-every and --resume need --checkpoint-dir");
  }
  StepPlan plan;
  plan.steps_per_epoch = train_samples / (options.batch_size * options.accumulation_steps * ranks);
  if (plan.steps_per_epoch == 0) {
    return InvalidArgument(ranks == 1 ? "the training set is smaller than one step's batch"
                                      : "the training set is smaller than one step's batch over all ranks");
  }
  plan.total_steps = options.max_steps > 0 ? options.max_steps : options.epochs * plan.steps_per_epoch;
  return plan;
}

Status RunTraining(Trainer& trainer, const TrainingData& data, const TrainingRunOptions& options,
                   const TrainingCallbacks& callbacks) {
  ReplicaSync* sync = trainer.replica_sync();
  ONNX_AMP_ASSIGN_OR_RETURN(const StepPlan plan, PlanSteps(options, data.train.size(), sync ? sync->ranks() : 1));
  ONNX_AMP_ASSIGN_OR_RETURN(BatchLayout layout, ReadBatchLayout(trainer.graph()));
  TrainingRun run(trainer, data, options, callbacks, plan, std::move(layout));
  return run.Run();
}

}  // namespace onnx_amp
