// Painting rules (converter-anchors (c) steps 5-8, 10) on small hand-built graphs,
// read back from the conversion report, with the Cast count checked against the
// painted boundary edges.
#include <gtest/gtest.h>

#include "converter/convert_model.h"
#include "tests/converter/convert_test_util.h"
#include "tests/converter/model_builder.h"

namespace onnx_amp {
namespace {

using testing::ConvertOk;
using testing::CountBoundaryEdges;
using testing::CountOps;
using testing::GraphBuilder;
using testing::NodeDType;
using testing::Options;

const std::vector<float> kW16(16, 0.25f);
const std::vector<float> kB4 = {0.5f, -0.5f, 1.0f, 2.0f};

// x -> Exp -> Add -> Relu -> Add -> Relu -> MatMul -> y
// (deny -> infer -> clear -> infer -> clear -> allow).
onnx::ModelProto DenyChain() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("b", {4}, kB4).Floats("W", {4, 4}, kW16);
  g.Node("Exp", {"x"}, {"e"}, "exp");
  g.Node("Add", {"e", "b"}, {"a1"}, "add1");
  g.Node("Relu", {"a1"}, {"r1"}, "relu1");
  g.Node("Add", {"r1", "b"}, {"a2"}, "add2");
  g.Node("Relu", {"a2"}, {"r2"}, "relu2");
  g.Node("MatMul", {"r2", "W"}, {"y"}, "mm");
  return model;
}

TEST(PaintTest, DenyFloodsForwardThroughInferAndUpstreamClear) {
  const auto result = ConvertOk(DenyChain(), Options(PolicyKind::kMixedFloat16));
  const ConversionReport& report = result.report;
  EXPECT_EQ(NodeDType(report, "exp"), "float");
  EXPECT_EQ(NodeDType(report, "add1"), "float");
  EXPECT_EQ(NodeDType(report, "relu1"), "float");  // clear upstream of an infer node
  EXPECT_EQ(NodeDType(report, "add2"), "float");
  EXPECT_EQ(NodeDType(report, "relu2"), "float16");  // clear next to allow only: step 8
  EXPECT_EQ(NodeDType(report, "mm"), "float16");
  for (const NodeReport& node : report.nodes) {
    if (node.name == "add1") {
      EXPECT_NE(node.reason.find("deny node 'exp'"), std::string::npos) << node.reason;
    }
  }
  // relu2 reads a2 cast to float16; y is cast back to float.
  EXPECT_EQ(report.casts_inserted, 2);
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 2);
  EXPECT_EQ(report.casts_inserted, CountBoundaryEdges(DenyChain().graph(), report));
}

// x -> MatMul -> Add -> Sigmoid -> MatMul -> Add -> y
onnx::ModelProto InferChain() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W1", {4, 4}, kW16).Floats("W2", {4, 4}, kW16).Floats("b1", {4}, kB4).Floats("b2", {4}, kB4);
  g.Node("MatMul", {"x", "W1"}, {"h1"}, "mm1");
  g.Node("Add", {"h1", "b1"}, {"h2"}, "add1");
  g.Node("Sigmoid", {"h2"}, {"h3"}, "sig");
  g.Node("MatMul", {"h3", "W2"}, {"h4"}, "mm2");
  g.Node("Add", {"h4", "b2"}, {"y"}, "add2");
  return model;
}

TEST(PaintTest, InferBetweenAllowsGoesLow) {
  const auto result = ConvertOk(InferChain(), Options(PolicyKind::kMixedFloat16));
  const ConversionReport& report = result.report;
  EXPECT_EQ(NodeDType(report, "mm1"), "float16");
  EXPECT_EQ(NodeDType(report, "add1"), "float16");
  EXPECT_EQ(NodeDType(report, "sig"), "float16");
  EXPECT_EQ(NodeDType(report, "mm2"), "float16");
  EXPECT_EQ(NodeDType(report, "add2"), "float");  // infer after the last allow: float16 stops
  EXPECT_EQ(report.casts_inserted, 2);
  EXPECT_EQ(report.casts_inserted, CountBoundaryEdges(InferChain().graph(), report));
  // b1 feeds only a low Add: converted; b2 feeds a float32 Add: untouched.
  for (const auto& init : result.model.graph().initializer()) {
    if (init.name() == "b1") {
      EXPECT_EQ(init.data_type(), onnx::TensorProto::FLOAT16);
    }
    if (init.name() == "b2") {
      EXPECT_EQ(init.data_type(), onnx::TensorProto::FLOAT);
    }
  }
}

TEST(PaintTest, BFloat16InferAfterAllowGoesLow) {
  const auto result = ConvertOk(InferChain(), Options(PolicyKind::kMixedBFloat16));
  const ConversionReport& report = result.report;
  EXPECT_EQ(NodeDType(report, "mm2"), "bfloat16");
  EXPECT_EQ(NodeDType(report, "add2"), "bfloat16");  // TF pass 4, bfloat16 only
  EXPECT_EQ(report.casts_inserted, 2);
  EXPECT_EQ(report.casts_inserted, CountBoundaryEdges(InferChain().graph(), report));
}

TEST(PaintTest, AllowSpreadsThroughClearBothWays) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {4, 2});
  g.Floats("W", {4, 4}, kW16).Ints("shape", {2}, {2, 4});
  g.Node("Relu", {"x"}, {"r0"}, "relu0");
  g.Node("MatMul", {"r0", "W"}, {"h"}, "mm");
  g.Node("Reshape", {"h", "shape"}, {"rs"}, "reshape");
  testing::SetIntsAttr(g.Node("Transpose", {"rs"}, {"t"}, "transpose"), "perm", {1, 0});
  g.Node("Relu", {"t"}, {"y"}, "relu");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  const ConversionReport& report = result.report;
  for (const char* name : {"relu0", "mm", "reshape", "transpose", "relu"}) {
    EXPECT_EQ(NodeDType(report, name), "float16") << name;
  }
  EXPECT_EQ(report.casts_inserted, 2);  // x in, y out
  EXPECT_EQ(report.casts_inserted, CountBoundaryEdges(model.graph(), report));
}

TEST(PaintTest, BlockedChainGetsNoCasts) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {1, 1});
  g.Node("Exp", {"x"}, {"e"}, "exp");
  g.Node("Log", {"e"}, {"l"}, "log");
  g.Node("Add", {"l", "l"}, {"s"}, "add");
  g.Node("ReduceSum", {"s"}, {"y"}, "sum");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(result.report.casts_inserted, 0);
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 0);
  EXPECT_EQ(result.model.graph().SerializeAsString(), model.graph().SerializeAsString());
  EXPECT_EQ(result.report.converted_nodes, 0);
}

TEST(PaintTest, UserOverridesPinNodes) {
  ConvertOptions options = Options(PolicyKind::kMixedFloat16);
  options.policy.fp32_nodes = "^mm2$";
  options.policy.low_ops = {"Exp"};
  ASSERT_TRUE(options.policy.Compile().ok());
  const auto result = ConvertOk(InferChain(), options);
  EXPECT_EQ(NodeDType(result.report, "mm1"), "float16");
  EXPECT_EQ(NodeDType(result.report, "mm2"), "float");
  // With mm2 pinned float32 the infer nodes after mm1 are not between allows.
  EXPECT_EQ(NodeDType(result.report, "add1"), "float");
  EXPECT_EQ(result.report.casts_inserted, CountBoundaryEdges(InferChain().graph(), result.report));
}

TEST(PaintTest, PlainPoliciesConvertEverythingEligible) {
  for (PolicyKind kind : {PolicyKind::kFloat16, PolicyKind::kBFloat16}) {
    const auto result = ConvertOk(DenyChain(), Options(kind));
    const std::string low(DTypeName(kind == PolicyKind::kFloat16 ? DType::kFloat16 : DType::kBFloat16));
    for (const char* name : {"exp", "add1", "relu1", "add2", "relu2", "mm"}) {
      EXPECT_EQ(NodeDType(result.report, name), low) << name;
    }
    EXPECT_EQ(result.report.casts_inserted, 2);  // keep-io-types: x in, y out
  }
  const auto fp32 = ConvertOk(DenyChain(), Options(PolicyKind::kFloat32));
  EXPECT_EQ(fp32.report.converted_nodes, 0);
  EXPECT_EQ(fp32.model.graph().SerializeAsString(), DenyChain().graph().SerializeAsString());
}

TEST(PaintTest, SoftmaxFeedingAnOutputStaysFloat32) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("probs", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"logits"}, "dense");
  g.Node("Softmax", {"logits"}, {"probs"}, "softmax");
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kFloat16, PolicyKind::kMixedBFloat16}) {
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_EQ(NodeDType(result.report, "softmax"), "float");
    EXPECT_NE(NodeDType(result.report, "dense"), "float");
    EXPECT_EQ(result.report.casts_inserted, 2);
  }
}

TEST(PaintTest, ExistingCastToFloatIsRetargetedWhenAllConsumersAreLow) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("ids", DType::kInt64, {2, 4}).Output("y", DType::kFloat32, {2, 4}).Output("z", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"f"}, "to_float"), "to", ToOnnx(DType::kFloat32));
  g.Node("MatMul", {"f", "W"}, {"y"}, "mm");
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"f2"}, "to_float_blocked"), "to", ToOnnx(DType::kFloat32));
  g.Node("Exp", {"f2"}, {"z"}, "exp");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(result.report.casts_retargeted, 1);
  for (const auto& node : result.model.graph().node()) {
    if (node.name() == "to_float") {
      EXPECT_EQ(node.attribute(0).i(), ToOnnx(DType::kFloat16));
    }
    if (node.name() == "to_float_blocked") {
      EXPECT_EQ(node.attribute(0).i(), ToOnnx(DType::kFloat32));
    }
  }
  EXPECT_EQ(result.report.casts_inserted, 1);  // only y back to float
}

TEST(PaintTest, ResizeScalesAndEmptyRoiStayUntouched) {
  onnx::ModelProto model = testing::NewModel(13);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 8, 4});
  g.Floats("W", {4, 4}, kW16).Floats("scales", {4}, {1.0f, 1.0f, 2.0f, 1.0f});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Resize", {"h", "", "scales"}, {"r"}, "resize");
  g.Node("MatMul", {"r", "W"}, {"y"}, "mm2");
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16}) {
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_NE(NodeDType(result.report, "resize"), "float");
    for (const auto& node : result.model.graph().node()) {
      if (node.op_type() != "Resize") continue;
      EXPECT_EQ(node.input(1), "");
      EXPECT_EQ(node.input(2), "scales");
    }
    for (const auto& init : result.model.graph().initializer()) {
      if (init.name() == "scales") {
        EXPECT_EQ(init.data_type(), onnx::TensorProto::FLOAT);
      }
    }
  }
}

TEST(PaintTest, PortableTargetKeepsSchemaIllegalOpsFloat32) {
  // Celu admits float only; at opset 13, ops.def says fixed; MatMul at opset 8 has no bfloat16.
  onnx::ModelProto model = testing::NewModel(8);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"y"}, "mm");
  // Kept at opset 8: by default the converter would raise it (opset_upgrade_test.cc).
  ConvertOptions keep = Options(PolicyKind::kMixedBFloat16);
  keep.keep_opset = true;
  const auto bf16 = ConvertOk(model, keep);
  EXPECT_EQ(NodeDType(bf16.report, "mm"), "float");
  EXPECT_NE(bf16.report.nodes[0].reason.find("does not admit bfloat16"), std::string::npos) << bf16.report.nodes[0].reason;
  EXPECT_EQ(bf16.report.casts_inserted, 0);

  ConvertOptions any = Options(PolicyKind::kMixedBFloat16);
  any.target = ConvertTarget::kOnnxAmp;
  const auto amp = ConvertOk(model, any);
  EXPECT_EQ(NodeDType(amp.report, "mm"), "bfloat16");
  bool tagged = false;
  for (const auto& entry : amp.model.metadata_props()) {
    tagged |= entry.key() == kTargetMetadataKey && entry.value() == "onnx-amp";
  }
  EXPECT_TRUE(tagged);
}

TEST(PaintTest, UnknownOpsStayFloat32AndAreReported) {
  onnx::ModelProto model = testing::NewModel();
  auto* custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm");
  g.Node("Frobnicate", {"h"}, {"y"}, "frob").set_domain("com.example");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(result.report.unknown_ops, std::vector<std::string>{"com.example:Frobnicate"});
  EXPECT_EQ(NodeDType(result.report, "mm"), "float16");
}

// At the model opset (kept here; opset_upgrade_test.cc covers the default raise).
TEST(PaintTest, BFloat16ConvNeedsOpset22) {
  onnx::ModelProto model = testing::NewModel(17);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 4, 4});
  g.Floats("K", {1, 1, 1, 1}, {0.5f});
  g.Node("Conv", {"x", "K"}, {"y"}, "conv");
  ConvertOptions keep = Options(PolicyKind::kMixedBFloat16);
  keep.keep_opset = true;
  const auto kept = ConvertOk(model, keep);
  EXPECT_EQ(NodeDType(kept.report, "conv"), "float");
  EXPECT_NE(kept.report.nodes[0].reason.find("Conv-11 does not admit bfloat16"), std::string::npos)
      << kept.report.nodes[0].reason;
  EXPECT_EQ(kept.model.opset_import(0).version(), 17);
}

// Shape -> Gather -> Cast(float) -> Sub -> Div -> Floor -> Add -> Cast(int64): the
// conv output length (L - k) / s + 1 with L = 5000, which float16 cannot hold exactly.
TEST(PaintTest, ShapeArithmeticStaysFloat32) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 5000}).Output("len", DType::kInt64, {1}).Output("y", DType::kFloat32, {1, 5000});
  g.Ints("axis1", {1}, {1}).Floats("k", {}, {3.0f}).Floats("s", {}, {2.0f}).Floats("one", {}, {1.0f});
  g.Node("Shape", {"x"}, {"shape"}, "shape");
  g.Node("Gather", {"shape", "axis1"}, {"L"}, "gather");
  testing::SetIntAttr(g.Node("Cast", {"L"}, {"Lf"}, "to_float"), "to", ToOnnx(DType::kFloat32));
  g.Node("Sub", {"Lf", "k"}, {"d"}, "sub");
  g.Node("Div", {"d", "s"}, {"q"}, "div");
  g.Node("Floor", {"q"}, {"fq"}, "floor");
  g.Node("Add", {"fq", "one"}, {"n"}, "add");
  testing::SetIntAttr(g.Node("Cast", {"n"}, {"len"}, "to_int"), "to", ToOnnx(DType::kInt64));
  g.Node("Relu", {"x"}, {"y"}, "relu");
  for (PolicyKind kind : {PolicyKind::kFloat16, PolicyKind::kMixedFloat16, PolicyKind::kBFloat16}) {
    const auto result = ConvertOk(model, Options(kind));
    for (const char* name : {"to_float", "sub", "div", "floor", "add"}) {
      EXPECT_EQ(NodeDType(result.report, name), "float") << name;
    }
    EXPECT_EQ(result.report.casts_retargeted, 0);
    for (const NodeReport& node : result.report.nodes) {
      if (node.name == "div") {
        EXPECT_NE(node.reason.find("shape arithmetic"), std::string::npos) << node.reason;
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp
