// Output verification (converter/verify_output.h): each check of the default level
// fails on a converted model broken the way a converter bug would break it, naming what
// broke, and `full` agrees where ONNX's checker sees the same problem.
#include <string>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "converter/verify_output.h"
#include "tests/converter/convert_test_util.h"
#include "tests/converter/model_builder.h"

namespace onnx_amp {
namespace {

using testing::ConvertOk;
using testing::GraphBuilder;
using testing::Options;

const std::vector<float> kW = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3, 0, 2, 1, -1, 0.75f, 0, 1, 2};

// x -> MatMul(W) -> Relu -> y at opset 17, converted under the float16 policy without
// verification: Cast(x) -> float16 MatMul and Relu -> Cast back to float32 y.
struct Converted {
  onnx::GraphProto original_io;
  onnx::ModelProto model;
};

Converted ConvertUnverified() {
  onnx::ModelProto model = testing::NewModel(17);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm");
  g.Node("Relu", {"h"}, {"y"}, "relu");
  Converted converted;
  *converted.original_io.mutable_input() = model.graph().input();
  *converted.original_io.mutable_output() = model.graph().output();
  ConvertOptions options = Options(PolicyKind::kFloat16);
  options.verify = VerifyLevel::kNone;
  converted.model = ConvertOk(model, options).model;
  return converted;
}

Status Verify(Converted& converted, VerifyLevel level) {
  VerifyOptions options;
  options.level = level;
  return VerifyConvertedModel(converted.original_io, converted.model, options);
}

onnx::NodeProto* FindNode(onnx::GraphProto& graph, const std::string& name) {
  for (auto& node : *graph.mutable_node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

// The Cast whose output `reader` reads as input `index`.
onnx::NodeProto* CastFeeding(onnx::GraphProto& graph, const onnx::NodeProto& reader, int index) {
  for (auto& node : *graph.mutable_node()) {
    if (node.op_type() == "Cast" && node.output(0) == reader.input(index)) return &node;
  }
  return nullptr;
}

TEST(VerifyOutputTest, AConvertedModelPassesEveryLevel) {
  Converted converted = ConvertUnverified();
  ASSERT_EQ(testing::CountOps(converted.model.graph(), "Cast"), 2);
  for (VerifyLevel level : {VerifyLevel::kDefault, VerifyLevel::kFull, VerifyLevel::kNone}) {
    Status verified = Verify(converted, level);
    EXPECT_TRUE(verified.ok()) << VerifyLevelName(level) << ": " << verified.message();
  }
}

TEST(VerifyOutputTest, ACastWhoseTypeDisagreesWithItsConsumerFails) {
  Converted converted = ConvertUnverified();
  onnx::GraphProto& graph = *converted.model.mutable_graph();
  onnx::NodeProto* cast = CastFeeding(graph, *FindNode(graph, "mm"), 0);
  ASSERT_NE(cast, nullptr);
  cast->mutable_attribute(0)->set_i(onnx::TensorProto::FLOAT);  // MatMul now reads float with float16 W
  const Status verified = Verify(converted, VerifyLevel::kDefault);
  EXPECT_EQ(verified.code(), ErrorCode::kInternal);
  EXPECT_NE(verified.message().find("node 'mm' (MatMul)"), std::string::npos) << verified.message();
  EXPECT_FALSE(Verify(converted, VerifyLevel::kFull).ok());
  EXPECT_TRUE(Verify(converted, VerifyLevel::kNone).ok());
}

TEST(VerifyOutputTest, AChangedNodeOutsideItsSchemaTypesFails) {
  Converted converted = ConvertUnverified();
  // Celu-12 admits tensor(float) only; the node reads and writes float16.
  FindNode(*converted.model.mutable_graph(), "relu")->set_op_type("Celu");
  const Status verified = Verify(converted, VerifyLevel::kDefault);
  EXPECT_EQ(verified.code(), ErrorCode::kInternal);
  EXPECT_NE(verified.message().find("node 'relu' (Celu)"), std::string::npos) << verified.message();
  EXPECT_NE(verified.message().find("does not admit"), std::string::npos) << verified.message();
  EXPECT_FALSE(Verify(converted, VerifyLevel::kFull).ok());
}

TEST(VerifyOutputTest, ARenamedGraphOutputFails) {
  Converted converted = ConvertUnverified();
  onnx::GraphProto& graph = *converted.model.mutable_graph();
  for (auto& node : *graph.mutable_node()) {
    if (node.output(0) == "y") node.set_output(0, "y_renamed");
  }
  graph.mutable_output(0)->set_name("y_renamed");
  for (VerifyLevel level : {VerifyLevel::kDefault, VerifyLevel::kFull}) {
    const Status verified = Verify(converted, level);
    EXPECT_EQ(verified.code(), ErrorCode::kInternal);
    EXPECT_NE(verified.message().find("graph output 'y' was renamed to 'y_renamed'"), std::string::npos)
        << verified.message();
  }
}

TEST(VerifyOutputTest, AValueReadBeforeItsCastDefinesItFails) {
  Converted converted = ConvertUnverified();
  onnx::GraphProto& graph = *converted.model.mutable_graph();
  ASSERT_EQ(graph.node(0).op_type(), "Cast");
  graph.mutable_node()->SwapElements(0, 1);  // MatMul now reads the Cast's output before it
  const Status verified = Verify(converted, VerifyLevel::kDefault);
  EXPECT_EQ(verified.code(), ErrorCode::kInternal);
  EXPECT_NE(verified.message().find("which nothing before it"), std::string::npos) << verified.message();
}

TEST(VerifyOutputTest, AConvertedTensorWithTooFewValuesFails) {
  Converted converted = ConvertUnverified();
  onnx::TensorProto* weight = converted.model.mutable_graph()->mutable_initializer(0);
  ASSERT_EQ(weight->data_type(), onnx::TensorProto::FLOAT16);
  ASSERT_EQ(weight->raw_data().size(), kW.size() * 2);
  weight->mutable_raw_data()->resize(weight->raw_data().size() - 2);
  const Status verified = Verify(converted, VerifyLevel::kDefault);
  EXPECT_EQ(verified.code(), ErrorCode::kInternal);
  EXPECT_NE(verified.message().find("holds 15 values for dims of 16"), std::string::npos) << verified.message();
}

TEST(VerifyOutputTest, ADeclaredTypeThatDisagreesWithItsProducerFails) {
  Converted converted = ConvertUnverified();
  onnx::GraphProto& graph = *converted.model.mutable_graph();
  onnx::ValueInfoProto* info = graph.add_value_info();
  GraphBuilder::SetValueInfo(info, "h", DType::kFloat32, {2, 4});  // MatMul writes float16 h
  const Status verified = Verify(converted, VerifyLevel::kDefault);
  EXPECT_EQ(verified.code(), ErrorCode::kInternal);
  EXPECT_NE(verified.message().find("output 'h' is declared tensor(float)"), std::string::npos) << verified.message();
}

TEST(VerifyOutputTest, LevelsParseByNameAndAnUnknownOneNamesTheFlag) {
  for (VerifyLevel level : {VerifyLevel::kDefault, VerifyLevel::kFull, VerifyLevel::kNone}) {
    Expected<VerifyLevel> parsed = ParseVerifyLevel(VerifyLevelName(level));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, level);
  }
  Expected<VerifyLevel> unknown = ParseVerifyLevel("fast");
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("--verify"), std::string::npos);
}

}  // namespace
}  // namespace onnx_amp
