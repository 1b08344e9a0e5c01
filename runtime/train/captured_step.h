// The device state of a training step captured in a graph (Trainer, device.h). A
// replay reads and writes the addresses the capture saw, so everything the step takes
// per step lives here, at fixed device addresses, and is written before each replay:
// the batch (copied from its staged or host tensors), the loss scale (the backward
// seed and the update's unscale factor), the learning rate and the step count. The
// weights and slots are the trainer's tensors at capture; the update writes them in
// place, and a trainer whose tensors moved since (a checkpoint took them to the host)
// has them copied back here before the replay. What the host reads after a replay (the
// loss, the skip flag, the first non-finite gradient) are the captured runs' outputs,
// held so that their blocks stay the graph's.
#pragma once

#include <memory>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/exec/device.h"

namespace onnx_amp {

struct CapturedStep {
  Tensor data;
  Tensor target;
  Tensor scale;          // float32 scalar
  Tensor learning_rate;  // float32 scalar
  Tensor step;           // int64 scalar: updates applied so far
  Tensor micro_batches;  // int64 scalar 1 on the host (the update reads it on the host)
  std::vector<Tensor> weights;             // per parameter
  std::vector<std::vector<Tensor>> slots;  // [slot k][parameter]
  Tensor loss;                             // float32 scalar
  Tensor skip;                             // bool scalar
  Tensor first_non_finite;                 // int64 scalar
  std::unique_ptr<DeviceGraph> graph;
};

}  // namespace onnx_amp
