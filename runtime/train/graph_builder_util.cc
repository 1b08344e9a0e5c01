#include "runtime/train/graph_builder_util.h"

namespace onnx_amp {

onnx::NodeProto& AddNode(onnx::GraphProto& graph, const std::string& name, const std::string& op_type,
                         std::string_view domain, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, Attributes attributes) {
  onnx::NodeProto& node = *graph.add_node();
  node.set_name(name);
  node.set_op_type(op_type);
  if (!domain.empty()) node.set_domain(std::string(domain));
  for (const std::string& input : inputs) node.add_input(input);
  for (const std::string& output : outputs) node.add_output(output);
  for (onnx::AttributeProto& attribute : attributes) *node.add_attribute() = std::move(attribute);
  return node;
}

void SetTensorValueInfo(onnx::ValueInfoProto& info, const std::string& name, int32_t elem_type, const Shape& shape) {
  info.set_name(name);
  onnx::TypeProto_Tensor* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  onnx::TensorShapeProto* dims = type->mutable_shape();
  for (int64_t dim : shape) dims->add_dim()->set_dim_value(dim);
}

}  // namespace onnx_amp
