// The materializing passes: initializer conversion and clamping, Constant rewriting,
// keep-io-types, Casts inside Loop/If bodies, and idempotent reconversion.
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "converter/convert_model.h"
#include "converter/passes/insert_casts.h"
#include "runtime/onnx/onnx_checks.h"
#include "tests/converter/convert_test_util.h"
#include "tests/converter/model_builder.h"

namespace onnx_amp {
namespace {

using testing::ConvertOk;
using testing::CountOps;
using testing::GraphBuilder;
using testing::NodeDType;
using testing::Options;

const std::vector<float> kW16(16, 0.25f);

const onnx::TensorProto* FindInitializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& init : graph.initializer()) {
    if (init.name() == name) return &init;
  }
  return nullptr;
}

std::vector<uint16_t> Bits(const onnx::TensorProto& tensor) {
  std::vector<uint16_t> bits(tensor.raw_data().size() / 2);
  std::memcpy(bits.data(), tensor.raw_data().data(), bits.size() * 2);
  return bits;
}

// x -> MatMul(W1) -> Add(C) -> MatMul(W2) -> y: the Add is between allows, so C goes low.
onnx::ModelProto ClampModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W1", {4, 4}, kW16).Floats("W2", {4, 4}, kW16);
  g.Floats("C", {4}, {70000.0f, -1e9f, INFINITY, 1e-9f});
  g.Node("MatMul", {"x", "W1"}, {"h"}, "mm1");
  g.Node("Add", {"h", "C"}, {"a"}, "add");
  g.Node("MatMul", {"a", "W2"}, {"y"}, "mm2");
  return model;
}

// The plain float16 policy: mixed_float16 keeps a constant beyond +-65504 float32 instead
// (paint's init_max rule), so clamping is what remains for the all-low policy.
TEST(PassesTest, Float16ClampsAndReportsInitializers) {
  const auto result = ConvertOk(ClampModel(), Options(PolicyKind::kFloat16));
  ASSERT_EQ(result.report.clamped.size(), 1u);
  const ClampedTensor& clamped = result.report.clamped[0];
  EXPECT_EQ(clamped.name, "C");
  EXPECT_EQ(clamped.clamped, 2);             // 70000 and -1e9
  EXPECT_EQ(clamped.worst, -1e9f);
  EXPECT_EQ(clamped.flushed_to_zero, 1);     // 1e-9 < 2^-25
  const onnx::TensorProto* c = FindInitializer(result.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data_type(), onnx::TensorProto::FLOAT16);
  // +65504, -65504, +inf kept, +0.
  EXPECT_EQ(Bits(*c), (std::vector<uint16_t>{0x7BFF, 0xFBFF, 0x7C00, 0x0000}));
  EXPECT_EQ(result.report.initializers_converted, 3);
}

TEST(PassesTest, BFloat16RoundsWithoutClamping) {
  const auto result = ConvertOk(ClampModel(), Options(PolicyKind::kMixedBFloat16));
  EXPECT_TRUE(result.report.clamped.empty());
  const onnx::TensorProto* c = FindInitializer(result.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data_type(), onnx::TensorProto::BFLOAT16);
  // Round to nearest even of 0x4788B800, 0xCE6E6B28, 0x7F800000, 0x3089705F.
  EXPECT_EQ(Bits(*c), (std::vector<uint16_t>{0x4789, 0xCE6E, 0x7F80, 0x3089}));
}

TEST(PassesTest, SharedInitializerIsDuplicatedNotCast) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {4, 4}).Output("y", DType::kFloat32, {4, 4}).Output("z", DType::kFloat32, {4, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"y"}, "mm");
  g.Node("Pow", {"x", "W"}, {"z"}, "pow");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(result.report.initializers_duplicated, 1);
  const onnx::TensorProto* w = FindInitializer(result.model.graph(), "W");
  const onnx::TensorProto* w16 = FindInitializer(result.model.graph(), "W_amp_float16");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(w16, nullptr);
  EXPECT_EQ(w->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(w16->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(Bits(*w16), std::vector<uint16_t>(16, 0x3400));  // 0.25
  EXPECT_EQ(result.report.casts_inserted, 2);  // x in, y out; no Cast on W
}

TEST(PassesTest, ConstantValuesAreRewritten) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  auto& constant = g.Node("Constant", {}, {"k"}, "const");
  auto* attr = constant.add_attribute();
  attr->set_name("value_floats");
  attr->set_type(onnx::AttributeProto::FLOATS);
  for (float v : {1.0f, 2.0f, 1e5f, -3.0f}) attr->add_floats(v);
  g.Node("Mul", {"h", "k"}, {"m"}, "mul");
  g.Node("MatMul", {"m", "W"}, {"y"}, "mm2");
  // init_max would keep 1e5 float32; pinned low, it is converted, clamped and reported.
  ConvertOptions options = Options(PolicyKind::kMixedFloat16);
  options.policy.low_nodes = "^(const|mul)$";
  ASSERT_TRUE(options.policy.Compile().ok());
  const auto result = ConvertOk(model, options);
  EXPECT_EQ(NodeDType(result.report, "const"), "float16");
  EXPECT_EQ(result.report.constants_converted, 1);
  ASSERT_EQ(result.report.clamped.size(), 1u);
  EXPECT_EQ(result.report.clamped[0].name, "k");
  EXPECT_EQ(result.report.clamped[0].worst, 1e5f);
  for (const auto& node : result.model.graph().node()) {
    if (node.op_type() != "Constant") continue;
    ASSERT_EQ(node.attribute(0).name(), "value");
    EXPECT_EQ(node.attribute(0).t().data_type(), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(Bits(node.attribute(0).t()), (std::vector<uint16_t>{0x3C00, 0x4000, 0x7BFF, 0xC200}));
  }
}

// x -> MatMul -> Relu -> MatMul -> y
onnx::ModelProto Mlp() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W1", {4, 4}, kW16).Floats("W2", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W1"}, {"h"}, "mm1");
  g.Node("Relu", {"h"}, {"r"}, "relu");
  g.Node("MatMul", {"r", "W2"}, {"y"}, "mm2");
  return model;
}

int32_t ElemType(const onnx::ValueInfoProto& info) { return info.type().tensor_type().elem_type(); }

TEST(PassesTest, KeepIoTypes) {
  const auto kept = ConvertOk(Mlp(), Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(ElemType(kept.model.graph().input(0)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(ElemType(kept.model.graph().output(0)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(kept.model.graph().output(0).name(), "y");
  EXPECT_EQ(kept.report.casts_inserted, 2);

  ConvertOptions none = Options(PolicyKind::kMixedFloat16);
  none.policy.keep_io_types = {false, {}};
  const auto low = ConvertOk(Mlp(), none);
  EXPECT_EQ(ElemType(low.model.graph().input(0)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(low.model.graph().output(0)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(low.report.casts_inserted, 0);

  ConvertOptions only_y = Options(PolicyKind::kMixedFloat16);
  only_y.policy.keep_io_types = {false, {"y"}};
  const auto mixed = ConvertOk(Mlp(), only_y);
  EXPECT_EQ(ElemType(mixed.model.graph().input(0)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(mixed.model.graph().output(0)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(mixed.report.casts_inserted, 1);
}

void ExpectIdempotent(const onnx::ModelProto& model, const ConvertOptions& options) {
  const auto once = ConvertOk(model, options);
  const auto twice = ConvertOk(once.model, options);
  EXPECT_EQ(twice.model.SerializeAsString(), once.model.SerializeAsString());
  EXPECT_EQ(twice.report.casts_inserted, 0);
}

TEST(PassesTest, ReconversionIsIdempotent) {
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16,
                          PolicyKind::kBFloat16, PolicyKind::kFloat32}) {
    ExpectIdempotent(Mlp(), Options(kind));
    ExpectIdempotent(ClampModel(), Options(kind));
  }
}

// if cond: y = Relu(MatMul(x, W)) else: y = x   (the branch reads x and W from outside)
onnx::ModelProto IfModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("cond", DType::kBool, {}).Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  onnx::NodeProto& if_node = g.Node("If", {"cond"}, {"y"}, "if");
  GraphBuilder then_branch(testing::AddGraphAttr(if_node, "then_branch"));
  then_branch.Output("t_out", DType::kFloat32, {2, 4});
  then_branch.Node("MatMul", {"x", "W"}, {"t_h"}, "then_mm");
  then_branch.Node("Relu", {"t_h"}, {"t_out"}, "then_relu");
  GraphBuilder else_branch(testing::AddGraphAttr(if_node, "else_branch"));
  else_branch.Output("e_out", DType::kFloat32, {2, 4});
  else_branch.Node("Identity", {"x"}, {"e_out"}, "else_id");
  return model;
}

const onnx::GraphProto& Branch(const onnx::ModelProto& model, const std::string& node_name, const std::string& attr) {
  for (const auto& node : model.graph().node()) {
    if (node.name() != node_name) continue;
    for (const auto& a : node.attribute()) {
      if (a.name() == attr) return a.g();
    }
  }
  ADD_FAILURE() << "no subgraph " << node_name << "." << attr;
  static const onnx::GraphProto kEmpty;
  return kEmpty;
}

TEST(PassesTest, IfBranchGetsItsCastsInside) {
  const auto result = ConvertOk(IfModel(), Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(result.report, "then_mm"), "float16");
  EXPECT_EQ(NodeDType(result.report, "if"), "float");
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 0);
  const onnx::GraphProto& then_branch = Branch(result.model, "if", "then_branch");
  EXPECT_EQ(CountOps(then_branch, "Cast"), 2);  // x in, t_out back to float
  EXPECT_EQ(then_branch.output(0).name(), "t_out");
  for (const auto& node : then_branch.node()) {
    if (node.op_type() == "Cast") {
      EXPECT_EQ(node.doc_string(), kAmpCastTag);
    }
  }
  EXPECT_EQ(CountOps(Branch(result.model, "if", "else_branch"), "Cast"), 0);
  // W is read only by the low MatMul in the branch: converted where it lives.
  EXPECT_EQ(FindInitializer(result.model.graph(), "W")->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  ExpectIdempotent(IfModel(), Options(PolicyKind::kMixedFloat16));
}

// Loop 3 times: v = Tanh(MatMul(v, W)); the carried v stays float32.
onnx::ModelProto LoopModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("v0", DType::kFloat32, {2, 4}).Output("v_final", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Ints("trip", {}, {3});
  onnx::NodeProto& loop = g.Node("Loop", {"trip", "", "v0"}, {"v_final"}, "loop");
  GraphBuilder body(testing::AddGraphAttr(loop, "body"));
  body.Input("iter", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("v_in", DType::kFloat32, {2, 4});
  body.Output("cond_out", DType::kBool, {}).Output("v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"cond_in"}, {"cond_out"}, "body_cond");
  body.Node("MatMul", {"v_in", "W"}, {"b_h"}, "body_mm");
  body.Node("Tanh", {"b_h"}, {"v_out"}, "body_tanh");
  return model;
}

TEST(PassesTest, LoopBodyGetsItsCastsInside) {
  const auto result = ConvertOk(LoopModel(), Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(result.report, "body_mm"), "float16");
  EXPECT_EQ(NodeDType(result.report, "body_tanh"), "float");  // infer, not between allows
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 0);
  const onnx::GraphProto& body = Branch(result.model, "loop", "body");
  EXPECT_EQ(CountOps(body, "Cast"), 2);  // v_in to float16, b_h back to float
  EXPECT_EQ(body.input(2).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  ExpectIdempotent(LoopModel(), Options(PolicyKind::kMixedFloat16));

  // Plain float16: Tanh goes low too; the carried value still enters and leaves as float.
  const auto plain = ConvertOk(LoopModel(), Options(PolicyKind::kFloat16));
  EXPECT_EQ(NodeDType(plain.report, "body_tanh"), "float16");
  EXPECT_EQ(CountOps(Branch(plain.model, "loop", "body"), "Cast"), 2);
}

// Below opset 6 Cast is Cast-1: `to` names the type as a string and nothing infers
// the Cast's output type (the ONNX backend tests test_softsign, test_globalaveragepool).
TEST(PassesTest, Opset1CastsNameTheirTypeAndDeclareIt) {
  onnx::ModelProto model = testing::NewModel(/*opset=*/1);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 3, 5, 5}).Output("y", DType::kFloat32, {1, 3, 1, 1});
  g.Node("GlobalAveragePool", {"x"}, {"y"}, "pool");
  const auto result = ConvertOk(model, Options(PolicyKind::kFloat16));
  EXPECT_EQ(NodeDType(result.report, "pool"), "float16");
  std::map<std::string, std::string> cast_to;  // output -> `to`
  for (const auto& node : result.model.graph().node()) {
    if (node.op_type() != "Cast") continue;
    ASSERT_EQ(node.attribute_size(), 1);
    EXPECT_EQ(node.attribute(0).type(), onnx::AttributeProto::STRING);
    cast_to[node.output(0)] = node.attribute(0).s();
  }
  EXPECT_EQ(cast_to, (std::map<std::string, std::string>{{"x_amp_float16", "FLOAT16"}, {"y", "FLOAT"}}));
  ASSERT_EQ(result.model.graph().value_info_size(), 1);
  EXPECT_EQ(result.model.graph().value_info(0).name(), "x_amp_float16");
  EXPECT_EQ(result.model.graph().value_info(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  onnx::ModelProto inferred = result.model;
  const Status status = InferShapes(inferred, /*strict=*/true);
  EXPECT_TRUE(status.ok()) << status.message();
  ExpectIdempotent(model, Options(PolicyKind::kFloat16));
}

}  // namespace
}  // namespace onnx_amp
