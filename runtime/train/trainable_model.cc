#include "runtime/train/trainable_model.h"

#include <set>

#include "runtime/core/onnx_domain.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/train/graph_builder_util.h"

namespace onnx_amp {
namespace {

// The output is a Softmax of logits: train on the logits (LogSoftmax inside the loss is
// the stable form) and drop the Softmax.
void DropFinalSoftmax(onnx::GraphProto& graph) {
  const std::string output = graph.output(0).name();
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    if (node.op_type() != "Softmax" || node.output_size() != 1 || node.output(0) != output) continue;
    if (!IsOnnxDomain(node.domain())) continue;
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
    const bool batch_norm = node.op_type() == "BatchNormalization" && IsOnnxDomain(node.domain());
    for (int i = 0; i < node.input_size(); ++i) {
      (batch_norm && (i == 3 || i == 4) ? statistics : other_reads).insert(node.input(i));
    }
  }
  std::erase_if(statistics, [&](const std::string& name) { return other_reads.count(name) > 0; });
  return statistics;
}

// Trained parameters: every float32 initializer but running statistics.
bool IsParameter(const onnx::TensorProto& init, const std::set<std::string>& statistics) {
  return init.data_type() == onnx::TensorProto::FLOAT && statistics.count(init.name()) == 0;
}

// Moves every parameter to a graph input (fed from the master weights).
Expected<std::vector<NamedTensor>> LiftParameters(onnx::GraphProto& graph, const std::set<std::string>& statistics) {
  std::vector<NamedTensor> parameters;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (onnx::TensorProto& init : *graph.mutable_initializer()) {
    if (!IsParameter(init, statistics)) {
      *kept.Add() = std::move(init);
      continue;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor value, TensorFromProto(init));
    std::string().swap(*init.mutable_raw_data());  // the master weight holds it now
    init.clear_float_data();
    bool listed = false;
    for (const onnx::ValueInfoProto& input : graph.input()) listed |= input.name() == init.name();
    if (!listed) SetTensorValueInfo(*graph.add_input(), init.name(), onnx::TensorProto::FLOAT, value.shape());
    parameters.push_back({init.name(), std::move(value)});
  }
  graph.mutable_initializer()->Swap(&kept);
  return parameters;
}

// A copy of `model` without its parameters' data: the data is moved aside while the
// rest is copied, then moved back.
onnx::ModelProto WithoutParameterData(onnx::ModelProto& model, const std::set<std::string>& statistics) {
  onnx::GraphProto& graph = *model.mutable_graph();
  // Data moves through swaps; a raw_data field is touched only where it is set (setting
  // it, even empty, would make it the tensor's data).
  std::vector<std::pair<onnx::TensorProto*, onnx::TensorProto>> aside;
  for (onnx::TensorProto& init : *graph.mutable_initializer()) {
    if (!IsParameter(init, statistics)) continue;
    onnx::TensorProto data;
    if (init.has_raw_data()) {
      data.mutable_raw_data()->swap(*init.mutable_raw_data());
      init.clear_raw_data();
    }
    data.mutable_float_data()->Swap(init.mutable_float_data());
    aside.emplace_back(&init, std::move(data));
  }
  onnx::ModelProto copy = model;
  for (auto& [init, data] : aside) {
    if (data.has_raw_data()) init->mutable_raw_data()->swap(*data.mutable_raw_data());
    init->mutable_float_data()->Swap(data.mutable_float_data());
  }
  return copy;
}

}  // namespace

Expected<TrainableModel> PrepareTrainableModel(onnx::ModelProto model, LossKind loss) {
  TrainableModel result;
  // Dropping a final Softmax below changes no BatchNormalization input.
  const std::set<std::string> statistics = RunningStatistics(model.graph());
  result.inference = WithoutParameterData(model, statistics);
  result.forward = std::move(model);
  onnx::GraphProto& graph = *result.forward.mutable_graph();
  if (graph.output_size() != 1) {
    return InvalidArgument("training needs a model with exactly one output; it has " +
                           std::to_string(graph.output_size()));
  }
  if (graph.output(0).type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
    return InvalidArgument("training needs a float32 output; '" + graph.output(0).name() + "' is not");
  }
  if (loss == LossKind::kCrossEntropy) DropFinalSoftmax(graph);

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
  result.data_input = data_inputs[0];
  ONNX_AMP_ASSIGN_OR_RETURN(result.parameters, LiftParameters(graph, statistics));
  if (result.parameters.empty()) return InvalidArgument("the model has no float32 initializer to train");
  return result;
}

Expected<onnx::ModelProto> WithTrainedWeights(const onnx::ModelProto& model, const std::vector<NamedTensor>& weights) {
  onnx::ModelProto trained = model;
  for (onnx::TensorProto& init : *trained.mutable_graph()->mutable_initializer()) {
    for (const NamedTensor& weight : weights) {
      if (weight.name != init.name()) continue;
      ONNX_AMP_ASSIGN_OR_RETURN(init, TensorToProto(weight.tensor, weight.name));
    }
  }
  return trained;
}

}  // namespace onnx_amp
