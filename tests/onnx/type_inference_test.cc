// InferModelTypes against ONNX's own type inference: on every model of the ONNX
// backend test data (as it is, and with its intermediate and output declarations
// dropped, so that the rules type every node output) and on the bundled models, each
// value gets the type ONNX's inference (non-strict, as the converter ran it before)
// gives it, value for value, in every graph; then the rules one by one on small graphs,
// and check mode's errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <onnx/onnx_pb.h>

#include "runtime/onnx/model_io.h"
#include "runtime/onnx/onnx_checks.h"
#include "runtime/onnx/type_inference.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

// Every type ONNX's inference declares in `graph` and its bodies, with the graph they are in.
void CollectDeclared(const onnx::GraphProto& graph, std::vector<std::pair<const onnx::GraphProto*, const onnx::ValueInfoProto*>>& out) {
  for (const auto& info : graph.input()) out.emplace_back(&graph, &info);
  for (const auto& info : graph.output()) out.emplace_back(&graph, &info);
  for (const auto& info : graph.value_info()) out.emplace_back(&graph, &info);
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) CollectDeclared(attribute.g(), out);
      for (const auto& sub : attribute.graphs()) CollectDeclared(sub, out);
    }
  }
}

// The graphs of `model` in the order InferModelTypes visits them.
void CollectGraphs(const onnx::GraphProto& graph, std::vector<const onnx::GraphProto*>& out) {
  out.push_back(&graph);
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) CollectGraphs(attribute.g(), out);
      for (const auto& sub : attribute.graphs()) CollectGraphs(sub, out);
    }
  }
}

// Differences between ONNX's inference and ours on `model`, one line each.
std::vector<std::string> CompareWithOnnx(const onnx::ModelProto& model) {
  onnx::ModelProto inferred = model;
  std::vector<std::string> differences;
  if (!InferShapes(inferred, /*strict=*/false).ok()) return differences;  // ONNX gives up: nothing to compare
  const ModelTypes ours = InferModelTypes(model);
  std::vector<const onnx::GraphProto*> originals, copies;
  CollectGraphs(model.graph(), originals);
  CollectGraphs(inferred.graph(), copies);
  if (originals.size() != copies.size() || ours.graphs.size() != originals.size()) {
    return {"graph counts differ"};
  }
  std::vector<std::pair<const onnx::GraphProto*, const onnx::ValueInfoProto*>> declared;
  CollectDeclared(inferred.graph(), declared);
  for (const auto& [graph, info] : declared) {
    const size_t g = std::find(copies.begin(), copies.end(), graph) - copies.begin();
    const ValueType want = ValueTypeOf(info->type());
    const ValueType got = ours.graphs[g].Find(info->name());
    if (want.known() && got != want) {
      differences.push_back("'" + info->name() + "': ONNX " + TypeString(want) + ", ours " + TypeString(got));
    }
  }
  // Values ONNX leaves untyped must stay untyped too (painting treats them as unknown).
  for (size_t g = 0; g < ours.graphs.size(); ++g) {
    for (const auto& [name, value] : ours.graphs[g].values) {
      const ValueType type = value.type;
      if (!type.known()) continue;
      bool declared_by_onnx = false;
      for (const auto& [graph, info] : declared) declared_by_onnx |= graph == copies[g] && info->name() == name;
      bool initializer = false;
      for (const auto& tensor : copies[g]->initializer()) initializer |= tensor.name() == name;
      if (!declared_by_onnx && !initializer) {
        differences.push_back("'" + std::string(name) + "': ONNX untyped, ours " + TypeString(type));
      }
    }
  }
  return differences;
}

// A model of `opset` whose main graph has float inputs `inputs` (shape [2]) and the nodes given.
struct NodeSpec {
  std::string op;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string domain;
};

onnx::ModelProto MakeModel(const std::vector<std::pair<std::string, int32_t>>& inputs,
                           const std::vector<NodeSpec>& nodes, int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("test");
  for (const auto& [name, elem] : inputs) {
    onnx::ValueInfoProto& input = *graph.add_input();
    input.set_name(name);
    input.mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    input.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  }
  for (const NodeSpec& spec : nodes) {
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(spec.op);
    node.set_name(spec.outputs.empty() ? spec.op : spec.outputs[0] + "_node");
    node.set_domain(spec.domain);
    for (const auto& name : spec.inputs) node.add_input(name);
    for (const auto& name : spec.outputs) node.add_output(name);
  }
  return model;
}

void SetAttribute(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto& attribute = *node.add_attribute();
  attribute.set_name(name);
  attribute.set_type(onnx::AttributeProto::INT);
  attribute.set_i(value);
}

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kHalf = onnx::TensorProto::FLOAT16;

ValueType TypeOf(const onnx::ModelProto& model, const std::string& name) {
  return InferModelTypes(model).graphs[0].Find(name);
}

TEST(TypeInference, AgreesWithOnnxOnTheBundledModels) {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(ONNX_AMP_MODELS_DIR)) {
    if (entry.path().extension() != ".onnx") continue;
    Expected<onnx::ModelProto> model = LoadModel(entry.path());
    ASSERT_TRUE(model.ok()) << model.status().message();
    for (const std::string& difference : CompareWithOnnx(*model)) ADD_FAILURE() << entry.path() << ": " << difference;
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

// Downstream of an op nothing types, ONNX's Add reads the type of its first input only:
// Add(unknown, x) is untyped, Add(x, unknown) float. Both agree with ONNX.
TEST(TypeInference, UnknownOpOutputsFollowOnnxRules) {
  onnx::ModelProto model = MakeModel({{"x", kFloat}}, {{"Mystery", {"x"}, {"m"}, "custom"},
                                                       {"Add", {"m", "x"}, {"a"}},
                                                       {"Add", {"x", "m"}, {"b"}}});
  model.add_opset_import()->set_domain("custom");
  model.mutable_opset_import(1)->set_version(1);
  EXPECT_FALSE(TypeOf(model, "m").known());
  EXPECT_FALSE(TypeOf(model, "a").known());
  EXPECT_EQ(TypeOf(model, "b"), ValueType::Tensor(kFloat));
  EXPECT_EQ(CompareWithOnnx(model), std::vector<std::string>{});
}

// Cast's `to`, Constant's value, an ONNX inference function for EyeLike's dtype and a
// single-type output (Shape).
TEST(TypeInference, AttributeAndSingleTypeRules) {
  onnx::ModelProto model = MakeModel({{"x", kFloat}}, {{"Cast", {"x"}, {"c"}},
                                                       {"Shape", {"x"}, {"s"}},
                                                       {"EyeLike", {"e_in"}, {"e"}},
                                                       {"ConstantOfShape", {"s"}, {"z"}}});
  SetAttribute(*model.mutable_graph()->mutable_node(0), "to", kHalf);
  SetAttribute(*model.mutable_graph()->mutable_node(2), "dtype", onnx::TensorProto::INT32);
  // e_in: a 2-d float input for EyeLike.
  onnx::ValueInfoProto& e_in = *model.mutable_graph()->add_input();
  e_in.set_name("e_in");
  e_in.mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  EXPECT_EQ(TypeOf(model, "c"), ValueType::Tensor(kHalf));
  EXPECT_EQ(TypeOf(model, "s"), ValueType::Tensor(onnx::TensorProto::INT64));
  EXPECT_EQ(TypeOf(model, "e"), ValueType::Tensor(onnx::TensorProto::INT32));
  EXPECT_EQ(TypeOf(model, "z"), ValueType::Tensor(kFloat));
  EXPECT_EQ(CompareWithOnnx(model), std::vector<std::string>{});
}

// A variadic op whose inference function indexes outputs by its inputs' count: Adam
// with one tensor set (R, T, X, G, V, H) writes X_new, V_new and H_new. With two
// outputs and an untyped input (so the function runs), the third output is out of range:
// the node's outputs stay untyped instead of the function writing through a null
// pointer (found by the convert fuzz target).
TEST(TypeInference, InferenceFunctionIndexingPastTheOutputsLeavesThemUntyped) {
  onnx::ModelProto model = MakeModel({{"r", kFloat}, {"t", onnx::TensorProto::INT64}, {"x", kFloat}},
                                     {{"Mystery", {"x"}, {"g"}, "custom"},
                                      {"Adam", {"r", "t", "x", "g", "x", "x"}, {"x_new", "v_new"},
                                       "ai.onnx.preview.training"}});
  model.add_opset_import()->set_domain("custom");
  model.mutable_opset_import(1)->set_version(1);
  model.add_opset_import()->set_domain("ai.onnx.preview.training");
  model.mutable_opset_import(2)->set_version(1);
  EXPECT_FALSE(TypeOf(model, "g").known());
  EXPECT_FALSE(TypeOf(model, "x_new").known());
  EXPECT_FALSE(TypeOf(model, "v_new").known());
}

// A call of a model-local function is typed through its body, its attribute
// references resolved from the call: F(x; to) = Cast(Relu(x), to).
TEST(TypeInference, ModelLocalFunctionsAreTypedThroughTheirBody) {
  onnx::ModelProto model = MakeModel({{"x", kFloat}}, {{"F", {"x"}, {"y"}, "local"}});
  model.add_opset_import()->set_domain("local");
  model.mutable_opset_import(1)->set_version(1);
  SetAttribute(*model.mutable_graph()->mutable_node(0), "to", kHalf);
  onnx::FunctionProto& function = *model.add_functions();
  function.set_name("F");
  function.set_domain("local");
  function.add_input("in");
  function.add_output("out");
  function.add_attribute("to");
  function.add_opset_import()->set_version(17);
  onnx::NodeProto& relu = *function.add_node();
  relu.set_op_type("Relu");
  relu.add_input("in");
  relu.add_output("r");
  onnx::NodeProto& cast = *function.add_node();
  cast.set_op_type("Cast");
  cast.add_input("r");
  cast.add_output("out");
  onnx::AttributeProto& to = *cast.add_attribute();
  to.set_name("to");
  to.set_type(onnx::AttributeProto::INT);
  to.set_ref_attr_name("to");
  EXPECT_EQ(TypeOf(model, "y"), ValueType::Tensor(kHalf));
  EXPECT_EQ(CompareWithOnnx(model), std::vector<std::string>{});
}

// Value ids: each value has one, a node reading a value (an enclosing graph's
// included) records its producer's id, and the nodes come in visit order, each
// followed by the nodes of its bodies.
TEST(TypeInference, RecordsTheValueIdsEachNodeReadsAndWrites) {
  onnx::ModelProto model = MakeModel({{"x", kFloat}, {"c", onnx::TensorProto::BOOL}},
                                     {{"Relu", {"x"}, {"a"}}, {"If", {"c"}, {"y"}}, {"Add", {"a", "y"}, {"z"}}});
  auto branch = [](const std::string& op, const std::string& output) {
    onnx::GraphProto graph;
    graph.set_name(op);
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(op);
    node.add_input("a");
    node.add_output(output);
    graph.add_output()->set_name(output);
    return graph;
  };
  onnx::NodeProto& if_node = *model.mutable_graph()->mutable_node(1);
  using Branch = std::tuple<const char*, const char*, const char*>;  // attribute, op, output
  for (const auto& [name, op, output] : {Branch{"then_branch", "Identity", "t"}, Branch{"else_branch", "Neg", "e"}}) {
    onnx::AttributeProto& attribute = *if_node.add_attribute();
    attribute.set_name(name);
    attribute.set_type(onnx::AttributeProto::GRAPH);
    *attribute.mutable_g() = branch(op, output);
  }
  TypeInferenceOptions options;
  options.record_node_values = true;
  const ModelTypes types = InferModelTypes(model, options);
  EXPECT_TRUE(InferModelTypes(model).nodes.empty());  // recorded only on request

  std::vector<std::string> ops;
  for (const NodeValues& record : types.nodes) ops.push_back(record.node->op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Relu", "If", "Identity", "Neg", "Add"}));
  ASSERT_EQ(types.nodes.size(), 5u);
  auto id = [&](int node, int slot) { return types.node_value_ids[types.nodes[node].offset + slot]; };
  const int x = types.graphs[0].values.at("x").id;
  const int a = types.graphs[0].values.at("a").id;
  const int y = types.graphs[0].values.at("y").id;
  EXPECT_EQ(id(0, 0), x);
  EXPECT_EQ(id(0, 1), a);                       // Relu writes a
  EXPECT_EQ(id(2, 0), a);                       // Identity in then_branch reads the outer a
  EXPECT_EQ(id(3, 0), a);                       // so does Neg in else_branch
  EXPECT_EQ(id(2, 1), types.graphs[1].values.at("t").id);
  EXPECT_EQ(id(4, 0), a);                       // Add reads a and y
  EXPECT_EQ(id(4, 1), y);
  EXPECT_EQ(id(1, 1), y);                       // If writes y
  std::set<int> ids;
  for (const GraphTypes& graph : types.graphs) {
    for (const auto& [name, value] : graph.values) {
      EXPECT_TRUE(value.id >= 0 && value.id < types.value_count) << name;
      ids.insert(value.id);
    }
  }
  EXPECT_EQ(static_cast<int>(ids.size()), types.value_count);  // one id per value
  EXPECT_EQ(types.value_count, 7);                             // x, c, a, y, z, t, e
}

// Each graph lists the ids of its initializers, in order.
TEST(TypeInference, RecordsEachGraphsInitializerIds) {
  onnx::ModelProto model = MakeModel({{"x", kFloat}}, {{"Add", {"x", "w"}, {"y"}}, {"Mul", {"y", "v"}, {"z"}}});
  for (const char* name : {"v", "w"}) {
    onnx::TensorProto& tensor = *model.mutable_graph()->add_initializer();
    tensor.set_name(name);
    tensor.set_data_type(onnx::TensorProto::FLOAT);
  }
  const ModelTypes types = InferModelTypes(model);
  const GraphTypes& main = types.graphs[0];
  EXPECT_EQ(main.initializers, (std::vector<int>{main.values.at("v").id, main.values.at("w").id}));
}

// Check mode: each problem a conversion could leave names the graph, node and value.
TEST(TypeInference, CheckModeNamesWhatBreaks) {
  struct Case {
    const char* label;
    onnx::ModelProto model;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({"mixed types", MakeModel({{"x", kFloat}, {"h", kHalf}}, {{"Add", {"x", "h"}, {"a"}}}),
                   "node 'a_node' (Add): input 1 ('B') is tensor(float16) but T is already tensor(float)"});
  cases.push_back({"read before defined", MakeModel({{"x", kFloat}}, {{"Relu", {"r2"}, {"r1"}}, {"Relu", {"x"}, {"r2"}}}),
                   "node 'r1_node' (Relu): reads 'r2', which nothing before it"});
  cases.push_back({"defined twice", MakeModel({{"x", kFloat}}, {{"Relu", {"x"}, {"r"}}, {"Relu", {"x"}, {"r"}}}),
                   "node 'r_node' (Relu): defines 'r', which this graph defines already"});
  onnx::ModelProto resize = MakeModel({{"x", kFloat}, {"scales", kHalf}}, {{"Resize", {"x", "", "scales"}, {"y"}}});
  cases.push_back({"fixed float scales", resize,
                   "node 'y_node' (Resize): input 2 ('scales') is tensor(float16), which Resize-13 does not admit"});
  onnx::ModelProto declared = MakeModel({{"x", kFloat}}, {{"Relu", {"x"}, {"r"}}});
  onnx::ValueInfoProto& output = *declared.mutable_graph()->add_output();
  output.set_name("r");
  output.mutable_type()->mutable_tensor_type()->set_elem_type(kHalf);
  cases.push_back({"declared output", declared,
                   "node 'r_node' (Relu): output 'r' is declared tensor(float16) but computed as tensor(float)"});
  for (const Case& c : cases) {
    Expected<ModelTypes> checked = CheckModelTypes(c.model, nullptr);
    ASSERT_FALSE(checked.ok()) << c.label;
    EXPECT_EQ(checked.status().code(), ErrorCode::kInvalidModel) << c.label;
    EXPECT_NE(checked.status().message().find(c.message), std::string::npos) << c.label << ": " << checked.status().message();
    EXPECT_NE(checked.status().message().find("graph 'main'"), std::string::npos) << checked.status().message();
  }
  // Inference mode types around them, naming the first broken constraint (ONNX's
  // inference rejects such a model), and the filter leaves unselected nodes unchecked.
  const ModelTypes mixed = InferModelTypes(cases[0].model);
  EXPECT_FALSE(mixed.graphs[0].Find("a").known());
  EXPECT_NE(mixed.rejection.find(cases[0].message), std::string::npos) << mixed.rejection;
  EXPECT_EQ(InferModelTypes(cases[1].model).rejection, "");
  EXPECT_TRUE(CheckModelTypes(cases[0].model, [](const auto&, auto, auto) { return false; }).ok());
}

// `graph` and its bodies without value_info and without the types of their outputs, so
// that every node output is typed by the rules instead of a declaration.
void DropDeclarations(onnx::GraphProto& graph) {
  graph.clear_value_info();
  for (onnx::ValueInfoProto& output : *graph.mutable_output()) output.clear_type();
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    for (onnx::AttributeProto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) DropDeclarations(*attribute.mutable_g());
      for (onnx::GraphProto& sub : *attribute.mutable_graphs()) DropDeclarations(sub);
    }
  }
}

TEST(TypeInference, AgreesWithOnnxOnEveryBackendTestModel) {
  const fs::path root(ONNX_AMP_BACKEND_TEST_DATA);
  ASSERT_TRUE(fs::is_directory(root)) << root;
  int compared = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().filename() != "model.onnx") continue;
    Expected<onnx::ModelProto> model = LoadModel(entry.path());
    if (!model.ok()) continue;  // an opset this ONNX build does not know
    for (const std::string& difference : CompareWithOnnx(*model)) {
      ADD_FAILURE() << entry.path().parent_path().filename().string() << ": " << difference;
    }
    DropDeclarations(*model->mutable_graph());
    for (const std::string& difference : CompareWithOnnx(*model)) {
      ADD_FAILURE() << entry.path().parent_path().filename().string() << " undeclared: " << difference;
    }
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace onnx_amp
