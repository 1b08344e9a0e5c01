#include "runtime/train/trainer.h"

#include <cstring>

#include "runtime/exec/device.h"
#include "runtime/train/captured_step.h"
#include "runtime/train/weight_copies.h"

namespace onnx_amp {

namespace {

// Elements per chunk of the gradient sums: enough to pay for handing a chunk to a thread.
constexpr int64_t kSumGrain = 1 << 15;

std::vector<Shape> ParameterShapes(const std::vector<NamedTensor>& parameters) {
  std::vector<Shape> shapes;
  for (const NamedTensor& parameter : parameters) shapes.push_back(parameter.tensor.shape());
  return shapes;
}

template <typename T>
Tensor Scalar(T value) {
  Tensor tensor = Tensor::Empty(DTypeOf<T>::value, {});
  *tensor.data<T>() = value;
  return tensor;
}

}  // namespace

Trainer::Trainer(TrainingGraph graph, UpdateGraph update, const TrainerConfig& config, std::vector<Shape> shapes)
    : graph_(std::move(graph)),
      update_(std::move(update)),
      config_(config),
      optimizer_(config.optimizer, shapes),
      scaler_(config.scaler),
      threads_(config.num_threads) {}

Trainer::~Trainer() = default;

Expected<std::unique_ptr<Trainer>> Trainer::Create(TrainingGraph graph, const TrainerConfig& config) {
  ONNX_AMP_RETURN_IF_ERROR(config.scaler.Validate());
  // Low-precision weight copies made by the update, once per step (weight_copies.h);
  // graph_.train_model stays the plain gradient graph either way.
  FoldedWeightCasts folded;
  if (config.weight_copies && config.device == nullptr) {
    folded = FoldWeightCasts(graph.train_model, graph.parameters);
  } else {
    folded.model = graph.train_model;
  }
  // The trainer's weights, slots and copies are its own: the update overwrites them in place.
  ONNX_AMP_ASSIGN_OR_RETURN(UpdateGraph update,
                            BuildUpdateGraph(graph.parameters, config.optimizer, config.clip_norm, /*in_place=*/true,
                                             /*scaled=*/config.scaler.enabled, folded.copy_types));
  std::vector<Shape> shapes = ParameterShapes(graph.parameters);
  std::unique_ptr<Trainer> trainer(new Trainer(std::move(graph), std::move(update), config, std::move(shapes)));
  trainer->copy_types_ = std::move(folded.copy_types);
  trainer->copy_inputs_ = std::move(folded.copy_inputs);
  trainer->copies_.resize(trainer->copy_inputs_.size());
  ExecutorOptions options;
  options.num_threads = config.num_threads;
  options.max_memory_bytes = config.max_memory_bytes;
  options.device = config.device;
  // Gradients, new weights and slots stay where they are made; evaluation reads its
  // loss and predictions on the host.
  options.outputs_on_host = false;
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->train_, Executor::Create(std::move(folded.model), options));
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->update_executor_, Executor::Create(trainer->update_.model, options));
  options.outputs_on_host = true;
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->eval_, Executor::Create(trainer->graph_.eval_model, options));
  ONNX_AMP_RETURN_IF_ERROR(trainer->MoveStateToDevice());
  if (config.device != nullptr && config.capture_steps) {
    std::string unavailable;
    if (!config.device->SupportsCapture()) {
      unavailable = "the device cannot capture its work";
    } else if (std::string transfer = trainer->train_->FirstHostTransfer(); !transfer.empty()) {
      unavailable = "the training graph moves a " + transfer;
    } else if (std::string update = trainer->update_executor_->FirstHostTransfer(); !update.empty()) {
      unavailable = "the update graph moves a " + update;
    }
    trainer->capture_policy_ = StepCapturePolicy(unavailable);
  }
  return trainer;
}

Status Trainer::MoveStateToDevice() {
  if (config_.device == nullptr) return Status::Ok();
  for (NamedTensor& parameter : graph_.parameters) {
    ONNX_AMP_ASSIGN_OR_RETURN(parameter.tensor, CopyToDevice(parameter.tensor, *config_.device));
  }
  for (int k = 0; k < optimizer_.num_slots(); ++k) {
    for (Tensor& slot : optimizer_.slots(k)) {
      ONNX_AMP_ASSIGN_OR_RETURN(slot, CopyToDevice(slot, *config_.device));
    }
  }
  return Status::Ok();
}

Status Trainer::MoveStateToHost() {
  for (NamedTensor& parameter : graph_.parameters) {
    ONNX_AMP_ASSIGN_OR_RETURN(parameter.tensor, OnHost(parameter.tensor));
  }
  for (int k = 0; k < optimizer_.num_slots(); ++k) {
    for (Tensor& slot : optimizer_.slots(k)) {
      ONNX_AMP_ASSIGN_OR_RETURN(slot, OnHost(slot));
    }
  }
  return Status::Ok();
}

Expected<Tensor> Trainer::OnHost(const Tensor& tensor) const { return CopyToHost(tensor, config_.device); }

Status Trainer::Stage(const Batch& batch) {
  Device* device = config_.device;
  if (device == nullptr) return Status::Ok();
  StagedBatch& slot = staged_[next_slot_];
  next_slot_ ^= 1;
  // The host may refill page-locked memory only once the copies out of it are done.
  ONNX_AMP_RETURN_IF_ERROR(device->SynchronizeCopies());
  const size_t target_offset = (batch.data.bytes() + 63) / 64 * 64;
  const size_t bytes = target_offset + batch.target.bytes();
  if (!slot.pinned || slot.pinned->bytes() < bytes) {
    ONNX_AMP_ASSIGN_OR_RETURN(slot.pinned, device->AllocatePinned(bytes));
  }
  for (auto [from, to] : {std::pair{&batch.data, &slot.on_device.data}, std::pair{&batch.target, &slot.on_device.target}}) {
    if (to->defined() && to->dtype() == from->dtype() && to->shape() == from->shape()) continue;
    ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device->Allocate(from->bytes()));
    *to = Tensor(from->dtype(), from->shape(), std::move(buffer));
  }
  char* pinned = static_cast<char*>(slot.pinned->data());
  std::memcpy(pinned, batch.data.raw_data(), batch.data.bytes());
  std::memcpy(pinned + target_offset, batch.target.raw_data(), batch.target.bytes());
  ONNX_AMP_RETURN_IF_ERROR(device->CopyFromPinnedAsync(slot.on_device.data.raw_data(), pinned, batch.data.bytes()));
  ONNX_AMP_RETURN_IF_ERROR(
      device->CopyFromPinnedAsync(slot.on_device.target.raw_data(), pinned + target_offset, batch.target.bytes()));
  slot.host_data = batch.data.raw_data();
  slot.host_target = batch.target.raw_data();
  return Status::Ok();
}

Expected<std::map<std::string, Tensor>> Trainer::Feeds(const Batch& batch) {
  std::map<std::string, Tensor> feeds;
  feeds[graph_.data_input] = batch.data;
  feeds[graph_.target_input] = batch.target;
  for (StagedBatch& slot : staged_) {
    if (slot.host_data != batch.data.raw_data() || slot.host_target != batch.target.raw_data()) continue;
    // Taken once: a later batch at the same address is not mistaken for this one.
    slot.host_data = slot.host_target = nullptr;
    ONNX_AMP_RETURN_IF_ERROR(config_.device->WaitForCopies());
    feeds[graph_.data_input] = slot.on_device.data;
    feeds[graph_.target_input] = slot.on_device.target;
  }
  for (const NamedTensor& parameter : graph_.parameters) feeds[parameter.name] = parameter.tensor;
  return feeds;
}

bool Trainer::keeps_weight_copies() const {
  for (DType type : copy_types_) {
    if (type != DType::kUndefined) return true;
  }
  return false;
}

void Trainer::RefreshCopies() {
  if (!copies_stale_) return;
  for (size_t p = 0; p < copies_.size(); ++p) {
    if (copy_types_[p] != DType::kUndefined) copies_[p] = MakeWeightCopy(graph_.parameters[p].tensor, copy_types_[p]);
  }
  copies_stale_ = false;
}

Expected<StepResult> Trainer::Step(std::span<const Batch> micro_batches, const std::function<Status()>& while_queued) {
  ONNX_AMP_ASSERT(!micro_batches.empty(), "a training step needs a batch");
  ONNX_AMP_RETURN_IF_ERROR(MoveStateToDevice());
  StepResult result;
  result.scale = scaler_.scale();
  const StepConditions conditions{micro_batches.size(), sync_ != nullptr, micro_batches.front().data.shape(),
                                  micro_batches.front().target.shape()};
  const StepDecision decision = capture_policy_.Decide(conditions);
  result.note = decision.note;
  if (decision.mode != StepMode::kEager) {
    const bool capture = decision.mode == StepMode::kCapture;
    ONNX_AMP_ASSIGN_OR_RETURN(const bool ran, GraphStep(micro_batches.front(), capture, result, while_queued));
    if (ran) {
      if (capture) result.note = capture_policy_.Captured(conditions);
      ONNX_AMP_RETURN_IF_ERROR(scaler_.Update());
      return result;
    }
  }
  const Tensor seed = Scalar(result.scale);
  const std::vector<NamedTensor>& parameters = graph_.parameters;
  const bool accumulate = micro_batches.size() > 1;
  if (accumulate && sums_.empty()) {
    for (const NamedTensor& parameter : parameters) {
      sums_.push_back(Tensor::Empty(DType::kFloat32, parameter.tensor.shape()));
    }
  }

  std::vector<Tensor> gradients(parameters.size());
  double loss_sum = 0.0;
  // One micro-batch: its loss goes to the update graph where it was made (no wait for
  // the device before the update is queued) and is read once the step is done.
  Tensor loss_value;
  const int64_t step_number = scaler_.state().steps + 1;
  // Overlap: the last micro-batch hands each gradient to the sync as soon as it is final.
  const bool overlap = sync_ != nullptr && sync_->overlaps_backward() && config_.device == nullptr;
  std::vector<bool> taken(parameters.size());
  ExecutorRunOptions last_run;
  if (overlap) {
    last_run.output_ready = [&](size_t output, const Tensor& value) -> Status {
      if (output == 0) return Status::Ok();  // the loss, read after the run
      const size_t p = output - 1;
      ONNX_AMP_RETURN_IF_ERROR(
          TakeGradient(p, value, train_->output_names()[output], accumulate, /*first=*/false, gradients));
      taken[p] = true;
      return sync_->GradientReady(p, accumulate ? sums_[p] : gradients[p], step_number);
    };
  }
  RefreshCopies();
  for (size_t m = 0; m < micro_batches.size(); ++m) {
    using FeedMap = std::map<std::string, Tensor>;
    ONNX_AMP_ASSIGN_OR_RETURN(FeedMap feeds, Feeds(micro_batches[m]));
    feeds[graph_.seed_input] = seed;
    for (size_t p = 0; p < copies_.size(); ++p) {
      for (const std::string& input : copy_inputs_[p]) feeds[input] = copies_[p];
    }
    const bool last = m + 1 == micro_batches.size();
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, train_->Run(feeds, last ? last_run : ExecutorRunOptions{}));
    op_times_.Add(run.stats);
    ONNX_AMP_ASSERT(run.outputs.size() == parameters.size() + 1, "training graph outputs: loss, then gradients");
    if (!accumulate) {
      loss_value = run.outputs[0].tensor;
    } else {
      ONNX_AMP_ASSIGN_OR_RETURN(const Tensor loss, OnHost(run.outputs[0].tensor));
      loss_sum += *loss.data<float>();
    }
    for (size_t p = 0; p < parameters.size(); ++p) {
      if (last && taken[p]) continue;
      ONNX_AMP_RETURN_IF_ERROR(
          TakeGradient(p, run.outputs[p + 1].tensor, run.outputs[p + 1].name, accumulate, m == 0, gradients));
    }
  }
  if (accumulate) gradients = sums_;
  int64_t micro_count = static_cast<int64_t>(micro_batches.size());
  if (sync_ != nullptr) {  // the update sees the sum over every rank's micro-batches
    if (!accumulate) {
      ONNX_AMP_ASSIGN_OR_RETURN(const Tensor loss, OnHost(loss_value));
      loss_sum = *loss.data<float>();
    }
    ONNX_AMP_RETURN_IF_ERROR(sync_->SumGradients(gradients, loss_sum, step_number));
    micro_count *= sync_->ranks();
  }
  const bool loss_on_host = accumulate || sync_ != nullptr;
  if (loss_on_host) {
    result.loss = static_cast<float>(loss_sum / static_cast<double>(micro_count));
    loss_value = Scalar(result.loss);
  }
  ONNX_AMP_RETURN_IF_ERROR(Update(std::move(gradients), micro_count, loss_value, result, while_queued));
  if (!loss_on_host) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor loss, OnHost(loss_value));
    result.loss = *loss.data<float>();
  }
  ONNX_AMP_RETURN_IF_ERROR(scaler_.Update());
  return result;
}

Status Trainer::TakeGradient(size_t p, const Tensor& produced, const std::string& name, bool accumulate, bool first,
                             std::vector<Tensor>& gradients) {
  const Tensor& parameter = graph_.parameters[p].tensor;
  if (produced.dtype() != DType::kFloat32 || produced.num_elements() != parameter.num_elements()) {
    return InternalError("gradient '" + name + "' is not float32 of its parameter's shape");
  }
  if (!accumulate) {
    gradients[p] = produced.Reshaped(parameter.shape());
    return Status::Ok();
  }
  // Device gradients are summed on the host: accumulation trades speed for memory.
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor host, OnHost(produced));
  float* sum = sums_[p].data<float>();
  const float* add = host.data<float>();
  // The first micro-batch starts the sum: 0 + g, as a sum from zero gives (-0 becomes +0).
  threads_.ParallelFor(produced.num_elements(), kSumGrain, [&](int64_t begin, int64_t end) {
    if (first) {
      for (int64_t i = begin; i < end; ++i) sum[i] = 0.0f + add[i];
    } else {
      for (int64_t i = begin; i < end; ++i) sum[i] += add[i];
    }
  });
  return Status::Ok();
}

void Trainer::set_replica_sync(ReplicaSync* sync) {
  sync_ = sync;
  if (sync_ == nullptr) return;
  // The training graph's outputs are the loss, then one gradient per parameter.
  std::vector<int64_t> elements;
  for (const NamedTensor& parameter : graph_.parameters) elements.push_back(parameter.tensor.num_elements());
  std::vector<size_t> order;
  for (size_t output : train_->output_completion_order()) {
    if (output > 0) order.push_back(output - 1);
  }
  sync_->PlanGradients(elements, order);
}

Status Trainer::Update(std::vector<Tensor> gradients, int64_t micro_batches, const Tensor& loss, StepResult& result,
                       const std::function<Status()>& while_queued) {
  std::vector<NamedTensor>& parameters = graph_.parameters;
  const int num_slots = optimizer_.num_slots();
  std::map<std::string, Tensor> feeds;
  feeds[kUpdateScale] = Scalar(result.scale);
  feeds[kUpdateMicroBatches] = Scalar(micro_batches);
  feeds[kUpdateLoss] = loss;
  feeds[kUpdateLearningRate] =
      Scalar(ScheduledLearningRate(config_.schedule, config_.optimizer.learning_rate, optimizer_.step_count()));
  feeds[kUpdateStep] = Scalar(optimizer_.step_count());
  for (size_t p = 0; p < parameters.size(); ++p) {
    feeds[update_.gradient_inputs[p]] = std::move(gradients[p]);
    feeds[parameters[p].name] = parameters[p].tensor;
    for (int k = 0; k < num_slots; ++k) feeds[update_.slot_inputs[k][p]] = optimizer_.slots(k)[p];
    if (!update_.copy_inputs[p].empty()) feeds[update_.copy_inputs[p]] = copies_[p];
  }
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, update_executor_->Run(feeds));
  op_times_.Add(run.stats);
  if (while_queued) ONNX_AMP_RETURN_IF_ERROR(while_queued());
  size_t copies = 0;
  for (const std::string& copy : update_.copy_inputs) copies += copy.empty() ? 0 : 1;
  ONNX_AMP_ASSERT(run.outputs.size() == 2 + parameters.size() * (1 + num_slots) + copies,
                  "update graph outputs: skip, first non-finite, then each parameter's weight, slots and copy");
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor skip_flag, OnHost(run.outputs[0].tensor));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor first_index, OnHost(run.outputs[1].tensor));
  const bool skip = *skip_flag.data<bool>();
  ONNX_AMP_RETURN_IF_ERROR(TakeSkipDecision(skip, *first_index.data<int64_t>(), result));
  if (result.skipped) return Status::Ok();  // the old weights and slots stay, bit for bit
  size_t out = 2;
  for (size_t p = 0; p < parameters.size(); ++p) {
    parameters[p].tensor = std::move(run.outputs[out++].tensor);
    for (int k = 0; k < num_slots; ++k) optimizer_.slots(k)[p] = std::move(run.outputs[out++].tensor);
    if (!update_.copy_inputs[p].empty()) copies_[p] = std::move(run.outputs[out++].tensor);
  }
  optimizer_.CountStep();
  return Status::Ok();
}

Status Trainer::TakeSkipDecision(bool skip, int64_t first, StepResult& result) {
  const std::vector<NamedTensor>& parameters = graph_.parameters;
  if (sync_ != nullptr) {
    const bool skipped_here = skip;
    ONNX_AMP_RETURN_IF_ERROR(sync_->AgreeOnSkip(skip, first, scaler_.state().steps + 1));
    // The update graph has already updated the weights in place where its own check passed,
    // so the agreement cannot undo an update: what makes the ranks skip together is that
    // each one's sums hold the same non-finite values (replica_sync.h). A rank that updated
    // while another skipped would train other weights from here on: an error, not a drift.
    if (skip && !skipped_here) {
      return InternalError("step " + std::to_string(scaler_.state().steps + 1) + ": rank " +
                           std::to_string(sync_->rank()) + "'s summed gradients were finite where another rank's " +
                           "were not; the replicas no longer hold the same weights");
    }
  }
  ONNX_AMP_ASSERT(first < static_cast<int64_t>(parameters.size()), "first non-finite gradient index out of range");
  // The first non-finite gradient names the overflow; a non-finite loss only without one.
  if (first >= 0) {
    scaler_.MarkNonFinite(parameters[first].name);
  } else if (skip) {
    scaler_.MarkNonFinite(graph_.loss_output);
  }
  ONNX_AMP_RETURN_IF_ERROR(scaler_.MarkUnscaled());
  result.skipped = skip;
  result.first_non_finite = scaler_.first_non_finite();
  return Status::Ok();
}

Status Trainer::Evaluate(const Batch& batch, EvalResult& result) {
  ONNX_AMP_RETURN_IF_ERROR(MoveStateToDevice());
  ONNX_AMP_ASSIGN_OR_RETURN(const auto feeds, Feeds(batch));
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, eval_->Run(feeds));
  const int64_t n = batch.data.dim(0);
  result.loss_sum += static_cast<double>(*run.outputs[0].tensor.data<float>()) * static_cast<double>(n);
  result.count += n;
  const Tensor& prediction = run.outputs[1].tensor;
  if (batch.target.dtype() != DType::kInt64 || prediction.dtype() != DType::kFloat32 || prediction.rank() != 2) {
    return Status::Ok();
  }
  const int64_t classes = prediction.dim(1);
  const float* scores = prediction.data<float>();
  const int64_t* labels = batch.target.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k) {
      if (scores[i * classes + k] > scores[i * classes + best]) best = k;
    }
    result.correct += best == labels[i];
  }
  return Status::Ok();
}

}  // namespace onnx_amp
