#include "runtime/onnx/function_call.h"

#include <onnx/onnx_pb.h>

#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/type_inference.h"

namespace onnx_amp {
namespace {

// Calls nested deeper than this (a function calling itself) type nothing.
constexpr int kMaxCallDepth = 16;
thread_local int call_depth = 0;

const onnx::AttributeProto* FindAttribute(const google::protobuf::RepeatedPtrField<onnx::AttributeProto>& attributes,
                                          const std::string& name) {
  for (const onnx::AttributeProto& attribute : attributes) {
    if (attribute.name() == name) return &attribute;
  }
  return nullptr;
}

// `body_node` with each attribute that refers to the function's attributes replaced by
// the call's value, or the function's default; dropped when neither has one.
onnx::NodeProto Resolve(const onnx::NodeProto& body_node, const onnx::FunctionProto& function,
                        const onnx::NodeProto& call) {
  onnx::NodeProto node = body_node;
  node.clear_attribute();
  for (const onnx::AttributeProto& attribute : body_node.attribute()) {
    if (attribute.ref_attr_name().empty()) {
      *node.add_attribute() = attribute;
      continue;
    }
    const onnx::AttributeProto* value = FindAttribute(call.attribute(), attribute.ref_attr_name());
    if (value == nullptr) value = FindAttribute(function.attribute_proto(), attribute.ref_attr_name());
    if (value == nullptr) continue;
    onnx::AttributeProto* resolved = node.add_attribute();
    *resolved = *value;
    resolved->set_name(attribute.name());
  }
  return node;
}

}  // namespace

const onnx::FunctionProto* FindModelFunction(const onnx::ModelProto& model, const onnx::NodeProto& node) {
  for (const onnx::FunctionProto& function : model.functions()) {
    if (function.name() == node.op_type() && CanonicalDomain(function.domain()) == CanonicalDomain(node.domain())) {
      return &function;
    }
  }
  return nullptr;
}

std::vector<ValueType> FunctionCallTypes(const onnx::ModelProto& model, const onnx::FunctionProto& function,
                                         const onnx::NodeProto& call, std::span<const ValueType> inputs) {
  std::vector<ValueType> outputs(call.output_size());
  if (call_depth >= kMaxCallDepth) return outputs;
  // The body as the main graph of a model of its own: inputs typed by the call.
  onnx::ModelProto body;
  body.set_ir_version(model.ir_version());
  *body.mutable_opset_import() = function.opset_import().empty() ? model.opset_import() : function.opset_import();
  *body.mutable_functions() = model.functions();
  onnx::GraphProto& graph = *body.mutable_graph();
  for (int i = 0; i < function.input_size(); ++i) {
    onnx::ValueInfoProto& input = *graph.add_input();
    input.set_name(function.input(i));
    if (i < static_cast<int>(inputs.size())) SetTypeProto(inputs[i], *input.mutable_type());
  }
  for (const onnx::NodeProto& node : function.node()) *graph.add_node() = Resolve(node, function, call);
  ++call_depth;
  const ModelTypes types = InferModelTypes(body);
  --call_depth;
  for (int o = 0; o < call.output_size() && o < function.output_size(); ++o) {
    outputs[o] = types.graphs[0].Find(function.output(o));
  }
  return outputs;
}

}  // namespace onnx_amp
