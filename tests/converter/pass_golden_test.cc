// Each conversion pass run alone on a small painted graph, the graph compared as text
// before and after it. The text lists, per graph: declared inputs, initializers and their
// dtypes, nodes as `Op inputs -> outputs:dtype [attributes]` (output dtypes from the
// plan's value table), declared outputs and value_info. The expectations are written out
// by hand from what each pass must do (see its header comment).
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "converter/passes/convert_initializers.h"
#include "converter/passes/insert_casts.h"
#include "converter/passes/pass_list.h"
#include "converter/passes/retarget_casts.h"
#include "converter/passes/retype_values.h"
#include "converter/passes/rewrite_attributes.h"
#include "converter/paint.h"
#include "tests/converter/model_builder.h"

namespace onnx_amp {
namespace {

using testing::GraphBuilder;

const std::vector<float> kW16(16, 0.25f);

std::string OnnxTypeName(int32_t code) {
  auto dtype = DTypeFromOnnx(code);
  return dtype ? std::string(DTypeName(*dtype)) : "code" + std::to_string(code);
}

std::string DeclaredType(const onnx::ValueInfoProto& info) {
  return OnnxTypeName(info.type().tensor_type().elem_type());
}

// The attributes that carry dtypes (Cast `to`, `dtype`, tensor values) by dtype name,
// float lists by length, other ints by value.
std::string RenderAttribute(const onnx::AttributeProto& attr) {
  switch (attr.type()) {
    case onnx::AttributeProto::INT:
      if (attr.name() == "to" || attr.name() == "dtype") return attr.name() + "=" + OnnxTypeName(static_cast<int32_t>(attr.i()));
      return attr.name() + "=" + std::to_string(attr.i());
    case onnx::AttributeProto::TENSOR: return attr.name() + "=" + OnnxTypeName(attr.t().data_type());
    case onnx::AttributeProto::FLOATS: return attr.name() + "=floats[" + std::to_string(attr.floats_size()) + "]";
    default: return attr.name();
  }
}

std::string Render(const onnx::GraphProto& graph, const ConversionPlan& plan) {
  std::ostringstream out;
  for (const auto& input : graph.input()) out << "in " << input.name() << ":" << DeclaredType(input) << "\n";
  for (const auto& init : graph.initializer()) out << "init " << init.name() << ":" << OnnxTypeName(init.data_type()) << "\n";
  for (const auto& node : graph.node()) {
    out << node.op_type();
    for (int i = 0; i < node.input_size(); ++i) out << (i == 0 ? " " : ", ") << node.input(i);
    out << " ->";
    for (const auto& output : node.output()) {
      const DType dtype = plan.values.TypeOf(output);
      out << " " << output << ":" << (dtype == DType::kUndefined ? "?" : std::string(DTypeName(dtype)));
    }
    for (int a = 0; a < node.attribute_size(); ++a) out << (a == 0 ? " [" : ", ") << RenderAttribute(node.attribute(a));
    out << (node.attribute_size() > 0 ? "]\n" : "\n");
  }
  for (const auto& output : graph.output()) out << "out " << output.name() << ":" << DeclaredType(output) << "\n";
  for (const auto& info : graph.value_info()) out << "info " << info.name() << ":" << DeclaredType(info) << "\n";
  return out.str();
}

// A model painted under `policy`, with what a pass needs to run on it. The plan points
// into the model, so neither moves.
struct Painted {
  onnx::ModelProto model;
  ConversionPlan plan;
  std::unique_ptr<UniqueNames> names;
  ConversionReport report;
  StreamedInitializers streamed;

  std::string Text() const { return Render(model.graph(), plan); }
  Status Run(Pass pass) {
    PassContext context{plan, *names, report, streamed};
    return pass(context);
  }
};

std::unique_ptr<Painted> PaintModel(onnx::ModelProto model, PolicyKind kind, const std::string& low_nodes = "") {
  auto painted = std::make_unique<Painted>();
  painted->model = std::move(model);
  PrecisionPolicy policy;
  policy.kind = kind;
  policy.low_nodes = low_nodes;
  EXPECT_TRUE(policy.Compile().ok());
  auto types = InferValueTypes(painted->model);
  EXPECT_TRUE(types.ok()) << types.status().message();
  if (!types.ok()) return nullptr;
  auto plan = Paint(painted->model, std::move(types).value(), policy, ConvertTarget::kPortable, {});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return nullptr;
  painted->plan = std::move(plan).value();
  painted->names = std::make_unique<UniqueNames>(painted->model, painted->plan.values);
  painted->report.opset = 17;
  return painted;
}

TEST(PassGoldenTest, ListRunsTheFivePassesInOrder) {
  std::vector<std::string> names;
  for (const NamedPass& pass : ConversionPasses()) names.emplace_back(pass.name);
  EXPECT_EQ(names, (std::vector<std::string>{"retarget_casts", "rewrite_attributes", "convert_initializers",
                                             "insert_casts", "retype_values"}));
}

// ids:int64 -> Cast(to=FLOAT) -> MatMul (allow, low); ids -> Cast(to=FLOAT) -> Exp (deny).
// Paint gives the first Cast a float16 output (all its readers are low); the pass writes
// that into `to`. The second Cast feeds float32 and keeps to=float.
TEST(PassGoldenTest, RetargetCasts) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("ids", DType::kInt64, {4, 4}).Output("y", DType::kFloat32, {4, 4}).Output("z", DType::kFloat32, {4, 4});
  g.Floats("W", {4, 4}, kW16);
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"c"}, "cast1"), "to", onnx::TensorProto::FLOAT);
  g.Node("MatMul", {"c", "W"}, {"y"}, "mm");
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"d"}, "cast2"), "to", onnx::TensorProto::FLOAT);
  g.Node("Exp", {"d"}, {"z"}, "exp");
  auto painted = PaintModel(std::move(model), PolicyKind::kMixedFloat16);
  ASSERT_NE(painted, nullptr);
  auto graph_with_to = [](const std::string& to) {
    return "in ids:int64\n"
           "init W:float\n"
           "Cast ids -> c:float16 [to=" + to + "]\n"
           "MatMul c, W -> y:float16\n"
           "Cast ids -> d:float [to=float]\n"
           "Exp d -> z:float\n"
           "out y:float\n"
           "out z:float\n";
  };
  EXPECT_EQ(painted->Text(), graph_with_to("float"));
  ASSERT_TRUE(painted->Run(RetargetCasts).ok());
  EXPECT_EQ(painted->Text(), graph_with_to("float16"));
  EXPECT_EQ(painted->report.casts_retargeted, 1);
}

// Constant(value_floats) and ConstantOfShape (default value: float32 zero), pinned low,
// between two MatMuls: both get a float16 `value` tensor; nothing else changes.
TEST(PassGoldenTest, RewriteAttributes) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Ints("S", {2}, {2, 4});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  auto* values = g.Node("Constant", {}, {"k"}, "const").add_attribute();
  values->set_name("value_floats");
  values->set_type(onnx::AttributeProto::FLOATS);
  for (float v : {1.0f, 2.0f, 3.0f, -3.0f}) values->add_floats(v);
  g.Node("Mul", {"h", "k"}, {"m"}, "mul");
  g.Node("ConstantOfShape", {"S"}, {"f"}, "fill");
  g.Node("Add", {"m", "f"}, {"a"}, "add");
  g.Node("MatMul", {"a", "W"}, {"y"}, "mm2");
  auto painted = PaintModel(std::move(model), PolicyKind::kMixedFloat16, "^(const|mul|fill|add)$");
  ASSERT_NE(painted, nullptr);
  const std::string kHead =
      "in x:float\n"
      "init W:float\n"
      "init S:int64\n"
      "MatMul x, W -> h:float16\n";
  const std::string kMiddle = "Mul h, k -> m:float16\n";
  const std::string kTail =
      "Add m, f -> a:float16\n"
      "MatMul a, W -> y:float16\n"
      "out y:float\n";
  EXPECT_EQ(painted->Text(), kHead + "Constant -> k:float16 [value_floats=floats[4]]\n" + kMiddle +
                                 "ConstantOfShape S -> f:float16\n" + kTail);
  ASSERT_TRUE(painted->Run(RewriteAttributes).ok());
  EXPECT_EQ(painted->Text(), kHead + "Constant -> k:float16 [value=float16]\n" + kMiddle +
                                 "ConstantOfShape S -> f:float16 [value=float16]\n" + kTail);
  EXPECT_EQ(painted->report.constants_converted, 1);  // the Constant; the fill value is new
}

// W is read by a low MatMul and a float32 Pow: a float16 copy feeds the MatMul and W stays.
// V is read only by a low MatMul: converted in place. No Cast is added.
TEST(PassGoldenTest, ConvertInitializers) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {4, 4}).Output("y", DType::kFloat32, {4, 4}).Output("z", DType::kFloat32, {4, 4});
  g.Floats("W", {4, 4}, kW16).Floats("V", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("MatMul", {"h", "V"}, {"y"}, "mm2");
  g.Node("Pow", {"x", "W"}, {"z"}, "pow");
  auto painted = PaintModel(std::move(model), PolicyKind::kMixedFloat16);
  ASSERT_NE(painted, nullptr);
  EXPECT_EQ(painted->Text(),
            "in x:float\n"
            "init W:float\n"
            "init V:float\n"
            "MatMul x, W -> h:float16\n"
            "MatMul h, V -> y:float16\n"
            "Pow x, W -> z:float\n"
            "out y:float\n"
            "out z:float\n");
  ASSERT_TRUE(painted->Run(ConvertInitializers).ok());
  EXPECT_EQ(painted->Text(),
            "in x:float\n"
            "init W:float\n"
            "init V:float16\n"
            "init W_amp_float16:float16\n"
            "MatMul x, W_amp_float16 -> h:float16\n"
            "MatMul h, V -> y:float16\n"
            "Pow x, W -> z:float\n"
            "out y:float\n"
            "out z:float\n");
  EXPECT_EQ(painted->plan.values.TypeOf("V"), DType::kFloat16);
  EXPECT_EQ(painted->report.initializers_converted, 1);
  EXPECT_EQ(painted->report.initializers_duplicated, 1);
}

// x -> MatMul (low) -> y, an output kept float32 and read by Exp (deny). Run alone, the
// pass also casts W (ConvertInitializers, which runs before it in the list, would have
// converted it). y's producer is renamed y_amp_float16 and a Cast writes y, which Exp
// then reads as its float32 input (one Cast per value and dtype).
TEST(PassGoldenTest, InsertCasts) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {4, 4}).Output("y", DType::kFloat32, {4, 4}).Output("z", DType::kFloat32, {4, 4});
  g.Floats("W", {4, 4}, kW16);
  g.Node("MatMul", {"x", "W"}, {"y"}, "mm");
  g.Node("Exp", {"y"}, {"z"}, "exp");
  auto painted = PaintModel(std::move(model), PolicyKind::kMixedFloat16);
  ASSERT_NE(painted, nullptr);
  EXPECT_EQ(painted->Text(),
            "in x:float\n"
            "init W:float\n"
            "MatMul x, W -> y:float16\n"
            "Exp y -> z:float\n"
            "out y:float\n"
            "out z:float\n");
  ASSERT_TRUE(painted->Run(InsertCasts).ok());
  EXPECT_EQ(painted->Text(),
            "in x:float\n"
            "init W:float\n"
            "Cast x -> x_amp_float16:float16 [to=float16]\n"
            "Cast W -> W_amp_float16:float16 [to=float16]\n"
            "MatMul x_amp_float16, W_amp_float16 -> y_amp_float16:float16\n"
            "Cast y_amp_float16 -> y:float [to=float]\n"
            "Exp y -> z:float\n"
            "out y:float\n"
            "out z:float\n");
  EXPECT_EQ(painted->report.casts_inserted, 3);
}

// A value_info declared float for a value now float16 is retyped; the input keeps float.
// Run alone (before InsertCasts has cast y back to float32), the low output y is
// declared float16 too: the pass writes whatever the plan says.
TEST(PassGoldenTest, RetypeValues) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {4, 4}).Output("y", DType::kFloat32, {4, 4});
  g.Floats("W", {4, 4}, kW16);
  GraphBuilder::SetValueInfo(model.mutable_graph()->add_value_info(), "h", DType::kFloat32, {4, 4});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("MatMul", {"h", "W"}, {"y"}, "mm2");
  auto painted = PaintModel(std::move(model), PolicyKind::kMixedFloat16);
  ASSERT_NE(painted, nullptr);
  const std::string kNodes =
      "in x:float\n"
      "init W:float\n"
      "MatMul x, W -> h:float16\n"
      "MatMul h, W -> y:float16\n";
  EXPECT_EQ(painted->Text(), kNodes + "out y:float\ninfo h:float\n");
  ASSERT_TRUE(painted->Run(RetypeValues).ok());
  EXPECT_EQ(painted->Text(), kNodes + "out y:float16\ninfo h:float16\n");
}

}  // namespace
}  // namespace onnx_amp
