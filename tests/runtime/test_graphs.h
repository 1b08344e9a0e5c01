// Small helpers to build ONNX graphs by hand in tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx_amp::testing {

// dims: -1 for a symbolic dim named by `params` (same position), otherwise static.
inline onnx::ValueInfoProto TensorValue(const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                                        const std::vector<std::string>& params = {}) {
  onnx::ValueInfoProto value;
  value.set_name(name);
  auto* tensor_type = value.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(ToOnnx(dtype));
  auto* shape = tensor_type->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* dim = shape->add_dim();
    if (dims[i] >= 0) {
      dim->set_dim_value(dims[i]);
    } else {
      // By appends: GCC 12 warns falsely (-Wrestrict) on "d" + std::to_string(i).
      dim->set_dim_param(i < params.size() ? params[i] : std::string("d").append(std::to_string(i)));
    }
  }
  return value;
}

inline onnx::NodeProto* AddNode(onnx::GraphProto& graph, const std::string& op_type,
                                std::initializer_list<std::string> inputs,
                                std::initializer_list<std::string> outputs, const std::string& name = "",
                                const std::string& domain = "") {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op_type);
  node->set_domain(domain);
  node->set_name(name.empty() ? op_type + "_" + std::to_string(graph.node_size()) : name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

inline void SetGraphAttr(onnx::NodeProto& node, const std::string& name, const onnx::GraphProto& body) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::GRAPH);
  *attr->mutable_g() = body;
}

inline void SetIntsAttr(onnx::NodeProto& node, const std::string& name, std::initializer_list<int64_t> values) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

inline void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

// A float32 initializer of `shape` drawn uniformly from [-scale, scale).
inline void RandomFloatInitializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& shape,
                                   std::mt19937_64& rng, float scale) {
  onnx::TensorProto* init = graph.add_initializer();
  init->set_name(name);
  init->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t dim : shape) {
    init->add_dims(dim);
    count *= dim;
  }
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (int64_t i = 0; i < count; ++i) init->add_float_data(uniform(rng));
}

// A model importing the default domain at `opset` and the test kernels' domain.
inline onnx::ModelProto MakeModel(const onnx::GraphProto& graph, int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* onnx_opset = model.add_opset_import();
  onnx_opset->set_domain("");
  onnx_opset->set_version(opset);
  auto* test_opset = model.add_opset_import();
  test_opset->set_domain("test");
  test_opset->set_version(1);
  *model.mutable_graph() = graph;
  return model;
}

}  // namespace onnx_amp::testing
