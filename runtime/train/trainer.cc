#include "runtime/train/trainer.h"

#include <cstring>

namespace onnx_amp {

namespace {

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
      scaler_(config.scaler) {}

Expected<std::unique_ptr<Trainer>> Trainer::Create(TrainingGraph graph, const TrainerConfig& config) {
  ONNX_AMP_RETURN_IF_ERROR(config.scaler.Validate());
  ONNX_AMP_ASSIGN_OR_RETURN(UpdateGraph update, BuildUpdateGraph(graph.parameters, config.optimizer, config.clip_norm));
  std::vector<Shape> shapes = ParameterShapes(graph.parameters);
  std::unique_ptr<Trainer> trainer(new Trainer(std::move(graph), std::move(update), config, std::move(shapes)));
  ExecutorOptions options;
  options.num_threads = config.num_threads;
  options.max_memory_bytes = config.max_memory_bytes;
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->train_, Executor::Create(trainer->graph_.train_model, options));
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->eval_, Executor::Create(trainer->graph_.eval_model, options));
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->update_executor_, Executor::Create(trainer->update_.model, options));
  return trainer;
}

std::map<std::string, Tensor> Trainer::Feeds(const Batch& batch) const {
  std::map<std::string, Tensor> feeds;
  feeds[graph_.data_input] = batch.data;
  feeds[graph_.target_input] = batch.target;
  for (const NamedTensor& parameter : graph_.parameters) feeds[parameter.name] = parameter.tensor;
  return feeds;
}

Expected<StepResult> Trainer::Step(std::span<const Batch> micro_batches) {
  ONNX_AMP_ASSERT(!micro_batches.empty(), "a training step needs a batch");
  StepResult result;
  result.scale = scaler_.scale();
  const Tensor seed = Scalar(result.scale);
  const std::vector<NamedTensor>& parameters = graph_.parameters;
  const bool accumulate = micro_batches.size() > 1;
  if (accumulate && sums_.empty()) {
    for (const NamedTensor& parameter : parameters) {
      sums_.push_back(Tensor::Zeros(DType::kFloat32, parameter.tensor.shape()));
    }
  } else if (accumulate) {
    for (Tensor& sum : sums_) std::memset(sum.raw_data(), 0, sum.bytes());
  }

  std::vector<Tensor> gradients;
  double loss_sum = 0.0;
  for (const Batch& batch : micro_batches) {
    std::map<std::string, Tensor> feeds = Feeds(batch);
    feeds[graph_.seed_input] = seed;
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, train_->Run(feeds));
    ONNX_AMP_ASSERT(run.outputs.size() == parameters.size() + 1, "training graph outputs: loss, then gradients");
    loss_sum += *run.outputs[0].tensor.data<float>();
    for (size_t p = 0; p < parameters.size(); ++p) {
      const Tensor& produced = run.outputs[p + 1].tensor;
      if (produced.dtype() != DType::kFloat32 || produced.num_elements() != parameters[p].tensor.num_elements()) {
        return InternalError("gradient '" + run.outputs[p + 1].name + "' is not float32 of its parameter's shape");
      }
      if (!accumulate) {
        gradients.push_back(produced.Reshaped(parameters[p].tensor.shape()));
        continue;
      }
      float* sum = sums_[p].data<float>();
      const float* add = produced.data<float>();
      for (int64_t i = 0; i < produced.num_elements(); ++i) sum[i] += add[i];
    }
  }
  if (accumulate) gradients = sums_;
  int64_t micro_count = static_cast<int64_t>(micro_batches.size());
  if (sync_ != nullptr) {  // the update sees the sum over every rank's micro-batches
    ONNX_AMP_RETURN_IF_ERROR(sync_->SumGradients(gradients, loss_sum, scaler_.state().steps + 1));
    micro_count *= sync_->ranks();
  }
  result.loss = static_cast<float>(loss_sum / static_cast<double>(micro_count));
  ONNX_AMP_RETURN_IF_ERROR(Update(std::move(gradients), micro_count, result));
  ONNX_AMP_RETURN_IF_ERROR(scaler_.Update());
  return result;
}

Status Trainer::Update(std::vector<Tensor> gradients, int64_t micro_batches, StepResult& result) {
  std::vector<NamedTensor>& parameters = graph_.parameters;
  const int num_slots = optimizer_.num_slots();
  std::map<std::string, Tensor> feeds;
  feeds[kUpdateScale] = Scalar(result.scale);
  feeds[kUpdateMicroBatches] = Scalar(micro_batches);
  feeds[kUpdateLoss] = Scalar(result.loss);
  feeds[kUpdateLearningRate] =
      Scalar(ScheduledLearningRate(config_.schedule, config_.optimizer.learning_rate, optimizer_.step_count()));
  feeds[kUpdateStep] = Scalar(optimizer_.step_count());
  for (size_t p = 0; p < parameters.size(); ++p) {
    feeds[update_.gradient_inputs[p]] = std::move(gradients[p]);
    feeds[parameters[p].name] = parameters[p].tensor;
    for (int k = 0; k < num_slots; ++k) feeds[update_.slot_inputs[k][p]] = optimizer_.slots(k)[p];
  }
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, update_executor_->Run(feeds));
  ONNX_AMP_ASSERT(run.outputs.size() == 2 + parameters.size() * (1 + num_slots),
                  "update graph outputs: skip, first non-finite, then each parameter's weight and slots");
  bool skip = *run.outputs[0].tensor.data<bool>();
  int64_t first = *run.outputs[1].tensor.data<int64_t>();
  if (sync_ != nullptr) ONNX_AMP_RETURN_IF_ERROR(sync_->AgreeOnSkip(skip, first, scaler_.state().steps + 1));
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
  if (skip) return Status::Ok();  // the old weights and slots stay, bit for bit
  size_t out = 2;
  for (size_t p = 0; p < parameters.size(); ++p) {
    parameters[p].tensor = std::move(run.outputs[out++].tensor);
    for (int k = 0; k < num_slots; ++k) optimizer_.slots(k)[p] = std::move(run.outputs[out++].tensor);
  }
  optimizer_.CountStep();
  return Status::Ok();
}

Status Trainer::Evaluate(const Batch& batch, EvalResult& result) {
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, eval_->Run(Feeds(batch)));
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
