#include "runtime/train/training_graph.h"

#include <set>

#include "converter/convert_model.h"
#include "runtime/autodiff/autodiff.h"
#include "runtime/io/tensor_proto.h"

namespace onnx_amp {
namespace {

onnx::NodeProto* AddNode(onnx::GraphProto& graph, const std::string& op, std::vector<std::string> inputs,
                         const std::string& output) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(std::string("training.") + output);
  for (std::string& input : inputs) node->add_input(std::move(input));
  node->add_output(output);
  return node;
}

void SetIntAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

// The output is a Softmax of logits: train on the logits (LogSoftmax inside the loss is
// the stable form) and drop the Softmax.
void DropFinalSoftmax(onnx::GraphProto& graph) {
  const std::string output = graph.output(0).name();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "Softmax" || node.output_size() != 1 || node.output(0) != output) continue;
    if (!node.domain().empty() && node.domain() != "ai.onnx") continue;
    const std::string logits = node.input(0);
    for (const onnx::NodeProto& other : graph.node()) {
      for (const std::string& input : other.input()) {
        if (input == output) return;  // the probabilities feed something else too
      }
    }
    graph.mutable_node()->DeleteSubrange(i, 1);
    onnx::ValueInfoProto* info = graph.mutable_output(0);
    info->set_name(logits);
    return;
  }
}

// Initializers read only as BatchNormalization's running mean and variance (inputs 3
// and 4): statistics, not weights. They get no gradient, so lifting them would only let
// weight decay shrink them.
std::set<std::string> RunningStatistics(const onnx::GraphProto& graph) {
  std::set<std::string> statistics, other_reads;
  for (const onnx::NodeProto& node : graph.node()) {
    const bool batch_norm = node.op_type() == "BatchNormalization" && (node.domain().empty() || node.domain() == "ai.onnx");
    for (int i = 0; i < node.input_size(); ++i) {
      (batch_norm && (i == 3 || i == 4) ? statistics : other_reads).insert(node.input(i));
    }
  }
  std::erase_if(statistics, [&](const std::string& name) { return other_reads.count(name) > 0; });
  return statistics;
}

// Moves every float32 initializer but running statistics to a graph input (fed from the
// master weights).
Expected<std::vector<NamedTensor>> LiftParameters(onnx::GraphProto& graph) {
  const std::set<std::string> statistics = RunningStatistics(graph);
  std::vector<NamedTensor> parameters;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& init : *graph.mutable_initializer()) {
    if (init.data_type() != onnx::TensorProto::FLOAT || statistics.count(init.name()) > 0) {
      *kept.Add() = std::move(init);
      continue;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor value, TensorFromProto(init));
    bool listed = false;
    for (const onnx::ValueInfoProto& input : graph.input()) listed |= input.name() == init.name();
    if (!listed) {
      onnx::ValueInfoProto* input = graph.add_input();
      input->set_name(init.name());
      onnx::TypeProto_Tensor* type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(onnx::TensorProto::FLOAT);
      for (int64_t dim : value.shape()) type->mutable_shape()->add_dim()->set_dim_value(dim);
    }
    parameters.push_back({init.name(), std::move(value)});
  }
  graph.mutable_initializer()->Swap(&kept);
  return parameters;
}

void AddInput(onnx::GraphProto& graph, const std::string& name, int32_t elem_type, int rank) {
  onnx::ValueInfoProto* input = graph.add_input();
  input->set_name(name);
  onnx::TypeProto_Tensor* type = input->mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  for (int d = 0; d < rank; ++d) type->mutable_shape()->add_dim()->set_dim_param("training_dim" + std::to_string(d));
}

// Appends the float32 loss on `prediction` (a float32 graph output).
void AppendLoss(onnx::GraphProto& graph, LossKind loss, const std::string& prediction, int prediction_rank) {
  const std::string mean = std::string(kLossName) + ".mean";
  switch (loss) {
    case LossKind::kCrossEntropy:
    case LossKind::kNll: {
      AddInput(graph, kTargetName, onnx::TensorProto::INT64, 2);
      std::string log_prob = prediction;
      if (loss == LossKind::kCrossEntropy) {
        log_prob = std::string(kLossName) + ".log_prob";
        SetIntAttribute(*AddNode(graph, "LogSoftmax", {prediction}, log_prob), "axis", -1);
      }
      const std::string picked = std::string(kLossName) + ".picked";
      SetIntAttribute(*AddNode(graph, "GatherElements", {log_prob, kTargetName}, picked), "axis", 1);
      SetIntAttribute(*AddNode(graph, "ReduceMean", {picked}, mean), "keepdims", 0);
      AddNode(graph, "Neg", {mean}, kLossName);
      break;
    }
    case LossKind::kMse: {
      AddInput(graph, kTargetName, onnx::TensorProto::FLOAT, prediction_rank);
      const std::string diff = std::string(kLossName) + ".diff";
      const std::string square = std::string(kLossName) + ".square";
      AddNode(graph, "Sub", {prediction, kTargetName}, diff);
      AddNode(graph, "Mul", {diff, diff}, square);
      SetIntAttribute(*AddNode(graph, "ReduceMean", {square}, kLossName), "keepdims", 0);
      break;
    }
  }
  onnx::ValueInfoProto* output = graph.add_output();
  output->set_name(kLossName);
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  output->mutable_type()->mutable_tensor_type()->mutable_shape();
  // The loss first, then the prediction.
  graph.mutable_output()->SwapElements(0, 1);
}

}  // namespace

Expected<LossKind> ParseLossKind(std::string_view name) {
  if (name == "cross_entropy") return LossKind::kCrossEntropy;
  if (name == "mse") return LossKind::kMse;
  if (name == "nll") return LossKind::kNll;
  return InvalidArgument("--loss '" + std::string(name) + "': expected cross_entropy, mse or nll");
}

Expected<TrainingGraph> BuildTrainingGraph(const onnx::ModelProto& model, const TrainingGraphOptions& options) {
  if (options.policy != PolicyKind::kFloat32 && options.policy != PolicyKind::kMixedFloat16 &&
      options.policy != PolicyKind::kMixedBFloat16) {
    return InvalidArgument("training policy '" + std::string(PolicyKindName(options.policy)) +
                           "': expected float32, mixed_float16 or mixed_bfloat16");
  }
  onnx::ModelProto forward = model;
  onnx::GraphProto& graph = *forward.mutable_graph();
  if (graph.output_size() != 1) {
    return InvalidArgument("training needs a model with exactly one output; it has " +
                           std::to_string(graph.output_size()));
  }
  if (graph.output(0).type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return InvalidArgument("training needs a float32 output; '" + graph.output(0).name() + "' is not");
  }
  if (options.loss == LossKind::kCrossEntropy) DropFinalSoftmax(graph);

  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& init : graph.initializer()) initializer_names.insert(init.name());
  std::vector<std::string> data_inputs;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (!initializer_names.count(input.name())) data_inputs.push_back(input.name());
  }
  if (data_inputs.size() != 1) {
    return InvalidArgument("training needs a model with exactly one data input; it has " +
                           std::to_string(data_inputs.size()));
  }

  TrainingGraph result;
  ONNX_AMP_ASSIGN_OR_RETURN(result.parameters, LiftParameters(graph));
  if (result.parameters.empty()) return InvalidArgument("the model has no float32 initializer to train");

  if (options.policy != PolicyKind::kFloat32) {
    ConvertOptions convert;
    convert.policy.kind = options.policy;
    convert.target = ConvertTarget::kOnnxAmp;
    ONNX_AMP_RETURN_IF_ERROR(convert.policy.Compile());
    ONNX_AMP_ASSIGN_OR_RETURN(ConvertResult converted, ConvertModel(forward, convert));
    forward = std::move(converted.model);
  }
  onnx::GraphProto& mixed = *forward.mutable_graph();
  result.prediction_output = mixed.output(0).name();
  const int rank = mixed.output(0).type().tensor_type().shape().dim_size();
  AppendLoss(mixed, options.loss, result.prediction_output, rank);

  AutodiffOptions autodiff;
  autodiff.loss = kLossName;
  for (const NamedTensor& parameter : result.parameters) autodiff.parameters.push_back(parameter.name);
  ONNX_AMP_ASSIGN_OR_RETURN(result.train_model, BuildGradientModel(forward, autodiff));
  result.eval_model = std::move(forward);
  result.data_input = data_inputs[0];
  result.target_input = kTargetName;
  result.seed_input = std::string(kLossName) + "_grad";
  result.loss_output = kLossName;
  return result;
}

}  // namespace onnx_amp
