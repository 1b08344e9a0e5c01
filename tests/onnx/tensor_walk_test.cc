// ForEachTensor visits every tensor of a model, wherever it sits, in field-number order
// (a graph's nodes before its initializers), with the innermost node holding it; the
// const and mutable walks agree; a visitor's error stops the walk.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/onnx/tensor_walk.h"

namespace onnx_amp {
namespace {

void AddTensor(onnx::TensorProto* tensor, const std::string& name) {
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& name, const std::string& op) {
  onnx::NodeProto* node = graph->add_node();
  node->set_name(name);
  node->set_op_type(op);
  return node;
}

// A model with a tensor in each place one can be: initializers and sparse ones, node
// attributes (t, tensors, sparse_tensor), bodies of If at two levels, functions and
// training info. Each tensor is named after where it is.
onnx::ModelProto ModelWithTensorsEverywhere() {
  onnx::ModelProto model;
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::NodeProto* constant = AddNode(graph, "constant", "Constant");
  onnx::AttributeProto* value = constant->add_attribute();
  value->set_name("value");
  AddTensor(value->mutable_t(), "constant.t");
  onnx::NodeProto* custom = AddNode(graph, "custom", "Custom");
  onnx::AttributeProto* tensors = custom->add_attribute();
  tensors->set_name("tables");
  AddTensor(tensors->add_tensors(), "custom.tensors[0]");
  AddTensor(tensors->add_tensors(), "custom.tensors[1]");
  onnx::AttributeProto* sparse = custom->add_attribute();
  sparse->set_name("sparse");
  AddTensor(sparse->mutable_sparse_tensor()->mutable_values(), "custom.sparse.values");
  AddTensor(sparse->mutable_sparse_tensor()->mutable_indices(), "custom.sparse.indices");
  onnx::NodeProto* outer_if = AddNode(graph, "outer_if", "If");
  onnx::AttributeProto* then_branch = outer_if->add_attribute();
  then_branch->set_name("then_branch");
  AddTensor(then_branch->mutable_g()->add_initializer(), "outer_if.then.init");
  onnx::NodeProto* inner = AddNode(then_branch->mutable_g(), "inner_const", "Constant");
  onnx::AttributeProto* inner_value = inner->add_attribute();
  inner_value->set_name("value");
  AddTensor(inner_value->mutable_t(), "inner_const.t");
  AddTensor(graph->add_initializer(), "init");
  AddTensor(graph->add_sparse_initializer()->mutable_values(), "sparse_init.values");
  onnx::GraphProto* training = model.add_training_info()->mutable_algorithm();
  AddTensor(training->add_initializer(), "training.init");
  onnx::NodeProto* in_function = model.add_functions()->add_node();
  in_function->set_name("function_const");
  onnx::AttributeProto* function_value = in_function->add_attribute();
  function_value->set_name("value");
  AddTensor(function_value->mutable_t(), "function_const.t");
  return model;
}

const std::vector<std::string> kExpected = {
    "constant.t @constant",           "custom.tensors[0] @custom",  "custom.tensors[1] @custom",
    "custom.sparse.values @custom",   "custom.sparse.indices @custom",
    "inner_const.t @inner_const",     "outer_if.then.init @outer_if", "init @",
    "sparse_init.values @",           "training.init @",            "function_const.t @function_const",
};

TEST(TensorWalk, VisitsEveryTensorInFieldOrderWithItsNode) {
  const onnx::ModelProto model = ModelWithTensorsEverywhere();
  std::vector<std::string> seen;
  ASSERT_TRUE(ForEachTensor(model, [&](const onnx::TensorProto& tensor, std::string_view node) {
                seen.push_back(tensor.name() + " @" + std::string(node));
                return Status::Ok();
              }).ok());
  EXPECT_EQ(seen, kExpected);

  onnx::ModelProto mutable_model = ModelWithTensorsEverywhere();
  std::vector<std::string> changed;
  ASSERT_TRUE(ForEachTensor(mutable_model, [&](onnx::TensorProto& tensor, std::string_view node) {
                changed.push_back(tensor.name() + " @" + std::string(node));
                tensor.set_data_type(onnx::TensorProto::FLOAT16);
                return Status::Ok();
              }).ok());
  EXPECT_EQ(changed, kExpected);
  EXPECT_EQ(mutable_model.graph().node(0).attribute(0).t().data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(mutable_model.functions(0).node(0).attribute(0).t().data_type(), onnx::TensorProto::FLOAT16);
}

TEST(TensorWalk, StartsFromAnyMessageAndStopsAtTheFirstError) {
  const onnx::ModelProto model = ModelWithTensorsEverywhere();
  int visited = 0;
  const Status status = ForEachTensor(model.graph(), [&](const onnx::TensorProto& tensor, std::string_view) {
    ++visited;
    return tensor.name() == "custom.tensors[1]" ? InvalidModel("stop here") : Status::Ok();
  });
  EXPECT_EQ(status.message(), "stop here");
  EXPECT_EQ(visited, 3);
  std::vector<std::string> names;
  ASSERT_TRUE(ForEachTensor(model.graph().node(2), [&](const onnx::TensorProto& tensor, std::string_view) {
                names.push_back(tensor.name());
                return Status::Ok();
              }).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"inner_const.t", "outer_if.then.init"}));
}

}  // namespace
}  // namespace onnx_amp
