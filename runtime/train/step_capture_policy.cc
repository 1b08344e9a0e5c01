#include "runtime/train/step_capture_policy.h"

namespace onnx_amp {

std::string StepCapturePolicy::Once(const std::string& note) { return said_.insert(note).second ? note : ""; }

StepDecision StepCapturePolicy::Decide(const StepConditions& step) {
  StepDecision eager;
  if (!enabled_ || failed_) return eager;
  if (!unavailable_.empty()) {
    eager.note = Once("CUDA graph off, steps run eagerly: " + unavailable_);
    return eager;
  }
  if (step.micro_batches > 1) {
    eager.note = Once("CUDA graph off for steps that accumulate micro-batches (their sums are made on the host)");
    return eager;
  }
  if (step.data_parallel) {
    eager.note = Once("CUDA graph off under data parallelism (the gradients are summed on the host)");
    return eager;
  }
  const Shapes shapes{step.data_shape, step.target_shape};
  if (captured_) {
    if (shapes == *captured_) return {StepMode::kReplay, ""};
    eager.note = Once("eager step: batch " + ShapeToString(step.data_shape) + " differs from the captured " +
                      ShapeToString(captured_->first));
    return eager;
  }
  if (warm_ && *warm_ == shapes) return {StepMode::kCapture, ""};
  warm_ = shapes;  // the warm-up step
  return eager;
}

std::string StepCapturePolicy::Captured(const StepConditions& step) {
  captured_ = Shapes{step.data_shape, step.target_shape};
  return Once("CUDA graph: the step of batch " + ShapeToString(step.data_shape) + " is captured and replayed");
}

std::string StepCapturePolicy::CaptureFailed(const std::string& reason) {
  failed_ = true;
  captured_.reset();
  return Once("CUDA graph off, steps run eagerly: the capture failed: " + reason);
}

void StepCapturePolicy::Reset() {
  captured_.reset();
  warm_.reset();
}

}  // namespace onnx_amp
