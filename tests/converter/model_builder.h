// Small helpers that build ONNX graphs by hand for the converter tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/core/dtype.h"

namespace onnx_amp::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto* graph) : graph_(graph) {}

  GraphBuilder& Input(const std::string& name, DType dtype, std::vector<int64_t> dims) {
    SetValueInfo(graph_->add_input(), name, dtype, dims);
    return *this;
  }
  GraphBuilder& Output(const std::string& name, DType dtype, std::vector<int64_t> dims) {
    SetValueInfo(graph_->add_output(), name, dtype, dims);
    return *this;
  }
  GraphBuilder& Floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  GraphBuilder& Ints(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name) {
    onnx::NodeProto* node = graph_->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const auto& in : inputs) node->add_input(in);
    for (const auto& out : outputs) node->add_output(out);
    return *node;
  }
  onnx::GraphProto* graph() { return graph_; }

  static void SetValueInfo(onnx::ValueInfoProto* info, const std::string& name, DType dtype,
                           const std::vector<int64_t>& dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(ToOnnx(dtype));
    auto* shape = tensor->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }

 private:
  onnx::GraphProto* graph_;
};

inline void SetIntAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

inline void SetIntsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

inline void SetStringAttr(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(value);
}

inline onnx::GraphProto* AddGraphAttr(onnx::NodeProto& node, const std::string& name) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::GRAPH);
  attr->mutable_g()->set_name(name);
  return attr->mutable_g();
}

inline onnx::ModelProto NewModel(int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

}  // namespace onnx_amp::testing
