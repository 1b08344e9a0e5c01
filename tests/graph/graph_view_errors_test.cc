// GraphView's structural errors on hand-built models: undefined values (also inside
// subgraphs and as graph outputs), cycles and values produced twice, each naming what
// is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>

#include "runtime/graph/graph_view.h"
#include "tests/graph/graph_test_util.h"

namespace onnx_amp {
namespace {

using ::testing::HasSubstr;
using namespace graph_test;

TEST(GraphViewTest, UndefinedValueIsAnError) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  AddNode(graph, "Add", "bad_add", {"x", "ghost"}, {"y"});
  *graph.add_output() = UntypedInfo("y");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(view.status().message(), HasSubstr("graph 'main'"));
  EXPECT_THAT(view.status().message(), HasSubstr("node 'bad_add' (Add)"));
  EXPECT_THAT(view.status().message(), HasSubstr("'ghost'"));
}

TEST(GraphViewTest, UndefinedValueInSubgraphNamesTheSubgraph) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("cond", kBool, {});
  onnx::NodeProto* if_node = AddNode(graph, "If", "if", {"cond"}, {"y"});
  AddGraphAttribute(*if_node, "then_branch", IfBranch("then", "Neg", "ghost", "then_out"));
  AddGraphAttribute(*if_node, "else_branch", IfBranch("else", "Neg", "ghost", "else_out"));
  *graph.add_output() = UntypedInfo("y");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("graph 'main/if.then_branch'"));
  EXPECT_THAT(view.status().message(), HasSubstr("node 'then_node' (Neg)"));
}

TEST(GraphViewTest, CycleIsAnErrorNamingItsNodes) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  AddNode(graph, "Relu", "entry", {"x"}, {"a"});
  AddNode(graph, "Add", "left", {"a", "c"}, {"b"});
  AddNode(graph, "Neg", "right", {"b"}, {"c"});
  AddNode(graph, "Abs", "after", {"c"}, {"d"});
  *graph.add_output() = UntypedInfo("d");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), ErrorCode::kInvalidModel);
  const std::string& message = view.status().message();
  EXPECT_THAT(message, HasSubstr("cycle"));
  EXPECT_THAT(message, HasSubstr("node 'left' (Add)"));
  EXPECT_THAT(message, HasSubstr("node 'right' (Neg)"));
  // Only the nodes on the cycle are named, not those merely downstream of it.
  EXPECT_THAT(message, ::testing::Not(HasSubstr("'after'")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("'entry'")));
}

TEST(GraphViewTest, SelfLoopIsACycle) {
  onnx::GraphProto graph;
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  AddNode(graph, "Add", "", {"x", "y"}, {"y"});
  *graph.add_output() = UntypedInfo("y");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("cycle: node #0 (Add) -> node #0 (Add)"));
}

TEST(GraphViewTest, ValueProducedTwiceIsAnError) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  AddNode(graph, "Relu", "first", {"x"}, {"y"});
  AddNode(graph, "Neg", "second", {"x"}, {"y"});
  *graph.add_output() = UntypedInfo("y");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("node 'second' (Neg) produces 'y'"));
  EXPECT_THAT(view.status().message(), HasSubstr("node 'first' (Relu)"));

  onnx::GraphProto shadow;
  *shadow.add_input() = TensorInfo("x", kFloat, {2});
  AddNode(shadow, "Relu", "overwrite", {"x"}, {"x"});
  const Expected<std::unique_ptr<ModelView>> shadow_view = BuildModelView(MakeModel(shadow));
  ASSERT_FALSE(shadow_view.ok());
  EXPECT_THAT(shadow_view.status().message(), HasSubstr("already produced by graph input"));
}

TEST(GraphViewTest, UndefinedGraphOutputIsAnError) {
  onnx::GraphProto graph;
  graph.set_name("main");
  *graph.add_input() = TensorInfo("x", kFloat, {2});
  *graph.add_output() = UntypedInfo("nowhere");
  const Expected<std::unique_ptr<ModelView>> view = BuildModelView(MakeModel(graph));
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(view.status().message(), HasSubstr("graph output 'nowhere'"));
}

}  // namespace
}  // namespace onnx_amp
