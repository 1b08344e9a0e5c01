// Model builders and checks shared by the GraphView tests.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <memory>
#include <string>

#include "runtime/graph/graph_view.h"

namespace onnx_amp::graph_test {

inline constexpr int kFloat = onnx::TensorProto::FLOAT;
inline constexpr int kFloat16 = onnx::TensorProto::FLOAT16;
inline constexpr int kInt64 = onnx::TensorProto::INT64;
inline constexpr int kBool = onnx::TensorProto::BOOL;

// A dimension: a number, or a symbolic name.
struct Dim {
  Dim(int64_t value) : value(value) {}
  Dim(const char* param) : param(param) {}
  int64_t value = -1;
  std::string param;
};

inline onnx::ValueInfoProto TensorInfo(const std::string& name, int elem_type, std::initializer_list<Dim> dims) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const Dim& dim : dims) {
    if (dim.param.empty()) {
      shape->add_dim()->set_dim_value(dim.value);
    } else {
      shape->add_dim()->set_dim_param(dim.param);
    }
  }
  return info;
}

inline onnx::ValueInfoProto UntypedInfo(const std::string& name) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  return info;
}

inline onnx::NodeProto* AddNode(onnx::GraphProto& graph, const std::string& op_type, const std::string& name,
                         std::initializer_list<std::string> inputs, std::initializer_list<std::string> outputs,
                         const std::string& domain = "") {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  node->set_domain(domain);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

inline void AddIntAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
}

inline void AddGraphAttribute(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& graph) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::GRAPH);
  *attribute->mutable_g() = graph;
}

inline void AddTensorAttribute(onnx::NodeProto& node, const std::string& name, int elem_type) {
  onnx::AttributeProto* attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::TENSOR);
  attribute->mutable_t()->set_data_type(elem_type);
  attribute->mutable_t()->add_dims(1);
  if (elem_type == onnx::TensorProto::DOUBLE) {
    attribute->mutable_t()->add_double_data(0.0);
  } else {
    attribute->mutable_t()->add_int32_data(0);
  }
}

inline void AddFloatInitializer(onnx::GraphProto& graph, const std::string& name, std::initializer_list<int64_t> dims) {
  onnx::TensorProto* tensor = graph.add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(kFloat);
  int64_t count = 1;
  for (int64_t dim : dims) {
    tensor->add_dims(dim);
    count *= dim;
  }
  for (int64_t i = 0; i < count; ++i) tensor->add_float_data(static_cast<float>(i));
}

inline onnx::ModelProto MakeModel(const onnx::GraphProto& graph, int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  *model.mutable_graph() = graph;
  return model;
}

inline std::unique_ptr<ModelView> BuildOrDie(const onnx::ModelProto& model) {
  Expected<std::unique_ptr<ModelView>> view = BuildModelView(model);
  EXPECT_TRUE(view.ok()) << view.status().message();
  if (!view.ok()) return nullptr;
  return std::move(view).value();
}

inline bool HasUse(const ValueInfo& value, int node, int input_index) {
  return std::any_of(value.uses.begin(), value.uses.end(), [&](const ValueUse& use) {
    return use.node == node && use.input_index == input_index;
  });
}

// A branch graph `name` with one node reading `outer_value` from the enclosing scope.
inline onnx::GraphProto IfBranch(const std::string& name, const std::string& op_type,
                                 const std::string& outer_value, const std::string& output) {
  onnx::GraphProto branch;
  branch.set_name(name);
  AddNode(branch, op_type, name + "_node", {outer_value}, {output});
  *branch.add_output() = UntypedInfo(output);
  return branch;
}

}  // namespace onnx_amp::graph_test
