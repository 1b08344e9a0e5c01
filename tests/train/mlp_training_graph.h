// The training graph the trainer tests start from: a bundled model (by default the MLP,
// models/mlp_u64.onnx: 784-64-64-10) with a cross-entropy loss, its forward part
// converted to `policy` first (unless float32) as `onnx-amp train` does.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "converter/convert_model.h"
#include "runtime/onnx/model_io.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp::testing {

// The training graph of `model` (a bundled one, or a test's variant of one).
inline Expected<TrainingGraph> TrainingGraphOf(const onnx::ModelProto& model, PolicyKind policy) {
  Expected<TrainableModel> trainable = PrepareTrainableModel(model, LossKind::kCrossEntropy);
  if (!trainable.ok()) return trainable.status();
  if (policy != PolicyKind::kFloat32) {
    ConvertOptions convert;
    convert.policy.kind = policy;
    convert.target = ConvertTarget::kOnnxAmp;
    if (Status compiled = convert.policy.Compile(); !compiled.ok()) return compiled;
    Expected<ConvertResult> converted = ConvertModel(trainable->forward, convert);
    if (!converted.ok()) return converted.status();
    trainable->forward = std::move(converted->model);
  }
  return BuildTrainingGraph(std::move(*trainable), LossKind::kCrossEntropy);
}

inline Expected<TrainingGraph> MlpTrainingGraph(PolicyKind policy, const std::string& model_file = "mlp_u64.onnx") {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + model_file);
  if (!model.ok()) return model.status();
  return TrainingGraphOf(*model, policy);
}

}  // namespace onnx_amp::testing
