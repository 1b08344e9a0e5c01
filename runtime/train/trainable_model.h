// The first step from a float32 inference model to its training graphs: the model with
// its parameters (every float32 initializer but BatchNormalization running statistics)
// made float32 graph inputs, fed from the master weights each step. A caller training
// under a mixed policy converts `forward` next (the converter keeps float32 graph inputs
// and puts Cast(to=low) in front of low consumers, so Cast's gradient rule hands back
// float32 gradients); BuildTrainingGraph (training_graph.h) then adds the loss and the
// backward pass.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/io/named_tensor.h"
#include "runtime/train/loss_kind.h"

namespace onnx_amp {

struct TrainableModel {
  // The model with its parameters as graph inputs. For cross-entropy a final Softmax
  // read by nothing else is dropped: the loss takes the logits (its LogSoftmax is the
  // stable form), and the logits become the output.
  onnx::ModelProto forward;
  std::vector<NamedTensor> parameters;  // initial float32 master weights, in initializer order
  std::string data_input;
  // The model as given, without the data of its parameters, which live on as master
  // weights: what WithTrainedWeights turns into the trained inference model. It weighs
  // what the graph does, not the weights.
  onnx::ModelProto inference;
};

// Takes the model by value, so that a caller who moves it in never holds its weights
// twice (each parameter's data is freed as it is lifted).
// Errors: InvalidArgument when the model has not exactly one non-parameter input and one
// float32 output, or no float32 initializer to train.
Expected<TrainableModel> PrepareTrainableModel(onnx::ModelProto model, LossKind loss);

// `model` with each float32 initializer named like a trained weight replaced by it: the
// trained inference model.
Expected<onnx::ModelProto> WithTrainedWeights(const onnx::ModelProto& model, const std::vector<NamedTensor>& weights);

}  // namespace onnx_amp
