// The trainer's captured step (trainer.h, captured_step.h): the fixed device inputs
// written before each replay, the capture of both runs, the replay and the reads after it.
#include <cstring>

#include "runtime/exec/device.h"
#include "runtime/train/captured_step.h"
#include "runtime/train/trainer.h"

namespace onnx_amp {
namespace {

Expected<Tensor> DeviceTensor(Device& device, DType dtype, const Shape& shape) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device.Allocate(NumElements(shape) * DTypeSize(dtype)));
  return Tensor(dtype, shape, std::move(buffer));
}

template <typename T>
Status WriteScalar(Device& device, Tensor& scalar, T value) {
  return device.CopyFromHost(scalar.raw_data(), &value, sizeof(T));
}

// `to` (a fixed device tensor) gets `from`'s contents: a device copy, or one from the host.
Status CopyInto(Device& device, Tensor& to, const Tensor& from) {
  if (from.dtype() != to.dtype() || from.shape() != to.shape()) {
    return InternalError("the captured step's input " + ShapeToString(to.shape()) + " is given " +
                         ShapeToString(from.shape()));
  }
  if (from.raw_data() == to.raw_data()) return Status::Ok();
  if (from.device() == DeviceKind::kCpu) return device.CopyFromHost(to.raw_data(), from.raw_data(), from.bytes());
  return device.CopyOnDevice(to.raw_data(), from.raw_data(), from.bytes());
}

// The trainer's weight or slot `current` is the captured tensor again: copied there when
// it moved since the capture (a checkpoint took it to the host and back).
Status Rebind(Device& device, Tensor& current, const Tensor& captured) {
  if (current.raw_data() == captured.raw_data()) return Status::Ok();
  Tensor fixed = captured;
  ONNX_AMP_RETURN_IF_ERROR(CopyInto(device, fixed, current));
  current = captured;
  return Status::Ok();
}

}  // namespace

Status Trainer::WriteCapturedInputs(const Batch& batch, float scale) {
  Device& device = *config_.device;
  CapturedStep& step = *captured_;
  ONNX_AMP_RETURN_IF_ERROR(WriteScalar(device, step.scale, scale));
  const int64_t count = optimizer_.step_count();
  ONNX_AMP_RETURN_IF_ERROR(WriteScalar(
      device, step.learning_rate, ScheduledLearningRate(config_.schedule, config_.optimizer.learning_rate, count)));
  ONNX_AMP_RETURN_IF_ERROR(WriteScalar(device, step.step, count));
  ONNX_AMP_ASSIGN_OR_RETURN(const auto feeds, Feeds(batch));  // waits for a staged copy
  ONNX_AMP_RETURN_IF_ERROR(CopyInto(device, step.data, feeds.at(graph_.data_input)));
  ONNX_AMP_RETURN_IF_ERROR(CopyInto(device, step.target, feeds.at(graph_.target_input)));
  if (step.weights.empty()) return Status::Ok();  // about to be captured: they are the trainer's
  for (size_t p = 0; p < graph_.parameters.size(); ++p) {
    ONNX_AMP_RETURN_IF_ERROR(Rebind(device, graph_.parameters[p].tensor, step.weights[p]));
    for (int k = 0; k < optimizer_.num_slots(); ++k) {
      ONNX_AMP_RETURN_IF_ERROR(Rebind(device, optimizer_.slots(k)[p], step.slots[k][p]));
    }
  }
  return Status::Ok();
}

Status Trainer::CaptureStep() {
  CapturedStep& step = *captured_;
  std::vector<NamedTensor>& parameters = graph_.parameters;
  const int num_slots = optimizer_.num_slots();
  std::map<std::string, Tensor> feeds;
  feeds[graph_.data_input] = step.data;
  feeds[graph_.target_input] = step.target;
  feeds[graph_.seed_input] = step.scale;
  for (const NamedTensor& parameter : parameters) feeds[parameter.name] = parameter.tensor;
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult train, train_->Run(feeds));
  op_times_.Add(train.stats);
  ONNX_AMP_ASSERT(train.outputs.size() == parameters.size() + 1, "training graph outputs: loss, then gradients");
  feeds.clear();
  feeds[kUpdateScale] = step.scale;
  feeds[kUpdateMicroBatches] = step.micro_batches;
  feeds[kUpdateLoss] = train.outputs[0].tensor;
  feeds[kUpdateLearningRate] = step.learning_rate;
  feeds[kUpdateStep] = step.step;
  std::vector<Tensor> gradients(parameters.size());
  for (size_t p = 0; p < parameters.size(); ++p) {
    ONNX_AMP_RETURN_IF_ERROR(TakeGradient(p, train.outputs[p + 1].tensor, train.outputs[p + 1].name,
                                          /*accumulate=*/false, /*first=*/false, gradients));
    feeds[update_.gradient_inputs[p]] = std::move(gradients[p]);
    feeds[parameters[p].name] = parameters[p].tensor;
    for (int k = 0; k < num_slots; ++k) feeds[update_.slot_inputs[k][p]] = optimizer_.slots(k)[p];
  }
  ONNX_AMP_ASSIGN_OR_RETURN(RunResult update, update_executor_->Run(feeds));
  op_times_.Add(update.stats);
  ONNX_AMP_ASSERT(update.outputs.size() == 2 + parameters.size() * (1 + num_slots),
                  "update graph outputs: skip, first non-finite, then each parameter's weight and slots");
  // A replay reads the weights where the capture found them: the update must write there.
  size_t out = 2;
  step.slots.assign(num_slots, {});
  for (size_t p = 0; p < parameters.size(); ++p) {
    for (int k = -1; k < num_slots; ++k) {
      const Tensor& fed = k < 0 ? parameters[p].tensor : optimizer_.slots(k)[p];
      if (update.outputs[out++].tensor.raw_data() != fed.raw_data()) {
        return Unsupported("the update of '" + parameters[p].name + "' does not write in place");
      }
      (k < 0 ? step.weights : step.slots[k]).push_back(fed);
    }
  }
  step.loss = train.outputs[0].tensor;
  step.skip = update.outputs[0].tensor;
  step.first_non_finite = update.outputs[1].tensor;
  return Status::Ok();
}

Expected<bool> Trainer::GraphStep(const Batch& batch, bool capture, StepResult& result,
                                  const std::function<Status()>& while_queued) {
  Device& device = *config_.device;
  if (capture) {
    captured_ = std::make_unique<CapturedStep>();
    CapturedStep& step = *captured_;
    ONNX_AMP_ASSIGN_OR_RETURN(step.data, DeviceTensor(device, batch.data.dtype(), batch.data.shape()));
    ONNX_AMP_ASSIGN_OR_RETURN(step.target, DeviceTensor(device, batch.target.dtype(), batch.target.shape()));
    ONNX_AMP_ASSIGN_OR_RETURN(step.scale, DeviceTensor(device, DType::kFloat32, {}));
    ONNX_AMP_ASSIGN_OR_RETURN(step.learning_rate, DeviceTensor(device, DType::kFloat32, {}));
    ONNX_AMP_ASSIGN_OR_RETURN(step.step, DeviceTensor(device, DType::kInt64, {}));
    step.micro_batches = Tensor::Empty(DType::kInt64, {});
    *step.micro_batches.data<int64_t>() = 1;
  }
  ONNX_AMP_RETURN_IF_ERROR(WriteCapturedInputs(batch, result.scale));
  if (capture) {
    // Nothing runs while the step is recorded: a failed capture leaves weights, slots
    // and the scaler as they were, and the step runs eagerly instead.
    ONNX_AMP_RETURN_IF_ERROR(device.BeginCapture());
    const Status recorded = CaptureStep();
    Expected<std::unique_ptr<DeviceGraph>> graph = device.EndCapture();
    const Status failed = !recorded.ok() ? recorded : graph.status();
    if (!failed.ok()) {
      captured_.reset();
      result.note = capture_policy_.CaptureFailed(failed.message());
      return false;
    }
    captured_->graph = std::move(*graph);
  }
  ONNX_AMP_RETURN_IF_ERROR(captured_->graph->Replay());
  if (while_queued) ONNX_AMP_RETURN_IF_ERROR(while_queued());
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor skip, OnHost(captured_->skip));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor first, OnHost(captured_->first_non_finite));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor loss, OnHost(captured_->loss));
  result.loss = *loss.data<float>();
  ONNX_AMP_RETURN_IF_ERROR(TakeSkipDecision(*skip.data<bool>(), *first.data<int64_t>(), result));
  if (!result.skipped) optimizer_.CountStep();  // weights and slots were updated in place
  return true;
}

}  // namespace onnx_amp
