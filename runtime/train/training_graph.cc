#include "runtime/train/training_graph.h"

#include "runtime/autodiff/autodiff.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/train/graph_builder_util.h"

namespace onnx_amp {
namespace {

const char* LossOp(LossKind loss) {
  switch (loss) {
    case LossKind::kCrossEntropy: return "SoftmaxCrossEntropyLoss";
    case LossKind::kNll: return "NegativeLogLikelihoodLoss";
    case LossKind::kMse: return "MeanSquaredError";
  }
  return "";
}

// Appends the target input and the float32 loss on `prediction` (the float32 graph
// output), and makes the loss the first output.
void AppendLoss(onnx::GraphProto& graph, LossKind loss, const onnx::ValueInfoProto& prediction) {
  onnx::ValueInfoProto& target = *graph.add_input();
  target.set_name(kTargetName);
  onnx::TypeProto_Tensor& target_type = *target.mutable_type()->mutable_tensor_type();
  const onnx::TypeProto_Tensor& prediction_type = prediction.type().tensor_type();
  std::string target_value = kTargetName;
  if (loss == LossKind::kMse) {
    target_type = prediction_type;
  } else {
    // Labels come as [N, 1]; the sparse losses take [N].
    target_type.set_elem_type(onnx::TensorProto::INT64);
    *target_type.mutable_shape()->add_dim() = prediction_type.shape().dim(0);
    target_type.mutable_shape()->add_dim()->set_dim_value(1);
    onnx::TensorProto flat;
    flat.set_data_type(onnx::TensorProto::INT64);
    flat.add_dims(1);
    flat.add_int64_data(-1);
    const std::string flat_shape = std::string(kLossName) + ".labels_shape";
    target_value = std::string(kLossName) + ".labels";
    AddNode(graph, flat_shape, "Constant", "", {}, {flat_shape}, {MakeAttribute("value", flat)});
    AddNode(graph, target_value, "Reshape", "", {kTargetName, flat_shape}, {target_value});
  }
  AddNode(graph, kLossName, LossOp(loss), kOnnxAmpDomain, {prediction.name(), target_value}, {kLossName});
  SetTensorValueInfo(*graph.add_output(), kLossName, onnx::TensorProto::FLOAT, {});
  graph.mutable_output()->SwapElements(0, 1);
}

void ImportOnnxAmpDomain(onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain() == kOnnxAmpDomain) return;
  }
  onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain(std::string(kOnnxAmpDomain));
  opset.set_version(1);
}

}  // namespace

Expected<TrainingGraph> BuildTrainingGraph(TrainableModel model, LossKind loss) {
  onnx::ModelProto& forward = model.forward;
  onnx::GraphProto& graph = *forward.mutable_graph();
  if (graph.output_size() != 1 || graph.output(0).type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return InvalidArgument("the forward graph of a training run needs exactly one output, of type float32");
  }
  const onnx::ValueInfoProto prediction = graph.output(0);
  const int rank = prediction.type().tensor_type().shape().dim_size();
  if (loss != LossKind::kMse && rank != 2) {
    return InvalidArgument("cross_entropy and nll need an output [N, classes]; '" + prediction.name() + "' has rank " +
                           std::to_string(rank));
  }
  AppendLoss(graph, loss, prediction);
  ImportOnnxAmpDomain(forward);

  TrainingGraph result;
  AutodiffOptions autodiff;
  autodiff.loss = kLossName;
  for (const NamedTensor& parameter : model.parameters) autodiff.parameters.push_back(parameter.name);
  ONNX_AMP_ASSIGN_OR_RETURN(result.train_model, BuildGradientModel(forward, autodiff));
  result.eval_model = std::move(forward);
  result.loss = loss;
  result.data_input = model.data_input;
  result.target_input = kTargetName;
  result.seed_input = std::string(kLossName) + "_grad";
  result.loss_output = kLossName;
  result.prediction_output = prediction.name();
  result.parameters = std::move(model.parameters);
  return result;
}

}  // namespace onnx_amp
