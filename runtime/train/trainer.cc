#include "runtime/train/trainer.h"

#include <cmath>
#include <cstring>

namespace onnx_amp {

std::vector<int64_t> ParameterSizes(const std::vector<NamedTensor>& parameters) {
  std::vector<int64_t> sizes;
  for (const NamedTensor& parameter : parameters) sizes.push_back(parameter.tensor.num_elements());
  return sizes;
}

Trainer::Trainer(TrainingGraph graph, const TrainerConfig& config, std::vector<int64_t> sizes)
    : graph_(std::move(graph)), config_(config), optimizer_(config.optimizer, sizes), scaler_(config.scaler) {}

Expected<std::unique_ptr<Trainer>> Trainer::Create(TrainingGraph graph, const TrainerConfig& config) {
  ONNX_AMP_RETURN_IF_ERROR(config.scaler.Validate());
  if (!(config.clip_norm >= 0.0f)) return InvalidArgument("--clip-norm must be >= 0");
  std::vector<int64_t> sizes = ParameterSizes(graph.parameters);
  std::unique_ptr<Trainer> trainer(new Trainer(std::move(graph), config, std::move(sizes)));
  ExecutorOptions options;
  options.num_threads = config.num_threads;
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->train_, Executor::Create(trainer->graph_.train_model, options));
  ONNX_AMP_ASSIGN_OR_RETURN(trainer->eval_, Executor::Create(trainer->graph_.eval_model, options));
  for (const NamedTensor& parameter : trainer->graph_.parameters) {
    trainer->gradients_.push_back(Tensor::Zeros(DType::kFloat32, parameter.tensor.shape()));
  }
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
  Tensor seed = Tensor::Empty(DType::kFloat32, {});
  *seed.data<float>() = result.scale;
  for (Tensor& gradient : gradients_) std::memset(gradient.raw_data(), 0, gradient.bytes());

  double loss_sum = 0.0;
  for (const Batch& batch : micro_batches) {
    std::map<std::string, Tensor> feeds = Feeds(batch);
    feeds[graph_.seed_input] = seed;
    ONNX_AMP_ASSIGN_OR_RETURN(RunResult run, train_->Run(feeds));
    ONNX_AMP_ASSERT(run.outputs.size() == gradients_.size() + 1, "training graph outputs: loss, then gradients");
    loss_sum += *run.outputs[0].tensor.data<float>();
    for (size_t p = 0; p < gradients_.size(); ++p) {
      const Tensor& produced = run.outputs[p + 1].tensor;
      if (produced.dtype() != DType::kFloat32 || produced.num_elements() != gradients_[p].num_elements()) {
        return InternalError("gradient '" + run.outputs[p + 1].name + "' is not float32 of its parameter's shape");
      }
      float* sum = gradients_[p].data<float>();
      const float* add = produced.data<float>();
      for (int64_t i = 0; i < produced.num_elements(); ++i) sum[i] += add[i];
    }
  }
  const float micro_count = static_cast<float>(micro_batches.size());
  result.loss = static_cast<float>(loss_sum / micro_count);

  std::vector<GradientView> views;
  for (size_t p = 0; p < gradients_.size(); ++p) {
    views.push_back({graph_.parameters[p].name,
                     std::span<float>(gradients_[p].data<float>(), gradients_[p].num_elements())});
  }
  ONNX_AMP_RETURN_IF_ERROR(scaler_.Unscale(views));
  // After Unscale: the scaler takes a non-finite loss as this iteration's overflow too.
  if (!std::isfinite(result.loss)) scaler_.MarkNonFinite(graph_.loss_output);
  result.skipped = scaler_.found_inf();
  result.first_non_finite = scaler_.first_non_finite();
  if (!result.skipped) {
    double factor = 1.0 / micro_count;  // the mean over micro-batches
    if (config_.clip_norm > 0.0f) {
      double squares = 0.0;
      for (const GradientView& view : views) {
        for (float g : view.values) squares += static_cast<double>(g) * g;
      }
      const double norm = std::sqrt(squares) * factor;
      if (norm > config_.clip_norm) factor *= config_.clip_norm / norm;
    }
    if (factor != 1.0) {
      for (const GradientView& view : views) {
        for (float& g : view.values) g = static_cast<float>(g * factor);
      }
    }
    std::vector<Tensor> weights;
    for (NamedTensor& parameter : graph_.parameters) weights.push_back(parameter.tensor);
    const float lr = ScheduledLearningRate(config_.schedule, config_.optimizer.learning_rate, optimizer_.step_count());
    optimizer_.Step(weights, gradients_, lr);
  }
  ONNX_AMP_RETURN_IF_ERROR(scaler_.Update());
  return result;
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
