#include "runtime/train/weight_copies.h"

#include <map>
#include <optional>
#include <set>

#include "ops/common/float32_buffers.h"
#include "runtime/onnx/cast_target.h"
#include "runtime/train/graph_builder_util.h"

namespace onnx_amp {
namespace {

// The low type a node casts to, where it is an ai.onnx Cast to float16 or bfloat16.
DType LowCastType(const onnx::NodeProto& node) {
  const std::optional<DType> target = CastTarget(node);
  return target.has_value() && IsLowPrecision(*target) ? *target : DType::kUndefined;
}

}  // namespace

FoldedWeightCasts FoldWeightCasts(const onnx::ModelProto& train_model, const std::vector<NamedTensor>& parameters) {
  FoldedWeightCasts folded;
  folded.model = train_model;
  folded.copy_types.assign(parameters.size(), DType::kUndefined);
  folded.copy_inputs.resize(parameters.size());
  onnx::GraphProto& graph = *folded.model.mutable_graph();
  std::map<std::string, size_t> parameter_index;
  for (size_t p = 0; p < parameters.size(); ++p) parameter_index[parameters[p].name] = p;
  std::set<std::string> graph_outputs;
  for (const onnx::ValueInfoProto& output : graph.output()) graph_outputs.insert(output.name());

  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    const DType type = LowCastType(node);
    const auto parameter = type == DType::kUndefined ? parameter_index.end() : parameter_index.find(node.input(0));
    if (parameter == parameter_index.end() || graph_outputs.count(node.output(0)) != 0) {
      *kept.Add() = std::move(node);
      continue;
    }
    const size_t p = parameter->second;
    if (folded.copy_types[p] != DType::kUndefined && folded.copy_types[p] != type) {
      // A second low type: its Casts stay, the first type's are folded.
      *kept.Add() = std::move(node);
      continue;
    }
    folded.copy_types[p] = type;
    folded.copy_inputs[p].push_back(node.output(0));
    SetTensorValueInfo(*graph.add_input(), node.output(0), ToOnnx(type), parameters[p].tensor.shape());
  }
  graph.mutable_node()->Swap(&kept);
  // A folded Cast's output is now a graph input, described there.
  std::set<std::string> inputs;
  for (const std::vector<std::string>& names : folded.copy_inputs) inputs.insert(names.begin(), names.end());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> infos;
  for (onnx::ValueInfoProto& info : *graph.mutable_value_info()) {
    if (inputs.count(info.name()) == 0) *infos.Add() = std::move(info);
  }
  graph.mutable_value_info()->Swap(&infos);
  return folded;
}

Tensor MakeWeightCopy(const Tensor& weight, DType type) {
  Tensor copy = Tensor::Empty(type, weight.shape());
  StoreFromFloat32(weight.data<float>(), copy);
  return copy;
}

}  // namespace onnx_amp
