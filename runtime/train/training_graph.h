// Builds the graphs a training run executes from a TrainableModel (trainable_model.h),
// whose forward graph may already be converted to a mixed policy:
//   eval:  the forward graph plus a float32 loss;
//   train: eval plus its backward graph (BuildGradientModel), seeded with the loss scale.
// The loss is one op of domain ai.onnx_amp with a fused gradient (softmax cross-entropy,
// negative log-likelihood or mean squared error; ops/normalization/loss_schemas.h), so
// the loss and its gradient work at every opset of the model; the model's own ops take
// the gradient rules of their opset.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/io/named_tensor.h"
#include "runtime/train/loss_kind.h"
#include "runtime/train/trainable_model.h"

namespace onnx_amp {

struct TrainingGraph {
  onnx::ModelProto eval_model;   // inputs: data, parameters, target; outputs: loss, prediction
  onnx::ModelProto train_model;  // inputs: eval's + seed; outputs: loss, then one gradient per parameter
  LossKind loss = LossKind::kCrossEntropy;
  std::string data_input;
  std::string target_input;      // int64 [N, 1] labels, or float [N, ...] for MSE
  std::string seed_input;        // float32 scalar: the loss scale
  std::string loss_output;
  std::string prediction_output; // logits for cross-entropy (the Softmax, if any, is dropped)
  std::vector<NamedTensor> parameters;  // initial float32 master weights, in gradient order
};

// Errors: InvalidArgument when the forward graph has not one float32 output, or for
// cross-entropy and NLL one of rank other than 2 ([N, classes]); BuildGradientModel's
// errors otherwise (a model op without a gradient rule, or whose rule needs a newer
// opset, named with the fix).
Expected<TrainingGraph> BuildTrainingGraph(TrainableModel model, LossKind loss);

inline constexpr const char* kLossName = "training.loss";
inline constexpr const char* kTargetName = "training.target";

}  // namespace onnx_amp
