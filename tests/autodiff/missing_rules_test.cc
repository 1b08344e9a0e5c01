// BuildGradientModel's graph-level behaviour: every node without a gradient rule is
// listed in one error; a rule that needs a newer opset than the model's names the node,
// the opset and the fix; nodes off the parameter-to-loss path are ignored; the result
// has the documented inputs and outputs and passes the ONNX checker.
#include <string>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ops/gradient_context.h"
#include "runtime/autodiff/autodiff.h"

namespace onnx_amp {
namespace {

void AddFloatValue(onnx::ValueInfoProto* info, const std::string& name, std::initializer_list<int64_t> dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  for (int64_t dim : dims) shape->add_dim()->set_dim_value(dim);
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& name, const std::string& op,
                         std::initializer_list<std::string> inputs, std::initializer_list<std::string> outputs) {
  onnx::NodeProto* node = graph->add_node();
  node->set_name(name);
  node->set_op_type(op);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

onnx::ModelProto BaseModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(18);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("g");
  AddFloatValue(graph->add_input(), "x", {2, 3});
  onnx::TensorProto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  for (int i = 0; i < 6; ++i) w->add_float_data(0.1f * static_cast<float>(i));
  return model;
}

TEST(Autodiff, ListsEveryNodeWithoutARuleInOneError) {
  onnx::ModelProto model = BaseModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddNode(graph, "mul", "Mul", {"x", "w"}, {"a"});
  AddNode(graph, "first_atan", "Atan", {"a"}, {"b"});
  AddNode(graph, "second_sin", "Sin", {"b"}, {"c"});
  AddNode(graph, "off_path_cos", "Cos", {"x"}, {"unused"});  // does not depend on w
  AddNode(graph, "sum", "ReduceSum", {"c"}, {"loss"});
  graph->mutable_node(4)->add_attribute()->CopyFrom([] {
    onnx::AttributeProto keepdims;
    keepdims.set_name("keepdims");
    keepdims.set_type(onnx::AttributeProto::INT);
    keepdims.set_i(0);
    return keepdims;
  }());
  AddFloatValue(graph->add_output(), "loss", {});
  AddFloatValue(graph->add_output(), "unused", {2, 3});

  AutodiffOptions options;
  options.loss = "loss";
  auto result = BuildGradientModel(model, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnsupported);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("2 node(s)"), std::string::npos) << message;
  EXPECT_NE(message.find("'first_atan' (Atan)"), std::string::npos) << message;
  EXPECT_NE(message.find("'second_sin' (Sin)"), std::string::npos) << message;
  EXPECT_EQ(message.find("off_path_cos"), std::string::npos) << message;
}

TEST(Autodiff, ARuleNeedingANewerOpsetNamesTheNodeTheOpsetAndTheFix) {
  onnx::ModelProto model = BaseModel();
  model.mutable_opset_import(0)->set_version(13);
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::TensorProto* index = graph->add_initializer();
  index->set_name("index");
  index->set_data_type(onnx::TensorProto::INT64);
  index->add_dims(2);
  index->add_dims(1);
  index->add_int64_data(2);
  index->add_int64_data(0);
  AddNode(graph, "mul", "Mul", {"x", "w"}, {"a"});
  *AddNode(graph, "pick", "GatherElements", {"a", "index"}, {"picked"})->add_attribute() = MakeAttribute("axis", int64_t{1});
  *AddNode(graph, "sum", "ReduceSum", {"picked"}, {"loss"})->add_attribute() = MakeAttribute("keepdims", int64_t{0});
  AddFloatValue(graph->add_output(), "loss", {});

  auto result = BuildGradientModel(model, AutodiffOptions{});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnsupported);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("'pick' (GatherElements)"), std::string::npos) << message;
  EXPECT_NE(message.find("needs opset >= 16"), std::string::npos) << message;
  EXPECT_NE(message.find("has opset 13"), std::string::npos) << message;
  EXPECT_NE(message.find("--opset 16"), std::string::npos) << message;
}

TEST(Autodiff, AZeroGradientBeforeOpset9IsAnErrorNamingTheParameter) {
  onnx::ModelProto model = BaseModel();
  model.mutable_opset_import(0)->set_version(8);
  onnx::GraphProto* graph = model.mutable_graph();
  *graph->add_initializer() = graph->initializer(0);
  graph->mutable_initializer(1)->set_name("unused_w");
  AddNode(graph, "mul", "Mul", {"x", "w"}, {"a"});
  *AddNode(graph, "sum", "ReduceSum", {"a"}, {"loss"})->add_attribute() = MakeAttribute("keepdims", int64_t{0});
  AddFloatValue(graph->add_output(), "loss", {});

  auto result = BuildGradientModel(model, AutodiffOptions{});  // every float initializer
  ASSERT_FALSE(result.ok());
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("'unused_w'"), std::string::npos) << message;
  EXPECT_NE(message.find("opset >= 9"), std::string::npos) << message;
  EXPECT_NE(message.find("--opset 9"), std::string::npos) << message;
}

TEST(Autodiff, ResultHasSeedInputAndGradientOutputs) {
  onnx::ModelProto model = BaseModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddNode(graph, "mul", "Mul", {"x", "w"}, {"a"});
  AddNode(graph, "relu", "Relu", {"a"}, {"r"});
  AddNode(graph, "sum", "ReduceSum", {"r"}, {"loss"});
  onnx::AttributeProto* keepdims = graph->mutable_node(2)->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(0);
  AddFloatValue(graph->add_output(), "loss", {});

  auto result = BuildGradientModel(model, AutodiffOptions{});  // the only output; every float initializer
  ASSERT_TRUE(result.ok()) << result.status().message();
  const onnx::GraphProto& out = result->graph();
  ASSERT_EQ(out.input_size(), 2);
  EXPECT_EQ(out.input(1).name(), "loss_grad");
  EXPECT_EQ(out.input(1).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(out.output_size(), 2);
  EXPECT_EQ(out.output(0).name(), "loss");
  EXPECT_EQ(out.output(1).name(), "w_grad");
  bool custom_domain = false;
  for (const onnx::OperatorSetIdProto& opset : result->opset_import()) custom_domain |= opset.domain() == "ai.onnx_amp";
  EXPECT_TRUE(custom_domain);  // ReluGrad
  bool has_relu_grad = false;
  for (const onnx::NodeProto& node : out.node()) {
    if (node.op_type() == "ReluGrad") {
      has_relu_grad = true;
      EXPECT_EQ(node.domain(), "ai.onnx_amp");
      EXPECT_EQ(node.name().rfind("relu_grad", 0), 0u) << node.name();
    }
  }
  EXPECT_TRUE(has_relu_grad);
}

TEST(Autodiff, RejectsANonScalarOrUnknownLoss) {
  onnx::ModelProto model = BaseModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddNode(graph, "mul", "Mul", {"x", "w"}, {"a"});
  AddFloatValue(graph->add_output(), "a", {2, 3});
  auto non_scalar = BuildGradientModel(model, AutodiffOptions{});
  ASSERT_FALSE(non_scalar.ok());
  EXPECT_EQ(non_scalar.status().code(), ErrorCode::kInvalidArgument);
  AutodiffOptions options;
  options.loss = "nope";
  auto unknown = BuildGradientModel(model, options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("nope"), std::string::npos);
}

}  // namespace
}  // namespace onnx_amp
