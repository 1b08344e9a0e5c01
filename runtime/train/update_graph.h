// Builds the update graph of a training step: the second of the two graphs the Trainer
// runs with the same executor (the first is TrainingGraph::train_model, forward + loss +
// backward per micro-batch). From the float32 gradients summed over the step's
// micro-batches:
//
//   UnscaleAndCheck(scale, g...) -> found_inf, first_non_finite, g/scale...
//   IsNaN(loss) | IsInf(loss) | found_inf -> skip
//   GlobalNormClip(micro_batches, g/scale...) -> clipped mean g...       (max_norm attr)
//   <Optimizer>Update(w, g, slots..., learning_rate, [step], skip, [copy])
//       -> w', slots'..., [copy']                                                    (per parameter)
//
// Inputs: kUpdateScale, kUpdateMicroBatches, kUpdateLoss, kUpdateLearningRate, kUpdateStep
// (scalars), then per parameter "<name>_grad", "<name>", "<name>.slot<k>" and, for a
// parameter given a copy type, "<name>.copy". Outputs: kUpdateSkip, kUpdateFirstNonFinite,
// then per parameter "<name>.new", "<name>.slot<k>.new" and "<name>.copy.new": the new
// weight rounded to the copy's type (float16 or bfloat16), in the update's pass
// (runtime/train/weight_copies.h says why). A set skip hands the weights, slots and
// copies back unchanged. With
// `in_place` (the trainer's choice: it feeds its own tensors and takes the outputs back)
// the update ops write into the weight and slot tensors fed in, which come back as the
// outputs, and the gradients fed in are unscaled where they are: no fresh weights or
// unscaled gradients per step, half the memory traffic. Without `scaled` (loss scaling
// off: the scale is 1 on every step) the gradients are only checked, not copied.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/io/named_tensor.h"
#include "runtime/train/optimizer.h"

namespace onnx_amp {

inline constexpr const char* kUpdateScale = "update.scale";                      // float32: the loss scale
inline constexpr const char* kUpdateMicroBatches = "update.micro_batches";       // int64: micro-batches summed
inline constexpr const char* kUpdateLoss = "update.loss";                        // float32: the mean loss
inline constexpr const char* kUpdateLearningRate = "update.learning_rate";       // float32: this step's rate
inline constexpr const char* kUpdateStep = "update.step";                        // int64: updates applied so far
inline constexpr const char* kUpdateSkip = "update.skip";                        // bool: the step was skipped
inline constexpr const char* kUpdateFirstNonFinite = "update.first_non_finite";  // int64: gradient index or -1

struct UpdateGraph {
  onnx::ModelProto model;
  std::vector<std::string> gradient_inputs;  // per parameter
  std::vector<std::string> slot_inputs[2];   // per parameter, for k < SlotCount(optimizer)
  std::vector<std::string> copy_inputs;      // per parameter: "<name>.copy", "" where it has none
};

// `copy_types`: empty, or per parameter the type of its low-precision copy (kFloat16,
// kBFloat16, or kUndefined for none).
// Errors: InvalidArgument when there is no parameter, a parameter is not float32, a
// clip norm is negative or not finite, a copy type is not float16 or bfloat16, or a
// generated name collides with another.
Expected<UpdateGraph> BuildUpdateGraph(const std::vector<NamedTensor>& parameters, const OptimizerConfig& optimizer,
                                       float clip_norm, bool in_place = false, bool scaled = true,
                                       const std::vector<DType>& copy_types = {});

}  // namespace onnx_amp
