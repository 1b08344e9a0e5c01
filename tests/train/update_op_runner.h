// What the tests of the optimizer-step ops share: random float32 tensors, scalars, bit
// comparisons, and RunNode, which runs one ai.onnx_amp node on the executor.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/executor/executor.h"

namespace onnx_amp::testing {

inline constexpr int64_t kCount = 1000;  // elements per tensor: several vector widths, odd tail

inline Tensor Random(uint64_t seed, float low, float high, int64_t n = kCount) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> value(low, high);
  Tensor tensor = Tensor::Empty(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) tensor.data<float>()[i] = value(generator);
  return tensor;
}

template <typename T>
Tensor Scalar(T value) {
  Tensor tensor = Tensor::Empty(DTypeOf<T>::value, {});
  *tensor.data<T>() = value;
  return tensor;
}

inline std::vector<float> Values(const Tensor& tensor) {
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.num_elements());
}

inline bool BitIdentical(const std::vector<float>& a, const Tensor& b) {
  return static_cast<int64_t>(a.size()) == b.num_elements() &&
         std::memcmp(a.data(), b.raw_data(), a.size() * sizeof(float)) == 0;
}

struct Attribute {
  std::string name;
  float f = 0.0f;
  int64_t i = 0;
  bool is_int = false;
};

// A model of one ai.onnx_amp node whose inputs are graph inputs fed with `inputs`
// ("" for an absent optional input) and whose outputs are graph outputs (but "", an
// absent one).
inline Expected<RunResult> RunNode(const std::string& op, const std::vector<std::pair<std::string, Tensor>>& inputs,
                            const std::vector<std::string>& outputs, const std::vector<Attribute>& attributes) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain("ai.onnx_amp");
  custom->set_version(1);
  onnx::GraphProto& graph = *model.mutable_graph();
  onnx::NodeProto& node = *graph.add_node();
  node.set_name("node");
  node.set_op_type(op);
  node.set_domain("ai.onnx_amp");
  std::map<std::string, Tensor> feeds;
  for (const auto& [name, tensor] : inputs) {
    node.add_input(name);
    if (name.empty()) continue;
    feeds[name] = tensor;
    onnx::ValueInfoProto* info = graph.add_input();
    info->set_name(name);
    onnx::TypeProto_Tensor* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(ToOnnx(tensor.dtype()));
    for (int64_t dim : tensor.shape()) type->mutable_shape()->add_dim()->set_dim_value(dim);
  }
  for (const std::string& name : outputs) {
    node.add_output(name);
    if (!name.empty()) graph.add_output()->set_name(name);
  }
  for (const Attribute& attribute : attributes) {
    onnx::AttributeProto* proto = node.add_attribute();
    proto->set_name(attribute.name);
    proto->set_type(attribute.is_int ? onnx::AttributeProto::INT : onnx::AttributeProto::FLOAT);
    if (attribute.is_int) {
      proto->set_i(attribute.i);
    } else {
      proto->set_f(attribute.f);
    }
  }
  ExecutorOptions options;
  options.num_threads = 2;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(std::move(model), options));
  return executor->Run(feeds);
}

inline Attribute Float(const std::string& name, float value) { return {name, value, 0, false}; }
inline Attribute Int(const std::string& name, int64_t value) { return {name, 0.0f, value, true}; }

}  // namespace onnx_amp::testing
