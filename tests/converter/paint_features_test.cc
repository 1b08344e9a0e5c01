// Painting features of converter-anchors (c): colour matching across Loop/Scan/If
// (step 9), the overflow seeds of pain 9 (init_max / data_max, Exp->ReduceSum,
// decomposed LayerNorm, long reductions) and the hardware-aware policy with the Cast
// budget of pain 13. Converted models run on our executor against the float32 model.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converter/convert_model.h"
#include "converter/passes/insert_casts.h"
#include "runtime/core/float16.h"
#include "runtime/executor/executor.h"
#include "runtime/onnx/model_io.h"
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

std::vector<float> Identity4() {
  std::vector<float> w(16, 0.0f);
  for (int i = 0; i < 4; ++i) w[i * 5] = 1.0f;
  return w;
}
const std::vector<float> kW16(16, 0.25f);

std::string NodeReason(const ConversionReport& report, const std::string& name) {
  for (const NodeReport& node : report.nodes) {
    if (node.name == name) return node.reason;
  }
  return "";
}

const onnx::GraphProto& SubgraphOf(const onnx::GraphProto& graph, const std::string& node_name,
                                   const std::string& attr) {
  for (const auto& node : graph.node()) {
    if (node.name() != node_name) continue;
    for (const auto& a : node.attribute()) {
      if (a.name() == attr) return a.g();
    }
  }
  ADD_FAILURE() << "no subgraph " << node_name << "." << attr;
  static const onnx::GraphProto kEmpty;
  return kEmpty;
}

int ElemType(const onnx::ValueInfoProto& info) { return info.type().tensor_type().elem_type(); }

std::vector<float> ToFloats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: out[i] = t.data<float>()[i]; break;
      case DType::kFloat16: out[i] = HalfBitsToFloat(t.data<uint16_t>()[i]); break;
      case DType::kBFloat16: out[i] = BFloat16BitsToFloat(t.data<uint16_t>()[i]); break;
      default: return {};
    }
  }
  return out;
}

Tensor FloatTensor(Shape shape, const std::vector<float>& values) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

// Runs `model` on our executor, capturing every value of the main graph.
RunResult RunAll(const onnx::ModelProto& model, const std::map<std::string, Tensor>& feeds) {
  ExecutorOptions options;
  options.capture_all = true;
  options.fuse_activations = false;  // every intermediate is checked, unfused
  options.num_threads = 1;
  auto executor = Executor::Create(model, options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return {};
  auto result = (*executor)->Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  return std::move(result).value();
}

// Names of the captured float values holding inf or NaN.
std::vector<std::string> NonFiniteValues(const RunResult& run) {
  std::vector<std::string> bad;
  for (const auto& [name, tensor] : run.captured) {
    for (float v : ToFloats(tensor)) {
      if (!std::isfinite(v)) {
        bad.push_back(name);
        break;
      }
    }
  }
  return bad;
}

// Largest |mixed - float32| over the first output, relative to max |float32|.
double OutputError(const RunResult& reference, const RunResult& mixed) {
  if (reference.outputs.empty() || mixed.outputs.empty()) return INFINITY;
  const std::vector<float> a = ToFloats(reference.outputs[0].tensor);
  const std::vector<float> b = ToFloats(mixed.outputs[0].tensor);
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double scale = 0.0, error = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(a[i])));
    error = std::max(error, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return error / std::max(scale, 1e-30);
}

// ---------------------------------------------------------------------------------
// Colour matching (step 9).

// x -> MatMul -> h0 -> Loop(3 times: v = Tanh(MatMul(v, W)); carried h0) -> MatMul -> y.
// `mixed_body` replaces the Tanh by Exp -> Add(v_in), which makes the cluster mixed.
onnx::ModelProto CarriedLoop(bool mixed_body) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W0", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16).Floats("W2", {4, 4}, Identity4());
  g.Floats("b", {4}, {0.5f, -0.5f, 0.25f, 1.0f}).Ints("trip", {}, {3});
  g.Node("MatMul", {"x", "W0"}, {"h0"}, "mm0");
  onnx::NodeProto& loop = g.Node("Loop", {"trip", "", "h0"}, {"v_final"}, "loop");
  g.Node("MatMul", {"v_final", "W2"}, {"y"}, "mm2");
  GraphBuilder body(testing::AddGraphAttr(loop, "body"));
  body.Input("iter", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("v_in", DType::kFloat32, {2, 4});
  body.Output("cond_out", DType::kBool, {}).Output("v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"cond_in"}, {"cond_out"}, "body_cond");
  body.Node("MatMul", {"v_in", "W"}, {"b_h"}, "body_mm");
  if (mixed_body) {
    // Exp (deny) floods into the Add, whose float32 result is the next state: the
    // body's output and input members become float32 while the outer ones are low.
    body.Node("Exp", {"b_h"}, {"b_e"}, "body_exp");
    body.Node("Add", {"b_e", "v_in"}, {"v_out"}, "body_add");
  } else {
    body.Node("Tanh", {"b_h"}, {"v_out"}, "body_tanh");
  }
  return model;
}

std::map<std::string, Tensor> LoopFeeds() {
  return {{"x", FloatTensor({2, 4}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f})}};
}

TEST(ColourMatching, LoopCarriedStateAllLowClusterIsPaintedLow) {
  const onnx::ModelProto model = CarriedLoop(/*mixed_body=*/false);
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  const ConversionReport& report = result.report;
  // Tanh lies between the body MatMul and itself around the recurrent edge.
  EXPECT_EQ(NodeDType(report, "body_tanh"), "float16") << NodeReason(report, "body_tanh");
  EXPECT_EQ(NodeDType(report, "body_mm"), "float16");
  EXPECT_EQ(NodeDType(report, "loop"), "float16") << NodeReason(report, "loop");
  const onnx::GraphProto& body = SubgraphOf(result.model.graph(), "loop", "body");
  EXPECT_EQ(ElemType(body.input(2)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(body.output(1)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(CountOps(body, "Cast"), 0);  // the state never leaves float16 inside the loop
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 2);  // x in, y out
  EXPECT_EQ(ElemType(result.model.graph().output(0)), onnx::TensorProto::FLOAT);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  // The low body has no float32 values left to paint: converting again changes nothing.
  const auto again = ConvertOk(result.model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(again.model.SerializeAsString(), result.model.SerializeAsString());
  EXPECT_EQ(again.report.casts_inserted, 0);

  const RunResult reference = RunAll(model, LoopFeeds());
  const RunResult mixed = RunAll(result.model, LoopFeeds());
  // About ten float16 roundings (operands, outputs, three iterations), each <= 2^-11.
  EXPECT_LE(OutputError(reference, mixed), 16 * UnitRoundoff(DType::kFloat16));
}

TEST(ColourMatching, LoopMixedClusterIsAllFloat32) {
  const onnx::ModelProto model = CarriedLoop(/*mixed_body=*/true);
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  const ConversionReport& report = result.report;
  EXPECT_EQ(NodeDType(report, "loop"), "float");
  EXPECT_NE(NodeReason(report, "loop").find("must match"), std::string::npos) << NodeReason(report, "loop");
  EXPECT_EQ(NodeDType(report, "body_exp"), "float");
  EXPECT_EQ(NodeDType(report, "body_add"), "float");
  EXPECT_EQ(NodeDType(report, "body_mm"), "float16");  // allow; reads the float32 state through a Cast
  EXPECT_EQ(NodeDType(report, "mm0"), "float16");
  EXPECT_EQ(NodeDType(report, "mm2"), "float16");
  const onnx::GraphProto& body = SubgraphOf(result.model.graph(), "loop", "body");
  EXPECT_EQ(ElemType(body.input(2)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(ElemType(body.output(1)), onnx::TensorProto::FLOAT);
  // Main graph: x in, h0 to float for the Loop, v_final to float16 for mm2, y out.
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 4);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());

  const RunResult reference = RunAll(model, LoopFeeds());
  const RunResult mixed = RunAll(result.model, LoopFeeds());
  EXPECT_LE(OutputError(reference, mixed), 16 * UnitRoundoff(DType::kFloat16));
}

TEST(ColourMatching, LoopOutputThatIsAGraphOutputStaysFloat32) {
  // The existing passes test model: v0 is a graph input and v_final a graph output, both kept.
  onnx::ModelProto model = CarriedLoop(/*mixed_body=*/false);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.mutable_node()->RemoveLast();  // mm2
  graph.mutable_output(0)->set_name("v_final");
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kFloat16}) {
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_EQ(NodeDType(result.report, "loop"), "float") << NodeReason(result.report, "loop");
    EXPECT_NE(NodeReason(result.report, "loop").find("kept float32"), std::string::npos);
    EXPECT_EQ(ElemType(result.model.graph().output(0)), onnx::TensorProto::FLOAT);
    EXPECT_EQ(result.model.graph().output(0).name(), "v_final");
    const onnx::GraphProto& body = SubgraphOf(result.model.graph(), "loop", "body");
    EXPECT_EQ(ElemType(body.input(2)), onnx::TensorProto::FLOAT);
  }
}

// x -> MatMul -> h; If(cond) then: Relu(MatMul(h, W1)) else: MatMul(h, W2) (or a float32
// branch); z -> Add(b) -> MatMul -> y.
onnx::ModelProto IfModel(bool float32_else) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("cond", DType::kBool, {}).Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W0", {4, 4}, Identity4()).Floats("W1", {4, 4}, kW16).Floats("W2", {4, 4}, Identity4());
  g.Floats("W3", {4, 4}, kW16).Floats("b", {4}, {0.5f, -0.5f, 0.25f, 1.0f});
  g.Node("MatMul", {"x", "W0"}, {"h"}, "mm0");
  onnx::NodeProto& if_node = g.Node("If", {"cond"}, {"z"}, "if");
  g.Node("Add", {"z", "b"}, {"za"}, "add");
  g.Node("MatMul", {"za", "W3"}, {"y"}, "mm3");
  GraphBuilder then_branch(testing::AddGraphAttr(if_node, "then_branch"));
  then_branch.Output("t_out", DType::kFloat32, {2, 4});
  then_branch.Node("MatMul", {"h", "W1"}, {"t_h"}, "then_mm");
  then_branch.Node("Relu", {"t_h"}, {"t_out"}, "then_relu");
  GraphBuilder else_branch(testing::AddGraphAttr(if_node, "else_branch"));
  else_branch.Output("e_out", DType::kFloat32, {2, 4});
  if (float32_else) {
    else_branch.Node("Exp", {"h"}, {"e_x"}, "else_exp");
    else_branch.Node("Mul", {"e_x", "b"}, {"e_out"}, "else_mul");
  } else {
    else_branch.Node("MatMul", {"h", "W2"}, {"e_out"}, "else_mm");
  }
  return model;
}

std::map<std::string, Tensor> IfFeeds(bool cond) {
  Tensor c = Tensor::Empty(DType::kBool, {});
  *c.data<bool>() = cond;
  return {{"cond", c}, {"x", FloatTensor({2, 4}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f})}};
}

TEST(ColourMatching, IfWithBothBranchesLowIsPaintedLow) {
  const onnx::ModelProto model = IfModel(/*float32_else=*/false);
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(result.report, "if"), "float16") << NodeReason(result.report, "if");
  EXPECT_EQ(NodeDType(result.report, "add"), "float16");  // infer between the branch MatMuls and mm3
  const onnx::GraphProto& then_branch = SubgraphOf(result.model.graph(), "if", "then_branch");
  const onnx::GraphProto& else_branch = SubgraphOf(result.model.graph(), "if", "else_branch");
  EXPECT_EQ(ElemType(then_branch.output(0)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(else_branch.output(0)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(CountOps(then_branch, "Cast") + CountOps(else_branch, "Cast"), 0);
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 2);  // x in, y out
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  for (bool cond : {true, false}) {
    const RunResult reference = RunAll(model, IfFeeds(cond));
    const RunResult mixed = RunAll(result.model, IfFeeds(cond));
    EXPECT_LE(OutputError(reference, mixed), 8 * UnitRoundoff(DType::kFloat16)) << "cond " << cond;
  }
}

TEST(ColourMatching, IfWithAFloat32BranchIsAllFloat32) {
  const onnx::ModelProto model = IfModel(/*float32_else=*/true);
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(result.report, "if"), "float");
  EXPECT_NE(NodeReason(result.report, "if").find("must match"), std::string::npos) << NodeReason(result.report, "if");
  EXPECT_EQ(NodeDType(result.report, "then_mm"), "float16");
  EXPECT_EQ(NodeDType(result.report, "else_exp"), "float");
  const onnx::GraphProto& then_branch = SubgraphOf(result.model.graph(), "if", "then_branch");
  const onnx::GraphProto& else_branch = SubgraphOf(result.model.graph(), "if", "else_branch");
  EXPECT_EQ(ElemType(then_branch.output(0)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(ElemType(else_branch.output(0)), onnx::TensorProto::FLOAT);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  for (bool cond : {true, false}) {
    const RunResult reference = RunAll(model, IfFeeds(cond));
    const RunResult mixed = RunAll(result.model, IfFeeds(cond));
    EXPECT_LE(OutputError(reference, mixed), 8 * UnitRoundoff(DType::kFloat16)) << "cond " << cond;
  }
}

// Loop(2) whose body runs an inner Loop(2) on its state: v = MatMul(Tanh(MatMul(u, W)), W).
onnx::ModelProto NestedLoops() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W0", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16).Ints("trip", {}, {2});
  g.Node("MatMul", {"x", "W0"}, {"h0"}, "mm0");
  onnx::NodeProto& outer = g.Node("Loop", {"trip", "", "h0"}, {"v_final"}, "outer");
  g.Node("MatMul", {"v_final", "W0"}, {"y"}, "mm2");
  GraphBuilder body(testing::AddGraphAttr(outer, "body"));
  body.Input("o_iter", DType::kInt64, {}).Input("o_cond", DType::kBool, {}).Input("o_v", DType::kFloat32, {2, 4});
  body.Output("o_cond_out", DType::kBool, {}).Output("o_v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"o_cond"}, {"o_cond_out"}, "outer_cond");
  onnx::NodeProto& inner = body.Node("Loop", {"trip", "", "o_v"}, {"w"}, "inner");
  body.Node("MatMul", {"w", "W"}, {"o_v_out"}, "outer_mm");
  GraphBuilder inner_body(testing::AddGraphAttr(inner, "body"));
  inner_body.Input("i_iter", DType::kInt64, {}).Input("i_cond", DType::kBool, {}).Input("u", DType::kFloat32, {2, 4});
  inner_body.Output("i_cond_out", DType::kBool, {}).Output("u_out", DType::kFloat32, {2, 4});
  inner_body.Node("Identity", {"i_cond"}, {"i_cond_out"}, "inner_cond");
  inner_body.Node("MatMul", {"u", "W"}, {"u_h"}, "inner_mm");
  inner_body.Node("Tanh", {"u_h"}, {"u_out"}, "inner_tanh");
  return model;
}

TEST(ColourMatching, NestedLoopsShareOneLowState) {
  const onnx::ModelProto model = NestedLoops();
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  for (const char* name : {"outer", "inner", "inner_mm", "inner_tanh", "outer_mm"}) {
    EXPECT_EQ(NodeDType(result.report, name), "float16") << name << ": " << NodeReason(result.report, name);
  }
  const onnx::GraphProto& outer_body = SubgraphOf(result.model.graph(), "outer", "body");
  const onnx::GraphProto& inner_body = SubgraphOf(outer_body, "inner", "body");
  EXPECT_EQ(ElemType(outer_body.input(2)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(inner_body.input(2)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(inner_body.output(1)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(CountOps(outer_body, "Cast") + CountOps(inner_body, "Cast"), 0);
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  const RunResult reference = RunAll(model, LoopFeeds());
  const RunResult mixed = RunAll(result.model, LoopFeeds());
  EXPECT_LE(OutputError(reference, mixed), 16 * UnitRoundoff(DType::kFloat16));

  // A float32 pin on the inner MatMul floods deny around the inner recurrent edge:
  // the inner cluster is float32, the outer one stays low with Casts at the boundary.
  ConvertOptions pin = Options(PolicyKind::kMixedFloat16);
  pin.policy.fp32_nodes = "^inner_mm$";
  ASSERT_TRUE(pin.policy.Compile().ok());
  const auto pinned = ConvertOk(model, pin);
  EXPECT_EQ(NodeDType(pinned.report, "inner"), "float") << NodeReason(pinned.report, "inner");
  EXPECT_NE(NodeReason(pinned.report, "inner").find("must match"), std::string::npos);
  EXPECT_EQ(NodeDType(pinned.report, "outer"), "float16") << NodeReason(pinned.report, "outer");
  const onnx::GraphProto& pinned_outer = SubgraphOf(pinned.model.graph(), "outer", "body");
  EXPECT_EQ(ElemType(pinned_outer.input(2)), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(ElemType(SubgraphOf(pinned_outer, "inner", "body").input(2)), onnx::TensorProto::FLOAT);
  EXPECT_EQ(CountOps(pinned_outer, "Cast"), 2);  // o_v into the inner Loop, w into outer_mm
  EXPECT_TRUE(CheckModel(pinned.model, /*full_check=*/true).ok());
  EXPECT_LE(OutputError(reference, RunAll(pinned.model, LoopFeeds())), 16 * UnitRoundoff(DType::kFloat16));
}

// Scan over 3 steps: s = Tanh(MatMul(s, W) + MatMul(x_t, W)); outputs the final state
// and every step's state; both feed MatMuls.
onnx::ModelProto ScanModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x0", DType::kFloat32, {2, 4}).Input("seq", DType::kFloat32, {3, 2, 4});
  g.Output("y", DType::kFloat32, {2, 4}).Output("z", DType::kFloat32, {3, 2, 4});
  g.Floats("I", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x0", "I"}, {"h0"}, "mm_state");
  g.Node("MatMul", {"seq", "I"}, {"xs"}, "mm_seq");
  onnx::NodeProto& scan = g.Node("Scan", {"h0", "xs"}, {"h_final", "hs"}, "scan");
  testing::SetIntAttr(scan, "num_scan_inputs", 1);
  g.Node("MatMul", {"h_final", "I"}, {"y"}, "mm_y");
  g.Node("MatMul", {"hs", "I"}, {"z"}, "mm_z");
  GraphBuilder body(testing::AddGraphAttr(scan, "body"));
  body.Input("s_in", DType::kFloat32, {2, 4}).Input("x_t", DType::kFloat32, {2, 4});
  body.Output("s_out", DType::kFloat32, {2, 4}).Output("s_copy", DType::kFloat32, {2, 4});
  body.Node("MatMul", {"s_in", "W"}, {"s_h"}, "body_mm_s");
  body.Node("MatMul", {"x_t", "W"}, {"x_h"}, "body_mm_x");
  body.Node("Add", {"s_h", "x_h"}, {"pre"}, "body_add");
  body.Node("Tanh", {"pre"}, {"s_out"}, "body_tanh");
  body.Node("Identity", {"s_out"}, {"s_copy"}, "body_copy");
  return model;
}

TEST(ColourMatching, ScanStateAndSlicesArePaintedLow) {
  const onnx::ModelProto model = ScanModel();
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  for (const char* name : {"scan", "body_add", "body_tanh", "body_copy"}) {
    EXPECT_EQ(NodeDType(result.report, name), "float16") << name << ": " << NodeReason(result.report, name);
  }
  const onnx::GraphProto& body = SubgraphOf(result.model.graph(), "scan", "body");
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(ElemType(body.input(k)), onnx::TensorProto::FLOAT16) << k;
    EXPECT_EQ(ElemType(body.output(k)), onnx::TensorProto::FLOAT16) << k;
  }
  EXPECT_EQ(CountOps(body, "Cast"), 0);
  EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 4);  // x0 and seq in, y and z out
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  std::vector<float> seq(24);
  // Positive inputs: the all-0.25 W sums each row, so mixed signs would cancel.
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = 0.05f * static_cast<float>(i % 5) + 0.1f;
  const std::map<std::string, Tensor> feeds = {
      {"x0", FloatTensor({2, 4}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f})},
      {"seq", FloatTensor({3, 2, 4}, seq)}};
  EXPECT_LE(OutputError(RunAll(model, feeds), RunAll(result.model, feeds)), 16 * UnitRoundoff(DType::kFloat16));
}

// ---------------------------------------------------------------------------------
// Pain 9: overflow-sensitive patterns keep float32; no inf in any intermediate.

// h = MatMul(x, I); LayerNorm decomposed by hand over the last axis; y = MatMul(n, W).
onnx::ModelProto DecomposedLayerNorm(bool square_with_mul) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("I", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16);
  g.Floats("two", {}, {2.0f}).Floats("eps", {}, {1e-5f});
  g.Node("MatMul", {"x", "I"}, {"h"}, "mm_in");
  testing::SetIntsAttr(g.Node("ReduceMean", {"h"}, {"mu"}, "ln_mean"), "axes", {-1});
  g.Node("Sub", {"h", "mu"}, {"d"}, "ln_sub");
  if (square_with_mul) {
    g.Node("Mul", {"d", "d"}, {"d2"}, "ln_square");
  } else {
    g.Node("Pow", {"d", "two"}, {"d2"}, "ln_square");
  }
  testing::SetIntsAttr(g.Node("ReduceMean", {"d2"}, {"var"}, "ln_var"), "axes", {-1});
  g.Node("Add", {"var", "eps"}, {"var_eps"}, "ln_add_eps");
  g.Node("Sqrt", {"var_eps"}, {"sigma"}, "ln_sqrt");
  g.Node("Div", {"d", "sigma"}, {"n"}, "ln_div");
  g.Node("MatMul", {"n", "W"}, {"y"}, "mm_out");
  return model;
}

TEST(ConverterPains, P09_DecomposedLayerNormWithLargeDeviationHasNoInf) {
  // |x - mu| = 800 in every row: (x - mu)^2 = 640000 overflows float16.
  const std::map<std::string, Tensor> feeds = {
      {"x", FloatTensor({2, 4}, {800, -800, 800, -800, 1000, -600, 1000, -600})}};
  for (bool square_with_mul : {false, true}) {
    const onnx::ModelProto model = DecomposedLayerNorm(square_with_mul);
    const RunResult reference = RunAll(model, feeds);
    // The inputs are hard: with everything in float16, the square overflows.
    const RunResult plain = RunAll(ConvertOk(model, Options(PolicyKind::kFloat16)).model, feeds);
    EXPECT_FALSE(NonFiniteValues(plain).empty());
    for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
      const auto result = ConvertOk(model, Options(kind));
      SCOPED_TRACE(std::string(PolicyKindName(kind)) + (square_with_mul ? " Mul" : " Pow"));
      for (const char* name : {"ln_mean", "ln_sub", "ln_square", "ln_var", "ln_add_eps", "ln_sqrt", "ln_div"}) {
        EXPECT_EQ(NodeDType(result.report, name), "float") << name;
        EXPECT_NE(NodeReason(result.report, name).find("decomposed LayerNorm"), std::string::npos)
            << name << ": " << NodeReason(result.report, name);
      }
      EXPECT_NE(NodeDType(result.report, "mm_in"), "float");
      const RunResult mixed = RunAll(result.model, feeds);
      EXPECT_GE(mixed.captured.size(), reference.captured.size());  // every value, plus the Casts
      EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
      // n is O(1): rounding h and n, and W's products, each at most one unit roundoff.
      EXPECT_LE(OutputError(reference, mixed),
                8 * UnitRoundoff(kind == PolicyKind::kMixedFloat16 ? DType::kFloat16 : DType::kBFloat16));
    }
  }
}

// s = ReduceSum(MatMul(x, [[1]]), axis 0) over 100000 rows of ones.
onnx::ModelProto LongReduceSum() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {100000, 1}).Output("s", DType::kFloat32, {1, 1});
  g.Floats("one", {1, 1}, {1.0f}).Ints("axis0", {1}, {0});
  g.Node("MatMul", {"x", "one"}, {"h"}, "mm");
  g.Node("ReduceSum", {"h", "axis0"}, {"s"}, "sum");
  return model;
}

TEST(ConverterPains, P09_ReduceSumOfManyOnesIsFinite) {
  const onnx::ModelProto model = LongReduceSum();
  const std::map<std::string, Tensor> feeds = {{"x", FloatTensor({100000, 1}, std::vector<float>(100000, 1.0f))}};
  const RunResult plain = RunAll(ConvertOk(model, Options(PolicyKind::kFloat16)).model, feeds);
  EXPECT_FALSE(NonFiniteValues(plain).empty());  // 1e5 > 65504
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_EQ(NodeDType(result.report, "mm"), kind == PolicyKind::kMixedFloat16 ? "float16" : "bfloat16");
    EXPECT_EQ(NodeDType(result.report, "sum"), "float") << NodeReason(result.report, "sum");
    if (kind == PolicyKind::kMixedBFloat16) {  // an infer op there: the long-axis rule keeps it float32
      EXPECT_NE(NodeReason(result.report, "sum").find("long-axis"), std::string::npos) << NodeReason(result.report, "sum");
    }
    const RunResult mixed = RunAll(result.model, feeds);
    EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
    ASSERT_EQ(mixed.outputs.size(), 1u);
    EXPECT_EQ(ToFloats(mixed.outputs[0].tensor), std::vector<float>{100000.0f});  // ones are exact, the sum float32
  }
}

TEST(ConverterPains, P09_ShortReductionStaysLowUnderBFloat16) {
  // 8 terms, below 2^8: the bfloat16 infer rule applies unchanged.
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {8, 4}).Output("y", DType::kFloat32, {1, 4});
  g.Floats("W", {4, 4}, kW16).Ints("axis0", {1}, {0});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm");
  g.Node("ReduceSum", {"h", "axis0"}, {"s"}, "sum");
  g.Node("MatMul", {"s", "W"}, {"y"}, "mm2");
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedBFloat16));
  EXPECT_EQ(NodeDType(result.report, "sum"), "bfloat16") << NodeReason(result.report, "sum");
}

TEST(ConverterPains, P09_ExpIntoReduceSumHasNoInf) {
  // softmax by hand: e = Exp(MatMul(x, I)); y = MatMul(e / ReduceSum(e), W). With x = 10
  // each e is 22026 (fits float16) but the sum of 4 is 88105 (does not).
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("I", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16).Ints("axes", {1}, {-1});
  g.Node("MatMul", {"x", "I"}, {"h"}, "mm");
  g.Node("Exp", {"h"}, {"e"}, "exp");
  g.Node("Identity", {"e"}, {"e_id"}, "exp_id");
  g.Node("ReduceSum", {"e_id", "axes"}, {"s"}, "sum");
  g.Node("Div", {"e", "s"}, {"p"}, "div");
  g.Node("MatMul", {"p", "W"}, {"y"}, "mm2");
  const std::map<std::string, Tensor> feeds = {{"x", FloatTensor({2, 4}, {10, 10, 10, 10, 10.5f, 9.5f, 10, 10})}};
  const RunResult plain = RunAll(ConvertOk(model, Options(PolicyKind::kFloat16)).model, feeds);
  EXPECT_FALSE(NonFiniteValues(plain).empty());
  const RunResult reference = RunAll(model, feeds);
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    for (const char* name : {"exp", "exp_id", "sum"}) {
      EXPECT_EQ(NodeDType(result.report, name), "float") << name;
      EXPECT_NE(NodeReason(result.report, name).find("Exp->ReduceSum"), std::string::npos)
          << name << ": " << NodeReason(result.report, name);
    }
    EXPECT_EQ(NodeDType(result.report, "div"), "float");  // downstream of deny
    const RunResult mixed = RunAll(result.model, feeds);
    EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
    EXPECT_LE(OutputError(reference, mixed), 8 * UnitRoundoff(kind == PolicyKind::kMixedFloat16 ? DType::kFloat16
                                                                                              : DType::kBFloat16));
  }
}

// h = MatMul(x, I); a = Mul(h, c1); b = Mul(a, c2); y = MatMul(b, W).
onnx::ModelProto ScaledChain(float c1, float c2) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("I", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16).Floats("c1", {}, {c1}).Floats("c2", {}, {c2});
  g.Node("MatMul", {"x", "I"}, {"h"}, "mm");
  g.Node("Mul", {"h", "c1"}, {"a"}, "scale_up");
  g.Node("Mul", {"a", "c2"}, {"b"}, "scale_down");
  g.Node("MatMul", {"b", "W"}, {"y"}, "mm2");
  return model;
}

TEST(ConverterPains, P09_InitMaxKeepsLargeConstantsFloat32) {
  const onnx::ModelProto model = ScaledChain(1e5f, 1e-5f);
  const std::map<std::string, Tensor> feeds = {{"x", FloatTensor({2, 4}, {1, -2, 3, 4, -5, 6, 7, -8})}};
  const RunResult plain = RunAll(ConvertOk(model, Options(PolicyKind::kFloat16)).model, feeds);
  EXPECT_FALSE(NonFiniteValues(plain).empty());  // 1e5 clamps to 65504, h * 65504 overflows
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(result.report, "scale_up"), "float");
  EXPECT_NE(NodeReason(result.report, "scale_up").find("init_max"), std::string::npos)
      << NodeReason(result.report, "scale_up");
  EXPECT_EQ(NodeDType(result.report, "scale_down"), "float");  // infer downstream of the seed
  EXPECT_TRUE(result.report.clamped.empty());  // c1 stays float32 instead of being clamped
  const RunResult mixed = RunAll(result.model, feeds);
  EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
  EXPECT_LE(OutputError(RunAll(model, feeds), mixed), 8 * UnitRoundoff(DType::kFloat16));
  // bfloat16 holds 1e5: nothing to seed.
  const auto bf16 = ConvertOk(model, Options(PolicyKind::kMixedBFloat16));
  EXPECT_EQ(NodeReason(bf16.report, "scale_up").find("init_max"), std::string::npos);
}

// init_max reads Constant values given as value_float / value_floats too.
TEST(ConverterPains, P09_InitMaxSeesConstantValueFloats) {
  for (const char* attr_name : {"value_float", "value_floats"}) {
    SCOPED_TRACE(attr_name);
    onnx::ModelProto model = testing::NewModel();
    GraphBuilder g(model.mutable_graph());
    g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
    g.Floats("I", {4, 4}, Identity4()).Floats("W", {4, 4}, kW16).Floats("c2", {}, {1e-5f});
    onnx::NodeProto& constant = g.Node("Constant", {}, {"c1"}, "big");
    auto* attr = constant.add_attribute();
    attr->set_name(attr_name);
    if (std::string(attr_name) == "value_float") {
      attr->set_type(onnx::AttributeProto::FLOAT);
      attr->set_f(70000.0f);
    } else {
      attr->set_type(onnx::AttributeProto::FLOATS);
      for (float v : {70000.0f, 1.0f, 2.0f, 3.0f}) attr->add_floats(v);
    }
    g.Node("MatMul", {"x", "I"}, {"h"}, "mm");
    g.Node("Mul", {"h", "c1"}, {"a"}, "scale_up");
    g.Node("Mul", {"a", "c2"}, {"b"}, "scale_down");
    g.Node("MatMul", {"b", "W"}, {"y"}, "mm2");
    const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
    EXPECT_EQ(NodeDType(result.report, "scale_up"), "float");
    EXPECT_EQ(NodeDType(result.report, "big"), "float");
    EXPECT_NE(NodeReason(result.report, "scale_up").find("init_max"), std::string::npos)
        << NodeReason(result.report, "scale_up");
    EXPECT_NE(NodeReason(result.report, "scale_up").find("70000"), std::string::npos)
        << NodeReason(result.report, "scale_up");
    EXPECT_TRUE(result.report.clamped.empty());  // 70000 stays float32 instead of clamping to 65504
    const std::map<std::string, Tensor> feeds = {{"x", FloatTensor({2, 4}, {1, -2, 3, 4, -5, 6, 7, -8})}};
    const RunResult mixed = RunAll(result.model, feeds);
    EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
    EXPECT_LE(OutputError(RunAll(model, feeds), mixed), 8 * UnitRoundoff(DType::kFloat16));
  }
}

TEST(ConverterPains, P09_DataMaxKeepsRecordedLargeValuesFloat32) {
  // Constants in range, but h * 100 reaches 1e5 on these inputs.
  const onnx::ModelProto model = ScaledChain(100.0f, 0.001f);
  const std::map<std::string, Tensor> feeds = {
      {"x", FloatTensor({2, 4}, {1000, -500, 250, 125, -1000, 600, 700, -800})}};
  const auto unscreened = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(unscreened.report, "scale_up"), "float16");  // between allows
  EXPECT_FALSE(NonFiniteValues(RunAll(unscreened.model, feeds)).empty());

  ConvertOptions options = Options(PolicyKind::kMixedFloat16);
  options.policy.data_ranges = {{"a", 1e5}, {"h", 1000.0}};
  const auto result = ConvertOk(model, options);
  EXPECT_EQ(NodeDType(result.report, "mm"), "float16");  // h fits
  EXPECT_EQ(NodeDType(result.report, "scale_up"), "float");
  EXPECT_NE(NodeReason(result.report, "scale_up").find("data_max"), std::string::npos)
      << NodeReason(result.report, "scale_up");
  EXPECT_EQ(NodeDType(result.report, "scale_down"), "float");  // reads a
  const RunResult mixed = RunAll(result.model, feeds);
  EXPECT_TRUE(NonFiniteValues(mixed).empty()) << ::testing::PrintToString(NonFiniteValues(mixed));
  EXPECT_LE(OutputError(RunAll(model, feeds), mixed), 8 * UnitRoundoff(DType::kFloat16));
}

TEST(ConverterPains, P09_UserPinWinsOverSeeds) {
  ConvertOptions options = Options(PolicyKind::kMixedFloat16);
  options.policy.low_nodes = "^scale_up$";
  ASSERT_TRUE(options.policy.Compile().ok());
  const auto result = ConvertOk(ScaledChain(1e5f, 1e-5f), options);
  EXPECT_EQ(NodeDType(result.report, "scale_up"), "float16");
  EXPECT_EQ(result.report.clamped.size(), 1u);  // the user asked for it: clamped and reported
}

// ---------------------------------------------------------------------------------
// Pain 13: Cast budget and hardware without fast float16.

onnx::ModelProto LoadBundled(const std::string& name) {
  const auto model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + name);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? *model : onnx::ModelProto();
}

TEST(ConverterPains, P13_CastBudgetOnBundledResNetAndTransformerBlocks) {
  // Budgets, one Cast per boundary the painting cannot avoid. ResNet block: x into the
  // low convolutions, y back to float. Transformer block: the float32 embedding sum and
  // mask bias (denied and downstream-of-deny work) into the low attention, and the
  // logits into the float32 Softmax that writes the output. No Cast round trips.
  const std::vector<std::pair<std::string, int>> budgets = {{"resnet_block.onnx", 2}, {"transformer_block.onnx", 3}};
  for (const auto& [name, budget] : budgets) {
    const onnx::ModelProto model = LoadBundled(name);
    for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
      const auto result = ConvertOk(model, Options(kind));
      EXPECT_LE(result.report.casts_inserted, budget) << name << " " << PolicyKindName(kind);
      EXPECT_GT(result.report.casts_inserted, 0) << name;
    }
  }
}

TEST(ConverterPains, P13_HardwareWithoutFloat16KeepsFloat32) {
  auto parsed = ParsePolicyJson(R"({"policy": "mixed_float16", "hardware": "cpu-no-fp16"})", "p.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->hardware, TargetHardware::kCpuNoFp16);
  auto bad = ParsePolicyJson(R"({"hardware": "tpu"})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p.json: key 'hardware'"), std::string::npos) << bad.status().message();

  for (const char* name : {"resnet_block.onnx", "transformer_block.onnx"}) {
    const onnx::ModelProto model = LoadBundled(name);
    for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kFloat16}) {
      ConvertOptions options = Options(kind);
      options.policy.hardware = TargetHardware::kCpuNoFp16;
      const auto result = ConvertOk(model, options);
      EXPECT_EQ(result.report.casts_inserted, 0) << name;
      EXPECT_EQ(CountOps(result.model.graph(), "Cast"), CountOps(model.graph(), "Cast")) << name;
      for (const NodeReport& node : result.report.nodes) {
        EXPECT_NE(node.dtype, "float16") << name << " " << node.name;
      }
      EXPECT_EQ(result.model.graph().SerializeAsString(), model.graph().SerializeAsString()) << name;
    }
    // bfloat16 is still fast there: the hardware setting only removes float16.
    ConvertOptions bf16 = Options(PolicyKind::kMixedBFloat16);
    bf16.policy.hardware = TargetHardware::kCpuNoFp16;
    EXPECT_GT(ConvertOk(model, bf16).report.casts_inserted, 0) << name;
  }
}

}  // namespace
}  // namespace onnx_amp
