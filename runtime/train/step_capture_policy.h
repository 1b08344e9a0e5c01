// When the trainer captures its device step in a graph (CUDA graphs, device.h) and when
// it runs it eagerly. A graph replays fixed work on fixed addresses, so it fits a step
// whose shapes do not change: the first step of a batch shape runs eagerly (a warm-up
// that creates every kernel's algorithms, workspaces and cached blocks), the next step
// of the same shape is captured (and replayed at once: a capture runs nothing), and
// later steps of that shape replay the graph. One graph is kept, for the first shape
// that becomes steady; a step of another shape (the last, partial batch of an epoch)
// runs eagerly and leaves the graph for the next epoch. Eager always, with the reason:
// micro-batch accumulation (host-side sums), data-parallel training (host-side
// all-reduce), a plan that moves values between host and device (a node without a
// device kernel), a capture that failed.
//
// The policy says why once per reason: the note of the step that first meets it.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "runtime/core/tensor.h"

namespace onnx_amp {

enum class StepMode { kEager, kCapture, kReplay };

struct StepConditions {
  size_t micro_batches = 1;
  bool data_parallel = false;
  Shape data_shape;
  Shape target_shape;
};

struct StepDecision {
  StepMode mode = StepMode::kEager;
  std::string note;  // "" unless this step meets a reason for the first time
};

class StepCapturePolicy {
 public:
  // A policy that never captures and says nothing (the CPU, or capture turned off).
  StepCapturePolicy() = default;
  // Captures when it can; `unavailable` is why no step of this trainer can be captured
  // ("" when steps can be), said on the first step.
  explicit StepCapturePolicy(std::string unavailable) : enabled_(true), unavailable_(std::move(unavailable)) {}

  StepDecision Decide(const StepConditions& step);
  // The capture Decide asked for worked: later steps of its shapes replay it.
  std::string Captured(const StepConditions& step);
  // The capture Decide asked for failed (`reason`): every later step runs eagerly.
  std::string CaptureFailed(const std::string& reason);
  // Forget the graph (the caller dropped it): the next steady shape is captured again.
  void Reset();

  bool has_graph() const { return captured_.has_value(); }

 private:
  using Shapes = std::pair<Shape, Shape>;
  // `note` the first time it is given, "" after.
  std::string Once(const std::string& note);

  bool enabled_ = false;
  std::string unavailable_;
  bool failed_ = false;
  std::optional<Shapes> warm_;      // the shapes of the last eager step that could lead to a capture
  std::optional<Shapes> captured_;  // the shapes of the captured graph
  std::set<std::string> said_;
};

}  // namespace onnx_amp
