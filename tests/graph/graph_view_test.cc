// GraphView on hand-built models: producers and consumers, stable topological order,
// subgraphs with outer-scope reads and element types. Structural errors:
// graph_view_errors_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/core/limits.h"
#include "runtime/graph/graph_view.h"
#include "tests/graph/graph_test_util.h"

namespace onnx_amp {
namespace {

using ::testing::HasSubstr;
using namespace graph_test;

TEST(GraphViewTest, ProducersAndConsumers) {
  onnx::GraphProto graph;
  graph.set_name("g");
  *graph.add_input() = TensorInfo("x", kFloat, {2, 3});
  AddFloatInitializer(graph, "w", {2, 3});
  AddNode(graph, "Relu", "relu", {"x"}, {"y"});
  AddNode(graph, "Add", "add", {"y", "w"}, {"z"});
  AddNode(graph, "Mul", "mul", {"z", "y"}, {"out"});
  *graph.add_output() = TensorInfo("out", kFloat, {2, 3});
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();
  EXPECT_EQ(main.num_nodes(), 3);
  EXPECT_EQ(main.scope_name(), "g");
  EXPECT_EQ(view->default_opset(), 17);

  const ValueInfo* x = main.FindValue("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->source, ValueSource::kGraphInput);
  ASSERT_EQ(x->uses.size(), 1u);
  EXPECT_TRUE(HasUse(*x, 0, 0));

  const ValueInfo* w = main.FindValue("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->source, ValueSource::kInitializer);
  EXPECT_TRUE(HasUse(*w, 1, 1));

  const ValueInfo* y = main.FindValue("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->source, ValueSource::kNodeOutput);
  EXPECT_EQ(y->producer, 0);
  EXPECT_EQ(y->producer_output, 0);
  ASSERT_EQ(y->uses.size(), 2u);
  EXPECT_TRUE(HasUse(*y, 1, 0));
  EXPECT_TRUE(HasUse(*y, 2, 1));
  EXPECT_FALSE(y->is_graph_output);

  const ValueInfo* out = main.FindValue("out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->producer, 2);
  EXPECT_TRUE(out->is_graph_output);
  EXPECT_TRUE(out->uses.empty());
  EXPECT_EQ(main.FindValue("nothing"), nullptr);
  EXPECT_EQ(main.topological_order(), (std::vector<int>{0, 1, 2}));
}

TEST(GraphViewTest, TopologicalOrderOfShuffledGraph) {
  // Chain x -> a -> b -> c -> d stored out of order, plus an independent x -> e.
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("x", kFloat, {4});
  AddNode(graph, "Relu", "n3", {"c"}, {"d"});  // 0
  AddNode(graph, "Relu", "n0", {"x"}, {"a"});  // 1
  AddNode(graph, "Relu", "n2", {"b"}, {"c"});  // 2
  AddNode(graph, "Relu", "n1", {"a"}, {"b"});  // 3
  AddNode(graph, "Neg", "n4", {"x"}, {"e"});   // 4
  *graph.add_output() = UntypedInfo("d");
  *graph.add_output() = UntypedInfo("e");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  // Kahn's algorithm taking the lowest ready index: n0(1), then n1(3) is ready next
  // to n4(4) and wins on index, and so on; n4 waits until nothing lower is ready.
  EXPECT_EQ(view->main_graph().topological_order(), (std::vector<int>{1, 3, 2, 0, 4}));
  // The chain gets its types from inference even though it is stored out of order.
  EXPECT_EQ(view->main_graph().ValueType("d"), DType::kFloat32);
}

TEST(GraphViewTest, LargeReversedChainSorts) {
  constexpr int kNodes = 50000;
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("v0", kFloat, {8});
  // Node i computes v(kNodes - i) from v(kNodes - i - 1): file order is the reverse of data flow.
  for (int i = 0; i < kNodes; ++i) {
    AddNode(graph, "Relu", "", {"v" + std::to_string(kNodes - i - 1)}, {"v" + std::to_string(kNodes - i)});
  }
  *graph.add_output() = UntypedInfo("v" + std::to_string(kNodes));
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const std::vector<int>& order = view->main_graph().topological_order();
  ASSERT_EQ(order.size(), static_cast<size_t>(kNodes));
  for (int i = 0; i < kNodes; ++i) ASSERT_EQ(order[i], kNodes - 1 - i);
  EXPECT_EQ(view->main_graph().ValueType("v" + std::to_string(kNodes)), DType::kFloat32);
}

// `depth` If nodes, each in the then_branch of the one before; every branch reads the
// main graph's x.
onnx::ModelProto NestedIfs(int depth) {
  onnx::GraphProto inner = IfBranch("leaf", "Neg", "x", "leaf_out");
  for (int level = depth; level >= 1; --level) {
    onnx::GraphProto graph;
    graph.set_name(level == 1 ? "main" : "level" + std::to_string(level));
    const std::string out = "out" + std::to_string(level);
    onnx::NodeProto* if_node = AddNode(graph, "If", "if" + std::to_string(level), {"cond"}, {out});
    AddGraphAttribute(*if_node, "then_branch", inner);
    AddGraphAttribute(*if_node, "else_branch", IfBranch("else", "Abs", "x", "else_out"));
    *graph.add_output() = UntypedInfo(out);
    inner = std::move(graph);
  }
  *inner.add_input() = TensorInfo("cond", kBool, {});
  *inner.add_input() = TensorInfo("x", kFloat, {2});
  return MakeModel(inner);
}

TEST(GraphViewTest, SubgraphNestingIsLimited) {
  // kMaxSubgraphDepth bodies inside one another are fine; one more is an error naming the scope.
  const onnx::ModelProto deepest_allowed = NestedIfs(kMaxSubgraphDepth);
  EXPECT_NE(BuildOrDie(deepest_allowed), nullptr);
  const onnx::ModelProto too_deep = NestedIfs(kMaxSubgraphDepth + 1);
  Expected<std::unique_ptr<ModelView>> view = BuildModelView(too_deep);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(view.status().message(), HasSubstr("subgraphs nested more than 32 deep"));
  EXPECT_THAT(view.status().message(), HasSubstr("main/if1.then_branch/if2.then_branch"));
}

TEST(GraphViewTest, IfBranchReadsOuterValue) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("cond", kBool, {});
  *graph.add_input() = TensorInfo("x", kFloat, {"n"});
  // The If comes first in the file but must be ordered after the Relu its branch reads.
  onnx::NodeProto* if_node = AddNode(graph, "If", "if", {"cond"}, {"y"});
  AddGraphAttribute(*if_node, "then_branch", IfBranch("then", "Neg", "w", "then_out"));
  AddGraphAttribute(*if_node, "else_branch", IfBranch("else", "Abs", "x", "else_out"));
  AddNode(graph, "Relu", "relu", {"x"}, {"w"});
  *graph.add_output() = UntypedInfo("y");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();

  EXPECT_EQ(main.topological_order(), (std::vector<int>{1, 0}));
  ASSERT_EQ(main.subgraphs().size(), 2u);
  const std::vector<const GraphView::Subgraph*> owned = main.SubgraphsOf(0);
  ASSERT_EQ(owned.size(), 2u);
  EXPECT_EQ(owned[0]->attribute, "then_branch");
  EXPECT_EQ(owned[1]->attribute, "else_branch");
  EXPECT_TRUE(main.SubgraphsOf(1).empty());

  const GraphView& then_view = *owned[0]->view;
  EXPECT_EQ(then_view.parent(), &main);
  EXPECT_EQ(then_view.scope_name(), "main/if.then_branch");
  const ValueInfo* w_inside = then_view.FindValue("w");
  ASSERT_NE(w_inside, nullptr);
  EXPECT_EQ(w_inside->source, ValueSource::kOuterScope);
  EXPECT_TRUE(HasUse(*w_inside, 0, 0));
  EXPECT_EQ(then_view.outer_scope_reads(), (std::vector<std::string>{"w"}));
  const ValueInfo* w_defined = then_view.LookupValue("w");
  ASSERT_NE(w_defined, nullptr);
  EXPECT_EQ(w_defined, main.FindValue("w"));
  EXPECT_EQ(w_defined->source, ValueSource::kNodeOutput);

  // The branch's read is a use by the If node itself, with input_index -1.
  const ValueInfo* w = main.FindValue("w");
  ASSERT_EQ(w->uses.size(), 1u);
  EXPECT_TRUE(HasUse(*w, 0, -1));
  // x: read by the Relu directly and by the else branch.
  const ValueInfo* x = main.FindValue("x");
  EXPECT_TRUE(HasUse(*x, 1, 0));
  EXPECT_TRUE(HasUse(*x, 0, -1));
  EXPECT_TRUE(main.outer_scope_reads().empty());

  EXPECT_EQ(then_view.ValueType("then_out"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("y"), DType::kFloat32);
}

// Loop body: (iteration, condition, carried) -> (condition, carried + step), step outer.
onnx::GraphProto AccumulateBody(bool typed) {
  onnx::GraphProto body;
  body.set_name("body");
  if (typed) {
    *body.add_input() = TensorInfo("iter", kInt64, {});
    *body.add_input() = TensorInfo("cond_in", kBool, {});
    *body.add_input() = TensorInfo("acc_in", kFloat, {3});
  } else {
    *body.add_input() = UntypedInfo("iter");
    *body.add_input() = UntypedInfo("cond_in");
    *body.add_input() = UntypedInfo("acc_in");
  }
  AddNode(body, "Identity", "keep_going", {"cond_in"}, {"cond_out"});
  AddNode(body, "Add", "accumulate", {"acc_in", "step"}, {"acc_out"});
  *body.add_output() = UntypedInfo("cond_out");
  *body.add_output() = UntypedInfo("acc_out");
  return body;
}

TEST(GraphViewTest, LoopWithCarriedState) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("trips", kInt64, {});
  *graph.add_input() = TensorInfo("cond", kBool, {});
  *graph.add_input() = TensorInfo("acc0", kFloat, {3});
  AddFloatInitializer(graph, "step", {3});
  onnx::NodeProto* loop = AddNode(graph, "Loop", "loop", {"trips", "cond", "acc0"}, {"acc_final"});
  AddGraphAttribute(*loop, "body", AccumulateBody(/*typed=*/true));
  *graph.add_output() = UntypedInfo("acc_final");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();
  ASSERT_EQ(main.subgraphs().size(), 1u);
  const GraphView& body = *main.subgraphs()[0].view;
  EXPECT_EQ(main.subgraphs()[0].attribute, "body");

  const ValueInfo* acc_in = body.FindValue("acc_in");
  ASSERT_NE(acc_in, nullptr);
  EXPECT_EQ(acc_in->source, ValueSource::kGraphInput);
  EXPECT_TRUE(HasUse(*acc_in, 1, 0));
  const ValueInfo* acc_out = body.FindValue("acc_out");
  ASSERT_NE(acc_out, nullptr);
  EXPECT_EQ(acc_out->producer, 1);
  EXPECT_TRUE(acc_out->is_graph_output);
  EXPECT_TRUE(body.FindValue("cond_out")->is_graph_output);

  const ValueInfo* step_inside = body.FindValue("step");
  ASSERT_NE(step_inside, nullptr);
  EXPECT_EQ(step_inside->source, ValueSource::kOuterScope);
  EXPECT_EQ(body.LookupValue("step")->source, ValueSource::kInitializer);
  EXPECT_TRUE(HasUse(*main.FindValue("step"), 0, -1));
  EXPECT_TRUE(HasUse(*main.FindValue("acc0"), 0, 2));

  EXPECT_EQ(body.ValueType("iter"), DType::kInt64);
  EXPECT_EQ(body.ValueType("acc_out"), DType::kFloat32);
  EXPECT_EQ(body.ValueType("step"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("acc_final"), DType::kFloat32);
}

TEST(GraphViewTest, TwoLevelNestingReadsValueTwoScopesUp) {
  // main: a = Relu(x); Loop(body: If(cond_in) { then: Neg(a) } else { Abs(acc_in) }).
  onnx::GraphProto body;
  body.set_name("body");
  *body.add_input() = TensorInfo("iter", kInt64, {});
  *body.add_input() = TensorInfo("cond_in", kBool, {});
  *body.add_input() = TensorInfo("acc_in", kFloat, {2});
  AddNode(body, "Identity", "keep_going", {"cond_in"}, {"cond_out"});
  onnx::NodeProto* inner_if = AddNode(body, "If", "inner_if", {"cond_in"}, {"acc_out"});
  AddGraphAttribute(*inner_if, "then_branch", IfBranch("then", "Neg", "a", "then_out"));
  AddGraphAttribute(*inner_if, "else_branch", IfBranch("else", "Abs", "acc_in", "else_out"));
  *body.add_output() = UntypedInfo("cond_out");
  *body.add_output() = UntypedInfo("acc_out");

  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  *graph.add_input() = TensorInfo("trips", kInt64, {});
  *graph.add_input() = TensorInfo("cond", kBool, {});
  onnx::NodeProto* loop = AddNode(graph, "Loop", "loop", {"trips", "cond", "x"}, {"result"});
  AddGraphAttribute(*loop, "body", body);
  AddNode(graph, "Relu", "relu", {"x"}, {"a"});
  *graph.add_output() = UntypedInfo("result");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();
  EXPECT_EQ(main.topological_order(), (std::vector<int>{1, 0}));

  const GraphView& body_view = *main.SubgraphsOf(0).at(0)->view;
  const std::vector<const GraphView::Subgraph*> branches = body_view.SubgraphsOf(1);
  ASSERT_EQ(branches.size(), 2u);
  const GraphView& then_view = *branches[0]->view;
  EXPECT_EQ(then_view.scope_name(), "main/loop.body/inner_if.then_branch");
  EXPECT_EQ(then_view.parent(), &body_view);
  EXPECT_EQ(then_view.outer_scope_reads(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(then_view.LookupValue("a"), main.FindValue("a"));

  // The body does not define `a`: it passes the read on, recorded on its If node.
  const ValueInfo* a_in_body = body_view.FindValue("a");
  ASSERT_NE(a_in_body, nullptr);
  EXPECT_EQ(a_in_body->source, ValueSource::kOuterScope);
  EXPECT_TRUE(HasUse(*a_in_body, 1, -1));
  EXPECT_EQ(body_view.outer_scope_reads(), (std::vector<std::string>{"a"}));
  // acc_in is the body's own input: a use by the If, not an outer read of the body.
  EXPECT_TRUE(HasUse(*body_view.FindValue("acc_in"), 1, -1));
  EXPECT_TRUE(HasUse(*main.FindValue("a"), 0, -1));

  EXPECT_EQ(then_view.ValueType("then_out"), DType::kFloat32);
  EXPECT_EQ(body_view.ValueType("acc_out"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("result"), DType::kFloat32);
}

TEST(GraphViewTest, TypesAndShapesFromInference) {
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("x", kFloat, {"batch", 4});
  AddFloatInitializer(graph, "w", {4, 3});
  AddNode(graph, "MatMul", "mm", {"x", "w"}, {"y"});
  AddNode(graph, "Shape", "shape", {"y"}, {"s"});
  AddNode(graph, "Greater", "gt", {"y", "y"}, {"mask"});
  onnx::NodeProto* cast = AddNode(graph, "Cast", "cast", {"y"}, {"h"});
  AddIntAttribute(*cast, "to", kFloat16);
  *graph.add_output() = UntypedInfo("h");
  *graph.add_output() = UntypedInfo("s");
  *graph.add_output() = UntypedInfo("mask");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();
  const ValueInfo* y = main.FindValue("y");
  EXPECT_EQ(y->dtype, DType::kFloat32);
  ASSERT_TRUE(y->shape.has_value());
  EXPECT_EQ(y->shape->dims, (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(y->shape->dim_params, (std::vector<std::string>{"batch", ""}));
  EXPECT_EQ(main.ValueType("s"), DType::kInt64);
  EXPECT_EQ(main.ValueType("mask"), DType::kBool);
  EXPECT_EQ(main.ValueType("h"), DType::kFloat16);
  const ValueInfo* w = main.FindValue("w");
  ASSERT_TRUE(w->shape.has_value());
  EXPECT_EQ(w->shape->dims, (std::vector<int64_t>{4, 3}));
}

TEST(GraphViewTest, LargeInitializerTypesSurviveInferenceCopy) {
  // Initializers above the inference copy's size limit are passed as typed inputs.
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("x", kFloat, {"batch", 64});
  AddFloatInitializer(graph, "w", {64, 64});
  AddNode(graph, "MatMul", "mm", {"x", "w"}, {"y"});
  *graph.add_output() = UntypedInfo("y");
  const onnx::ModelProto model = MakeModel(graph);
  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const ValueInfo* y = view->main_graph().FindValue("y");
  EXPECT_EQ(y->dtype, DType::kFloat32);
  ASSERT_TRUE(y->shape.has_value());
  EXPECT_EQ(y->shape->dims, (std::vector<int64_t>{-1, 64}));
  EXPECT_EQ(view->main_graph().FindValue("w")->source, ValueSource::kInitializer);
}

TEST(GraphViewTest, FallbackRulesWhenInferenceIsSilent) {
  // The model imports no default-domain opset, so ONNX inference types nothing and
  // every type below comes from our rules.
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("x", kFloat, {2, 3});
  *graph.add_input() = TensorInfo("trips", kInt64, {});
  *graph.add_input() = TensorInfo("go", kBool, {});
  AddIntAttribute(*AddNode(graph, "Cast", "cast", {"x"}, {"c"}), "to", kFloat16);
  AddNode(graph, "CastLike", "cast_like", {"x", "c"}, {"cl"});
  AddNode(graph, "Shape", "shape", {"x"}, {"s"});
  AddNode(graph, "Size", "size", {"x"}, {"n"});
  AddNode(graph, "Equal", "eq", {"x", "x"}, {"e"});
  AddNode(graph, "Not", "not", {"e"}, {"ne"});
  AddNode(graph, "IsNaN", "isnan", {"x"}, {"nan"});
  AddNode(graph, "ArgMax", "argmax", {"x"}, {"am"});
  AddNode(graph, "NonZero", "nonzero", {"x"}, {"nz"});
  AddTensorAttribute(*AddNode(graph, "Constant", "const_t", {}, {"k"}), "value", onnx::TensorProto::INT32);
  onnx::NodeProto* const_f = AddNode(graph, "Constant", "const_f", {}, {"kf"});
  onnx::AttributeProto* value_float = const_f->add_attribute();
  value_float->set_name("value_float");
  value_float->set_type(onnx::AttributeProto::FLOAT);
  value_float->set_f(1.0f);
  AddNode(graph, "ConstantOfShape", "zeros", {"s"}, {"z"});
  AddTensorAttribute(*AddNode(graph, "ConstantOfShape", "zeros64", {"s"}, {"z64"}), "value",
                     onnx::TensorProto::DOUBLE);
  // A custom op, then a standard op fed only by it: both take their first typed input.
  AddNode(graph, "Mystery", "custom", {"", "c", "x"}, {"m"}, "com.example");
  AddNode(graph, "Relu", "relu", {"m"}, {"r"});
  onnx::NodeProto* if_node = AddNode(graph, "If", "if", {"go"}, {"picked"});
  AddGraphAttribute(*if_node, "then_branch", IfBranch("then", "Identity", "c", "then_out"));
  AddGraphAttribute(*if_node, "else_branch", IfBranch("else", "Identity", "c", "else_out"));
  onnx::NodeProto* loop = AddNode(graph, "Loop", "loop", {"trips", "go", "x"}, {"acc_final"});
  AddGraphAttribute(*loop, "body", AccumulateBody(/*typed=*/false));
  AddFloatInitializer(graph, "step", {3});
  for (const char* output : {"cl", "n", "ne", "nan", "am", "nz", "k", "kf", "z", "z64", "r", "picked", "acc_final"}) {
    *graph.add_output() = UntypedInfo(output);
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* import = model.add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  *model.mutable_graph() = graph;

  const auto view = BuildOrDie(model);
  ASSERT_NE(view, nullptr);
  const GraphView& main = view->main_graph();
  EXPECT_EQ(view->default_opset(), 0);
  EXPECT_FALSE(main.FindValue("c")->shape.has_value());  // inference did not run on it
  EXPECT_EQ(main.ValueType("c"), DType::kFloat16);
  EXPECT_EQ(main.ValueType("cl"), DType::kFloat16);
  EXPECT_EQ(main.ValueType("s"), DType::kInt64);
  EXPECT_EQ(main.ValueType("n"), DType::kInt64);
  EXPECT_EQ(main.ValueType("e"), DType::kBool);
  EXPECT_EQ(main.ValueType("ne"), DType::kBool);
  EXPECT_EQ(main.ValueType("nan"), DType::kBool);
  EXPECT_EQ(main.ValueType("am"), DType::kInt64);
  EXPECT_EQ(main.ValueType("nz"), DType::kInt64);
  EXPECT_EQ(main.ValueType("k"), DType::kInt32);
  EXPECT_EQ(main.ValueType("kf"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("z"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("z64"), DType::kFloat64);
  EXPECT_EQ(main.ValueType("m"), DType::kFloat16);
  EXPECT_EQ(main.ValueType("r"), DType::kFloat16);
  EXPECT_EQ(main.ValueType("picked"), DType::kFloat16);

  const GraphView& body = *main.SubgraphsOf(main.FindValue("acc_final")->producer).at(0)->view;
  EXPECT_EQ(body.ValueType("iter"), DType::kInt64);
  EXPECT_EQ(body.ValueType("cond_in"), DType::kBool);
  EXPECT_EQ(body.ValueType("acc_in"), DType::kFloat32);
  EXPECT_EQ(body.ValueType("cond_out"), DType::kBool);
  EXPECT_EQ(body.ValueType("acc_out"), DType::kFloat32);
  EXPECT_EQ(main.ValueType("acc_final"), DType::kFloat32);
}

}  // namespace
}  // namespace onnx_amp
