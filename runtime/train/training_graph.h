// Builds the graphs a training run executes from a float32 inference model:
//   eval:  the forward graph (mixed when the policy says so) plus a float32 loss;
//   train: eval plus its backward graph (BuildGradientModel), seeded with the loss scale.
// Parameters (every float32 initializer but BatchNormalization running statistics) become
// float32 graph inputs fed from the master weights each step; the converter then puts
// Cast(to=low) in front of low consumers, so Cast's gradient rule hands back float32
// gradients.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/precision_policy.h"
#include "runtime/core/status.h"
#include "runtime/io/named_tensor.h"

namespace onnx_amp {

enum class LossKind {
  kCrossEntropy,  // softmax cross-entropy on logits, sparse int64 labels, mean
  kMse,           // mean squared error against a float target of the output's shape
  kNll,           // negative log-likelihood on log-probabilities, sparse int64 labels, mean
};

Expected<LossKind> ParseLossKind(std::string_view name);

struct TrainingGraphOptions {
  LossKind loss = LossKind::kCrossEntropy;
  PolicyKind policy = PolicyKind::kFloat32;  // kFloat32, kMixedFloat16 or kMixedBFloat16
};

struct TrainingGraph {
  onnx::ModelProto eval_model;   // inputs: data, target, parameters; outputs: loss, prediction
  onnx::ModelProto train_model;  // inputs: eval's + seed; outputs: loss, then one gradient per parameter
  std::string data_input;
  std::string target_input;      // int64 [N, 1] labels, or float [N, ...] for MSE
  std::string seed_input;        // float32 scalar: the loss scale
  std::string loss_output;
  std::string prediction_output; // logits for cross-entropy (the Softmax, if any, is dropped)
  std::vector<NamedTensor> parameters;  // initial float32 master weights, in gradient order
};

// Errors: InvalidArgument when the model has not exactly one non-parameter input and
// one output, or for a policy other than the three above; the converter's and
// BuildGradientModel's errors otherwise.
Expected<TrainingGraph> BuildTrainingGraph(const onnx::ModelProto& model, const TrainingGraphOptions& options);

inline constexpr const char* kLossName = "training.loss";
inline constexpr const char* kTargetName = "training.target";

}  // namespace onnx_amp
