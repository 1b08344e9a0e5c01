#include "converter/paint.h"

#include <cstring>
#include <sstream>
#include <utility>

#include <onnx/onnx_pb.h>

#include "converter/painter.h"
#include "runtime/onnx/type_inference.h"

namespace onnx_amp {
namespace paint_internal {

std::string NodeLabel(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() + "(" + (node.output_size() ? node.output(0) : "") + ")" : node.name();
}

const onnx::GraphProto* Subgraph(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name && attr.has_g()) return &attr.g();
  }
  return nullptr;
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return fallback;
}

std::vector<int64_t> Int64Values(const onnx::TensorProto& t) {
  std::vector<int64_t> values(t.int64_data().begin(), t.int64_data().end());
  if (!t.raw_data().empty() && t.raw_data().size() % sizeof(int64_t) == 0) {
    values.resize(t.raw_data().size() / sizeof(int64_t));
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
  }
  return values;
}

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Known dims of every value with a tensor shape (-1 for an unknown dim).
void CollectShapes(const onnx::GraphProto& graph, std::unordered_map<std::string, std::vector<int64_t>>& shapes) {
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    std::vector<int64_t> dims;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
      dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    }
    shapes[info.name()] = std::move(dims);
  };
  for (const auto& info : graph.input()) add(info);
  for (const auto& info : graph.output()) add(info);
  for (const auto& info : graph.value_info()) add(info);
  for (const auto& init : graph.initializer()) {
    shapes[init.name()] = std::vector<int64_t>(init.dims().begin(), init.dims().end());
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectShapes(attr.g(), shapes);
      for (const auto& sub : attr.graphs()) CollectShapes(sub, shapes);
    }
  }
}

Expected<ConversionPlan> Painter::Run() {
  plan_.low_type = policy_.LowType();
  for (const auto& opset : model_.opset_import()) opsets_[std::string(CanonicalDomain(opset.domain()))] = opset.version();
  const size_t nodes = static_cast<size_t>(model_.graph().node_size());
  refs_.reserve(nodes);
  units_.reserve(nodes);
  producers_.assign(values_.size(), Slot{});
  AddGraph(*model_.mutable_graph(), -1, "main");
  values_.DropNodeRecords();  // every node's value ids are in slot_values_ now
  slot_units_.assign(slot_values_.size(), -1);
  main_inputs_.assign(values_.size(), 0);
  for (const auto& input : model_.graph().input()) {
    const int id = values_.Find(input.name());
    if (id >= 0) main_inputs_[id] = 1;
  }
  for (int r = 0; r < static_cast<int>(refs_.size()); ++r) BuildUnits(r);
  LinkUnits();
  KeepShapeArithmetic();
  if (policy_.kind == PolicyKind::kMixedFloat16) DenyTinyEpsilonGuards();
  if (policy_.IsMixed()) {
    DenyOutOfRangeValues();
    DenyExpReductions();
    DenyDecomposedLayerNorm();
    ONNX_AMP_RETURN_IF_ERROR(DenyLongReductions());
  }
  if (policy_.kind != PolicyKind::kFloat32) {
    PaintToFixpoint();
    RetargetCasts();
  }
  FillPlan();
  return std::move(plan_);
}

}  // namespace paint_internal

Expected<ValueTable> InferValueTypes(const onnx::ModelProto& model) {
  TypeInferenceOptions options;
  options.record_node_values = true;  // Paint takes each node's value ids from the record
  ModelTypes inferred = InferModelTypes(model, options);
  if (!inferred.rejection.empty()) return InvalidModel("type inference: " + inferred.rejection);
  return ValueTable(std::move(inferred));
}

Expected<ConversionPlan> Paint(onnx::ModelProto& model, ValueTable values, const PrecisionPolicy& policy,
                               ConvertTarget target, const ValueSummaries& external, bool with_reasons) {
  return paint_internal::Painter(model, std::move(values), policy, target, external, with_reasons).Run();
}

}  // namespace onnx_amp
