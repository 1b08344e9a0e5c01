// If / Loop / Scan on small hand-built graphs, with bodies that read outer-scope values.
#include <gtest/gtest.h>

#include "runtime/executor/executor.h"
#include "tests/runtime/test_graphs.h"
#include "tests/runtime/test_kernels.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::MakeModel;
using testing::SetGraphAttr;
using testing::SetIntAttr;
using testing::SetIntsAttr;
using testing::TensorValue;

Tensor Floats(Shape shape, std::vector<float> values) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor Bool(bool value) {
  Tensor t = Tensor::Empty(DType::kBool, {});
  *t.data<bool>() = value;
  return t;
}

Tensor Int64(int64_t value) {
  Tensor t = Tensor::Empty(DType::kInt64, {});
  *t.data<int64_t>() = value;
  return t;
}

std::vector<float> Values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.num_elements()}; }

class ControlFlowTest : public ::testing::Test {
 protected:
  Expected<RunResult> Run(const onnx::ModelProto& model, const std::map<std::string, Tensor>& feeds) {
    ExecutorOptions options;
    options.kernels = &registry_;
    auto executor = Executor::Create(model, options);
    if (!executor.ok()) return executor.status();
    return (*executor)->Run(feeds);
  }
  KernelRegistry registry_ = testing::MakeTestRegistry();
};

onnx::ModelProto IfModel() {
  onnx::GraphProto then_branch;
  then_branch.set_name("then");
  AddNode(then_branch, "AddOne", {"x"}, {"t_out"}, "then_add", "test");
  *then_branch.add_output() = TensorValue("t_out", DType::kFloat32, {2});
  onnx::GraphProto else_branch;
  else_branch.set_name("else");
  AddNode(else_branch, "AddTest", {"x", "x"}, {"e_out"}, "else_add", "test");
  *else_branch.add_output() = TensorValue("e_out", DType::kFloat32, {2});

  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorValue("cond", DType::kBool, {});
  *graph.add_input() = TensorValue("x", DType::kFloat32, {2});
  onnx::NodeProto* node = AddNode(graph, "If", {"cond"}, {"y"}, "if");
  SetGraphAttr(*node, "then_branch", then_branch);
  SetGraphAttr(*node, "else_branch", else_branch);
  *graph.add_output() = TensorValue("y", DType::kFloat32, {2});
  return MakeModel(graph);
}

TEST_F(ControlFlowTest, IfTakesEachBranch) {
  const onnx::ModelProto model = IfModel();
  auto then_result = Run(model, {{"cond", Bool(true)}, {"x", Floats({2}, {1, 2})}});
  ASSERT_TRUE(then_result.ok()) << then_result.status().message();
  EXPECT_EQ(Values(then_result->outputs[0].tensor), (std::vector<float>{2, 3}));
  auto else_result = Run(model, {{"cond", Bool(false)}, {"x", Floats({2}, {1, 2})}});
  ASSERT_TRUE(else_result.ok()) << else_result.status().message();
  EXPECT_EQ(Values(else_result->outputs[0].tensor), (std::vector<float>{2, 4}));
}

// v = v0; for i < M: scan[i] = v; v = v + y  (y read from the outer scope)
onnx::ModelProto LoopModel() {
  onnx::GraphProto body;
  body.set_name("body");
  *body.add_input() = TensorValue("iter", DType::kInt64, {});
  *body.add_input() = TensorValue("cond_in", DType::kBool, {});
  *body.add_input() = TensorValue("v_in", DType::kFloat32, {2});
  AddNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  AddNode(body, "AddTest", {"v_in", "y"}, {"v_out"}, "step", "test");
  AddNode(body, "Identity", {"v_in"}, {"scan_out"}, "record");
  *body.add_output() = TensorValue("cond_out", DType::kBool, {});
  *body.add_output() = TensorValue("v_out", DType::kFloat32, {2});
  *body.add_output() = TensorValue("scan_out", DType::kFloat32, {2});

  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorValue("M", DType::kInt64, {});
  *graph.add_input() = TensorValue("cond", DType::kBool, {});
  *graph.add_input() = TensorValue("v0", DType::kFloat32, {2});
  *graph.add_input() = TensorValue("y", DType::kFloat32, {2});
  onnx::NodeProto* node = AddNode(graph, "Loop", {"M", "cond", "v0"}, {"v_final", "scans"}, "loop");
  SetGraphAttr(*node, "body", body);
  *graph.add_output() = TensorValue("v_final", DType::kFloat32, {2});
  *graph.add_output() = TensorValue("scans", DType::kFloat32, {-1, 2}, {"trips", ""});
  return MakeModel(graph);
}

TEST_F(ControlFlowTest, LoopCarriesValuesAndStacksScanOutputs) {
  auto result = Run(LoopModel(), {{"M", Int64(3)}, {"cond", Bool(true)}, {"v0", Floats({2}, {1, 2})},
                                  {"y", Floats({2}, {10, 100})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Values(result->outputs[0].tensor), (std::vector<float>{31, 302}));
  EXPECT_EQ(result->outputs[1].tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(Values(result->outputs[1].tensor), (std::vector<float>{1, 2, 11, 102, 21, 202}));
  EXPECT_EQ(result->stats.op_times.at("AddTest").calls, 3);
}

TEST_F(ControlFlowTest, LoopWithFalseConditionRunsZeroTimes) {
  auto result = Run(LoopModel(), {{"M", Int64(3)}, {"cond", Bool(false)}, {"v0", Floats({2}, {1, 2})},
                                  {"y", Floats({2}, {10, 100})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Values(result->outputs[0].tensor), (std::vector<float>{1, 2}));
  // The body declares scan_out as float[2], so the empty stack is [0, 2].
  EXPECT_EQ(result->outputs[1].tensor.shape(), (Shape{0, 2}));
  EXPECT_EQ(result->outputs[1].tensor.dtype(), DType::kFloat32);
}

// Loop body holding an If whose then-branch reads v_in (one level up) and y (two up).
TEST_F(ControlFlowTest, NestedBodiesReadOuterScopes) {
  onnx::GraphProto then_branch;
  then_branch.set_name("then");
  AddNode(then_branch, "AddTest", {"v_in", "y"}, {"t_out"}, "then_add", "test");
  *then_branch.add_output() = TensorValue("t_out", DType::kFloat32, {2});
  onnx::GraphProto else_branch;
  else_branch.set_name("else");
  AddNode(else_branch, "AddOne", {"v_in"}, {"e_out"}, "else_add", "test");
  *else_branch.add_output() = TensorValue("e_out", DType::kFloat32, {2});

  onnx::GraphProto body;
  body.set_name("body");
  *body.add_input() = TensorValue("iter", DType::kInt64, {});
  *body.add_input() = TensorValue("cond_in", DType::kBool, {});
  *body.add_input() = TensorValue("v_in", DType::kFloat32, {2});
  AddNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  onnx::NodeProto* branch = AddNode(body, "If", {"flag"}, {"v_out"}, "choose");
  SetGraphAttr(*branch, "then_branch", then_branch);
  SetGraphAttr(*branch, "else_branch", else_branch);
  *body.add_output() = TensorValue("cond_out", DType::kBool, {});
  *body.add_output() = TensorValue("v_out", DType::kFloat32, {2});

  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorValue("M", DType::kInt64, {});
  *graph.add_input() = TensorValue("flag", DType::kBool, {});
  *graph.add_input() = TensorValue("v0", DType::kFloat32, {2});
  *graph.add_input() = TensorValue("y", DType::kFloat32, {2});
  onnx::NodeProto* loop = AddNode(graph, "Loop", {"M", "", "v0"}, {"v_final"}, "loop");
  SetGraphAttr(*loop, "body", body);
  *graph.add_output() = TensorValue("v_final", DType::kFloat32, {2});
  const onnx::ModelProto model = MakeModel(graph);

  auto taken = Run(model, {{"M", Int64(4)}, {"flag", Bool(true)}, {"v0", Floats({2}, {0, 0})},
                           {"y", Floats({2}, {1, 2})}});
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_EQ(Values(taken->outputs[0].tensor), (std::vector<float>{4, 8}));
  auto other = Run(model, {{"M", Int64(4)}, {"flag", Bool(false)}, {"v0", Floats({2}, {0, 0})},
                           {"y", Floats({2}, {1, 2})}});
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(Values(other->outputs[0].tensor), (std::vector<float>{4, 4}));
}

// Running sum: s = s0; for each slice x_t of X: s = s + x_t; out[t] = s.
onnx::ModelProto ScanModel(const std::vector<int64_t>& x_dims, std::initializer_list<int64_t> input_axes,
                           std::initializer_list<int64_t> input_directions,
                           std::initializer_list<int64_t> output_directions) {
  onnx::GraphProto body;
  body.set_name("body");
  *body.add_input() = TensorValue("s_in", DType::kFloat32, {2});
  *body.add_input() = TensorValue("x_t", DType::kFloat32, {2});
  AddNode(body, "AddTest", {"s_in", "x_t"}, {"s_out"}, "accumulate", "test");
  AddNode(body, "Identity", {"s_out"}, {"scan_out"}, "record");
  *body.add_output() = TensorValue("s_out", DType::kFloat32, {2});
  *body.add_output() = TensorValue("scan_out", DType::kFloat32, {2});

  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorValue("s0", DType::kFloat32, {2});
  *graph.add_input() = TensorValue("X", DType::kFloat32, x_dims);
  onnx::NodeProto* node = AddNode(graph, "Scan", {"s0", "X"}, {"s_final", "Y"}, "scan");
  SetGraphAttr(*node, "body", body);
  SetIntAttr(*node, "num_scan_inputs", 1);
  SetIntsAttr(*node, "scan_input_axes", input_axes);
  SetIntsAttr(*node, "scan_input_directions", input_directions);
  SetIntsAttr(*node, "scan_output_directions", output_directions);
  *graph.add_output() = TensorValue("s_final", DType::kFloat32, {2});
  *graph.add_output() = TensorValue("Y", DType::kFloat32, {3, 2});
  return MakeModel(graph);
}

TEST_F(ControlFlowTest, ScanForward) {
  auto result = Run(ScanModel({3, 2}, {0}, {0}, {0}),
                    {{"s0", Floats({2}, {0, 0})}, {"X", Floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Values(result->outputs[0].tensor), (std::vector<float>{9, 12}));
  EXPECT_EQ(result->outputs[1].tensor.shape(), (Shape{3, 2}));
  EXPECT_EQ(Values(result->outputs[1].tensor), (std::vector<float>{1, 2, 4, 6, 9, 12}));
}

TEST_F(ControlFlowTest, ScanReverseInputAndOutput) {
  // Input reversed: partial sums from the end (5,6), (8,10), (9,12); output reversed too.
  auto result = Run(ScanModel({3, 2}, {0}, {1}, {1}),
                    {{"s0", Floats({2}, {0, 0})}, {"X", Floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Values(result->outputs[0].tensor), (std::vector<float>{9, 12}));
  EXPECT_EQ(Values(result->outputs[1].tensor), (std::vector<float>{9, 12, 8, 10, 5, 6}));
}

TEST_F(ControlFlowTest, ScanAlongAxisOne) {
  // X is [2, 3]: the slices along axis 1 are the columns (1,4), (2,5), (3,6).
  auto result = Run(ScanModel({2, 3}, {1}, {0}, {0}),
                    {{"s0", Floats({2}, {0, 0})}, {"X", Floats({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Values(result->outputs[0].tensor), (std::vector<float>{6, 15}));
  EXPECT_EQ(Values(result->outputs[1].tensor), (std::vector<float>{1, 4, 3, 9, 6, 15}));
}

}  // namespace
}  // namespace onnx_amp
