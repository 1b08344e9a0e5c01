// The failures users hit with existing converters (converter-anchors (d)), one test
// each, named after the pain: P01 is pain 1. Pains 8, 9 and 13 are tested with the
// streaming and painting tests. Numeric checks run the converted models on our CPU
// executor; pains_ort_test.py runs them in ONNX Runtime and drives the CLI.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "converter/convert_model.h"
#include "converter/paint.h"
#include "converter/passes/insert_casts.h"
#include "converter/search/auto_convert.h"
#include "runtime/executor/executor.h"
#include "runtime/onnx/onnx_checks.h"
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

// Unit roundoff (half an ulp at 1) of the low dtypes.
constexpr double kFloat16Roundoff = 1.0 / 2048.0;  // 2^-11
constexpr double kBFloat16Roundoff = 1.0 / 256.0;  // 2^-8

const std::vector<float> kW16(16, 0.25f);

std::vector<float> Identity(int n, float scale = 1.0f) {
  std::vector<float> m(static_cast<size_t>(n * n), 0.0f);
  for (int i = 0; i < n; ++i) m[static_cast<size_t>(i * n + i)] = scale;
  return m;
}

// Row i of the result is row (i + shift) mod n of the identity: an exact reordering.
std::vector<float> Permutation(int n, int shift, float scale = 1.0f) {
  std::vector<float> m(static_cast<size_t>(n * n), 0.0f);
  for (int i = 0; i < n; ++i) m[static_cast<size_t>(i * n + (i + shift) % n)] = scale;
  return m;
}

const onnx::TensorProto* FindInitializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& init : graph.initializer()) {
    if (init.name() == name) return &init;
  }
  return nullptr;
}

const onnx::NodeProto* FindNode(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& node : graph.node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

const onnx::GraphProto& Subgraph(const onnx::GraphProto& graph, const std::string& node_name, const std::string& attr) {
  if (const onnx::NodeProto* node = FindNode(graph, node_name)) {
    for (const auto& a : node->attribute()) {
      if (a.name() == attr) return a.g();
    }
  }
  ADD_FAILURE() << "no subgraph " << node_name << "." << attr;
  static const onnx::GraphProto kEmpty;
  return kEmpty;
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  ADD_FAILURE() << "node " << node.name() << " has no attribute " << name;
  return -1;
}

std::vector<uint16_t> Bits16(const onnx::TensorProto& tensor) {
  std::vector<uint16_t> bits(tensor.raw_data().size() / 2);
  std::memcpy(bits.data(), tensor.raw_data().data(), bits.size() * 2);
  return bits;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

bool IsFloat16NaN(uint16_t b) { return (b & 0x7C00) == 0x7C00 && (b & 0x03FF) != 0; }
bool IsBFloat16NaN(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

// Calls `visit` on `graph` and every graph nested in it.
void ForEachGraph(const onnx::GraphProto& graph, const std::function<void(const onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) ForEachGraph(attr.g(), visit);
      for (const auto& sub : attr.graphs()) ForEachGraph(sub, visit);
    }
  }
}

// Every node reads only values defined before it: in its own graph (inputs,
// initializers, earlier nodes) or in an enclosing one up to the node that holds it.
void ExpectTopologicallySorted(const onnx::GraphProto& graph, std::set<std::string> visible) {
  for (const auto& input : graph.input()) visible.insert(input.name());
  for (const auto& init : graph.initializer()) visible.insert(init.name());
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input()) {
      EXPECT_TRUE(in.empty() || visible.count(in)) << "node '" << node.name() << "' in graph '" << graph.name()
                                                  << "' reads '" << in << "' before it is defined";
    }
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) ExpectTopologicallySorted(attr.g(), visible);
    }
    for (const auto& out : node.output()) visible.insert(out);
  }
}

// Every Cast the converter made is read in its own graph (or is one of its outputs):
// Casts land in the consumer's scope, never in an outer graph.
void ExpectAmpCastsReadWhereTheyLive(const onnx::GraphProto& root) {
  ForEachGraph(root, [](const onnx::GraphProto& graph) {
    std::set<std::string> read;
    for (const auto& node : graph.node()) read.insert(node.input().begin(), node.input().end());
    for (const auto& output : graph.output()) read.insert(output.name());
    for (const auto& node : graph.node()) {
      if (node.op_type() != "Cast" || node.doc_string() != kAmpCastTag) continue;
      EXPECT_TRUE(read.count(node.output(0))) << "Cast '" << node.name() << "' in graph '" << graph.name()
                                             << "' is read by no node of that graph";
    }
  });
}

std::vector<const onnx::GraphProto*> AllGraphs(const onnx::GraphProto& root) {
  std::vector<const onnx::GraphProto*> graphs;
  ForEachGraph(root, [&](const onnx::GraphProto& graph) { graphs.push_back(&graph); });
  return graphs;
}

// For each graph of `original` (in ForEachGraph order): the distinct (value, dtype)
// pairs where a float value is read, or returned as a graph output, in another dtype
// than its producer wrote it, from the report's node dtypes and the converted model's
// declared graph input/output types. Each needs one Cast in that graph; initializers
// are converted rather than cast and do not count.
std::vector<int> ScopeBoundaryEdges(const onnx::ModelProto& original, const onnx::ModelProto& converted,
                                    const ConversionReport& report) {
  auto types = InferValueTypes(original);
  EXPECT_TRUE(types.ok()) << types.status().message();
  if (!types.ok()) return {};
  auto is_float = [&](const std::string& name) {
    return types->TypeOf(name) == DType::kFloat32;
  };
  auto elem_name = [](const onnx::ValueInfoProto& info) {
    auto dtype = DTypeFromOnnx(info.type().tensor_type().elem_type());
    return dtype ? std::string(DTypeName(*dtype)) : std::string("n/a");
  };
  const std::vector<const onnx::GraphProto*> before = AllGraphs(original.graph());
  const std::vector<const onnx::GraphProto*> after = AllGraphs(converted.graph());
  EXPECT_EQ(before.size(), after.size());
  if (before.size() != after.size()) return {};
  std::map<std::string, std::string> produced;  // value -> dtype it is written in
  for (size_t g = 0; g < before.size(); ++g) {
    for (const auto& input : after[g]->input()) produced[input.name()] = elem_name(input);
    for (const auto& node : before[g]->node()) {
      for (const auto& out : node.output()) produced[out] = NodeDType(report, node.name());
    }
  }
  std::vector<int> edges_per_graph;
  for (size_t g = 0; g < before.size(); ++g) {
    std::set<std::pair<std::string, std::string>> edges;
    auto add = [&](const std::string& value, const std::string& wanted) {
      auto it = produced.find(value);
      if (!is_float(value) || it == produced.end() || it->second == "n/a" || wanted == "n/a") return;
      if (it->second != wanted) edges.insert({value, wanted});
    };
    for (const auto& node : before[g]->node()) {
      for (const auto& in : node.input()) add(in, NodeDType(report, node.name()));
    }
    for (const auto& output : after[g]->output()) add(output.name(), elem_name(output));
    edges_per_graph.push_back(static_cast<int>(edges.size()));
  }
  return edges_per_graph;
}

int CountAmpCasts(const onnx::GraphProto& graph) {
  int count = 0;
  for (const auto& node : graph.node()) count += node.op_type() == "Cast" && node.doc_string() == kAmpCastTag;
  return count;
}

Tensor FloatTensor(const Shape& shape, const std::vector<float>& values) {
  Tensor tensor = Tensor::Empty(DType::kFloat32, shape);
  EXPECT_EQ(tensor.num_elements(), static_cast<int64_t>(values.size()));
  std::memcpy(tensor.data<float>(), values.data(), values.size() * sizeof(float));
  return tensor;
}

Tensor BoolScalar(bool value) {
  Tensor tensor = Tensor::Empty(DType::kBool, {});
  *tensor.data<bool>() = value;
  return tensor;
}

// Runs `model` on our CPU executor; outputs by name, as doubles (float32 or int64).
std::map<std::string, std::vector<double>> RunModel(const onnx::ModelProto& model, const Feeds& feeds) {
  std::map<std::string, std::vector<double>> outputs;
  auto executor = Executor::Create(model);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return outputs;
  auto result = (*executor)->Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return outputs;
  for (const NamedTensor& output : result->outputs) {
    std::vector<double>& values = outputs[output.name];
    const Tensor& t = output.tensor;
    if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kInt64) {
      ADD_FAILURE() << "output " << output.name << " has dtype " << DTypeName(t.dtype());
      continue;
    }
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      values.push_back(t.dtype() == DType::kFloat32 ? t.data<float>()[i]
                                                    : static_cast<double>(t.data<int64_t>()[i]));
    }
  }
  return outputs;
}

// ---------------------------------------------------------------------------------
// Pain 1: Resize `scales`/`roi` turned float16 make the model invalid.

struct ResizeCase {
  int64_t opset;
  bool sizes;  // sizes given (scales empty) instead of scales
};

// x[1,1,4,4] -> MatMul -> Resize(linear, x2) -> MatMul -> y[1,1,8,8]: the Resize sits
// between allow nodes, so its X goes low while roi/scales must stay float32.
onnx::ModelProto ResizeModel(const ResizeCase& c) {
  onnx::ModelProto model = testing::NewModel(c.opset);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 8, 8});
  g.Floats("W", {4, 4}, kW16).Floats("W8", {8, 8}, Identity(8, 0.5f));
  g.Floats("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  g.Floats("scales_empty", {0}, {});
  g.Floats("roi", {8}, {0, 0, 0, 0, 1, 1, 1, 1});
  g.Ints("sizes", {4}, {1, 1, 8, 8});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  std::vector<std::string> inputs;
  if (c.opset == 10) {
    inputs = {"h", "scales"};
  } else if (c.opset == 11) {  // roi and scales are required at opset 11
    inputs = c.sizes ? std::vector<std::string>{"h", "roi", "scales_empty", "sizes"}
                     : std::vector<std::string>{"h", "roi", "scales"};
  } else {
    inputs = c.sizes ? std::vector<std::string>{"h", "", "", "sizes"} : std::vector<std::string>{"h", "roi", "scales"};
  }
  auto& resize = g.Node("Resize", inputs, {"r"}, "resize");
  auto* mode = resize.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  g.Node("MatMul", {"r", "W8"}, {"y"}, "mm2");
  return model;
}

TEST(ConverterPains, P01_ResizeScalesAndRoiStayFloat) {
  const std::vector<ResizeCase> cases = {{10, false}, {11, false}, {11, true}, {13, false}, {13, true},
                                         {18, false}, {18, true},  {19, false}, {19, true}};
  for (const ResizeCase& c : cases) {
    const onnx::ModelProto model = ResizeModel(c);
    for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16}) {
      SCOPED_TRACE("opset " + std::to_string(c.opset) + (c.sizes ? " sizes " : " scales ") +
                   std::string(PolicyKindName(kind)));
      // Resize-10/11 admit no bfloat16 X; from opset 13 X goes low under every policy.
      // The opset is kept so that the Resize inputs compare one to one (raising it from
      // 10 inserts roi); opset_upgrade_test.cc covers the raise.
      const bool bf16 = kind == PolicyKind::kMixedBFloat16;
      ConvertOptions options = Options(kind);
      options.keep_opset = true;
      const auto result = ConvertOk(model, options);  // verified: full checker + strict inference
      const onnx::GraphProto& graph = result.model.graph();
      const std::string low = bf16 ? "bfloat16" : "float16";
      EXPECT_EQ(NodeDType(result.report, "resize"), bf16 && c.opset < 13 ? "float" : low);
      const onnx::NodeProto* resize = FindNode(graph, "resize");
      ASSERT_NE(resize, nullptr);
      const onnx::NodeProto& original = *FindNode(model.graph(), "resize");
      ASSERT_EQ(resize->input_size(), original.input_size());
      for (int i = 1; i < resize->input_size(); ++i) {
        EXPECT_EQ(resize->input(i), original.input(i)) << "Resize input " << i << " was rewired";
      }
      for (const char* name : {"scales", "scales_empty", "roi"}) {
        const onnx::TensorProto* init = FindInitializer(graph, name);
        ASSERT_NE(init, nullptr) << name;
        EXPECT_EQ(init->data_type(), onnx::TensorProto::FLOAT) << name;
      }
      for (const auto& node : graph.node()) {
        if (node.op_type() != "Cast") continue;
        for (const char* name : {"scales", "scales_empty", "roi"}) EXPECT_NE(node.input(0), name);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Pain 2: a Cast on an empty optional input ("Either sizes or scales must be provided").

// Resize(h, "", scales_empty, sizes) and Resize(h, "", "", sizes) between MatMuls in
// the main graph, and the same inside a Loop body, whose zero-length scales is its own
// initializer (type inference tells an empty scales from a given one only by its data,
// so a Cast in front of it makes the model invalid: the pain).
onnx::ModelProto EmptyOptionalModel() {
  onnx::ModelProto model = testing::NewModel(13);
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Input("v0", DType::kFloat32, {2, 4});
  g.Output("y", DType::kFloat32, {1, 1, 8, 8}).Output("v_final", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Floats("W8", {8, 8}, Identity(8, 0.5f)).Floats("scales_empty", {0}, {});
  g.Ints("sizes", {4}, {1, 1, 8, 8}).Ints("sizes_same", {2}, {2, 4}).Ints("trip", {}, {2});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Resize", {"h", "", "scales_empty", "sizes"}, {"r1"}, "resize_zero_length");
  g.Node("Resize", {"r1", "", "", "sizes"}, {"r2"}, "resize_absent");
  g.Node("MatMul", {"r2", "W8"}, {"y"}, "mm2");
  onnx::NodeProto& loop = g.Node("Loop", {"trip", "", "v0"}, {"v_final"}, "loop");
  GraphBuilder body(testing::AddGraphAttr(loop, "body"));
  body.Input("iter", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("v_in", DType::kFloat32, {2, 4});
  body.Output("cond_out", DType::kBool, {}).Output("v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"cond_in"}, {"cond_out"}, "body_cond");
  body.Floats("body_scales_empty", {0}, {});
  body.Node("MatMul", {"v_in", "W"}, {"b_h"}, "body_mm1");
  body.Node("Resize", {"b_h", "", "body_scales_empty", "sizes_same"}, {"b_r"}, "body_resize");
  body.Node("Resize", {"b_r", "", "", "sizes_same"}, {"b_r2"}, "body_resize_absent");
  body.Node("MatMul", {"b_r2", "W"}, {"v_out"}, "body_mm2");
  return model;
}

TEST(ConverterPains, P02_EmptyOptionalInputsGetNoCast) {
  const onnx::ModelProto model = EmptyOptionalModel();
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    const std::string low = kind == PolicyKind::kMixedBFloat16 ? "bfloat16" : "float16";
    // Only the type changes: every Resize runs low and keeps its optional inputs as they were.
    for (const char* name : {"resize_zero_length", "resize_absent", "body_resize", "body_resize_absent"}) {
      EXPECT_EQ(NodeDType(result.report, name), low) << name;
    }
    const onnx::GraphProto& graph = result.model.graph();
    const onnx::GraphProto& body = Subgraph(graph, "loop", "body");
    const std::vector<std::pair<const onnx::GraphProto*, const onnx::GraphProto*>> scopes = {
        {&model.graph(), &graph}, {&Subgraph(model.graph(), "loop", "body"), &body}};
    for (const auto& [before, after] : scopes) {
      for (const auto& node : after->node()) {
        if (node.op_type() == "Resize") {
          const onnx::NodeProto* original = FindNode(*before, node.name());
          ASSERT_NE(original, nullptr);
          for (int i = 1; i < node.input_size(); ++i) EXPECT_EQ(node.input(i), original->input(i)) << node.name();
        }
        if (node.op_type() == "Cast") {
          EXPECT_NE(node.input(0), "scales_empty");
          EXPECT_NE(node.input(0), "body_scales_empty");
          EXPECT_FALSE(node.input(0).empty());
        }
      }
    }
    for (const onnx::TensorProto* empty :
         {FindInitializer(graph, "scales_empty"), FindInitializer(body, "body_scales_empty")}) {
      ASSERT_NE(empty, nullptr);
      EXPECT_EQ(empty->data_type(), onnx::TensorProto::FLOAT);
      ASSERT_EQ(empty->dims_size(), 1);
      EXPECT_EQ(empty->dims(0), 0);
    }
    EXPECT_EQ(result.report.casts_inserted, 4);  // x in, y out; v_in in, v_out out in the body
    EXPECT_EQ(CountOps(graph, "Cast"), 2);
    EXPECT_EQ(CountOps(body, "Cast"), 2);
    EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  }
}

// ---------------------------------------------------------------------------------
// Pain 3: Cast(to=FLOAT) left at to=1 while its output is labelled float16.

// ids:int64 -> Cast(float) -> Mul between MatMuls (low); ids -> Cast(float) -> Exp (deny).
// value_info declares both Cast outputs float, as exporters write them.
onnx::ModelProto IntCastModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Input("ids", DType::kInt64, {2, 4});
  g.Output("y", DType::kFloat32, {2, 4}).Output("z", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16);
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"f"}, "to_float_low"), "to", ToOnnx(DType::kFloat32));
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"f_blocked"}, "to_float_blocked"), "to", ToOnnx(DType::kFloat32));
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Mul", {"h", "f"}, {"m"}, "mul");
  g.Node("MatMul", {"m", "W"}, {"y"}, "mm2");
  g.Node("Exp", {"f_blocked"}, {"z"}, "exp");
  GraphBuilder::SetValueInfo(model.mutable_graph()->add_value_info(), "f", DType::kFloat32, {2, 4});
  GraphBuilder::SetValueInfo(model.mutable_graph()->add_value_info(), "f_blocked", DType::kFloat32, {2, 4});
  return model;
}

TEST(ConverterPains, P03_CastToFloatFollowsItsConsumers) {
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const DType low = kind == PolicyKind::kMixedFloat16 ? DType::kFloat16 : DType::kBFloat16;
    const auto result = ConvertOk(IntCastModel(), Options(kind));
    EXPECT_EQ(NodeDType(result.report, "mul"), std::string(DTypeName(low)));
    EXPECT_EQ(NodeDType(result.report, "exp"), "float");
    EXPECT_EQ(IntAttr(*FindNode(result.model.graph(), "to_float_low"), "to"), ToOnnx(low));
    EXPECT_EQ(IntAttr(*FindNode(result.model.graph(), "to_float_blocked"), "to"), ToOnnx(DType::kFloat32));
    EXPECT_EQ(result.report.casts_retargeted, 1);

    // Types come from inference, and the declared ones agree: every Cast's `to` is the
    // type inference gives its output, and every value_info says the same.
    auto inferred = InferValueTypes(result.model);
    ASSERT_TRUE(inferred.ok()) << inferred.status().message();
    ForEachGraph(result.model.graph(), [&](const onnx::GraphProto& graph) {
      for (const auto& node : graph.node()) {
        if (node.op_type() != "Cast") continue;
        ASSERT_NE(inferred->TypeOf(node.output(0)), DType::kUndefined) << node.output(0);
        EXPECT_EQ(ToOnnx(inferred->TypeOf(node.output(0))), IntAttr(node, "to")) << node.name();
      }
      for (const auto& info : graph.value_info()) {
        ASSERT_NE(inferred->TypeOf(info.name()), DType::kUndefined) << info.name();
        EXPECT_EQ(info.type().tensor_type().elem_type(), ToOnnx(inferred->TypeOf(info.name()))) << info.name();
      }
    });
    EXPECT_EQ(inferred->TypeOf("f"), low);
    EXPECT_EQ(inferred->TypeOf("f_blocked"), DType::kFloat32);
    onnx::ModelProto strict = result.model;
    EXPECT_TRUE(InferShapes(strict, /*strict=*/true).ok());
  }
}

// ---------------------------------------------------------------------------------
// Pain 4: blocked nodes wrapped in Casts on their double/int inputs; an initializer
// shared with a blocked node left float32 under a float16 Conv.

TEST(ConverterPains, P04_BlockedNodeMixedTypesAndSharedWeight) {
  // x -> MatMul -> h (low) -> Pow(h, e:double), Pow(h, e:int64): Pow is deny; only h
  // crosses a boundary, the double and integer exponents are left alone.
  onnx::ModelProto mixed_types = testing::NewModel();
  {
    GraphBuilder g(mixed_types.mutable_graph());
    g.Input("x", DType::kFloat32, {2, 4}).Output("z1", DType::kFloat32, {2, 4}).Output("z2", DType::kFloat32, {2, 4});
    g.Floats("W", {4, 4}, kW16).Ints("e_int", {}, {2});
    onnx::TensorProto* e_double = mixed_types.mutable_graph()->add_initializer();
    e_double->set_name("e_double");
    e_double->set_data_type(onnx::TensorProto::DOUBLE);
    e_double->add_double_data(2.0);
    g.Node("MatMul", {"x", "W"}, {"h"}, "mm");
    g.Node("Pow", {"h", "e_double"}, {"z1"}, "pow_double");
    g.Node("Pow", {"h", "e_int"}, {"z2"}, "pow_int");
  }
  const auto typed = ConvertOk(mixed_types, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(typed.report, "mm"), "float16");
  EXPECT_EQ(NodeDType(typed.report, "pow_double"), "float");
  EXPECT_EQ(NodeDType(typed.report, "pow_int"), "float");
  EXPECT_EQ(typed.report.casts_inserted, 2);  // x to float16; h back to float, once for both Pows
  auto types = InferValueTypes(typed.model);
  ASSERT_TRUE(types.ok()) << types.status().message();
  for (const auto& node : typed.model.graph().node()) {
    if (node.op_type() != "Cast") continue;
    ASSERT_NE(types->TypeOf(node.input(0)), DType::kUndefined) << node.input(0);
    const DType from = types->TypeOf(node.input(0));
    EXPECT_TRUE(from == DType::kFloat32 || from == DType::kFloat16) << node.name() << " casts " << DTypeName(from);
    EXPECT_TRUE(IntAttr(node, "to") == ToOnnx(DType::kFloat32) || IntAttr(node, "to") == ToOnnx(DType::kFloat16));
  }
  EXPECT_EQ(FindInitializer(typed.model.graph(), "e_double")->data_type(), onnx::TensorProto::DOUBLE);
  EXPECT_EQ(FindInitializer(typed.model.graph(), "e_int")->data_type(), onnx::TensorProto::INT64);
  EXPECT_EQ(FindNode(typed.model.graph(), "pow_double")->input(1), "e_double");
  EXPECT_EQ(FindNode(typed.model.graph(), "pow_int")->input(1), "e_int");

  // K feeds a Conv (allow) and a ReduceSum (deny): the Conv reads a float16 copy, the
  // ReduceSum the exact float32 K, and no Cast reads K at run time.
  onnx::ModelProto shared = testing::NewModel();
  {
    GraphBuilder g(shared.mutable_graph());
    g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 4, 4});
    g.Output("k_sum", DType::kFloat32, {1, 1, 1, 1});
    g.Floats("K", {1, 1, 3, 3}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f});
    testing::SetIntsAttr(g.Node("Conv", {"x", "K"}, {"y"}, "conv"), "pads", {1, 1, 1, 1});
    g.Node("ReduceSum", {"K"}, {"k_sum"}, "reduce");
  }
  {
    const auto result = ConvertOk(shared, Options(PolicyKind::kMixedFloat16));
    const onnx::GraphProto& graph = result.model.graph();
    EXPECT_EQ(NodeDType(result.report, "conv"), "float16");
    EXPECT_EQ(NodeDType(result.report, "reduce"), "float");
    EXPECT_EQ(result.report.initializers_duplicated, 1);
    const onnx::NodeProto* conv = FindNode(graph, "conv");
    const onnx::TensorProto* conv_weight = FindInitializer(graph, conv->input(1));
    ASSERT_NE(conv_weight, nullptr) << "the Conv weight is not an initializer: " << conv->input(1);
    EXPECT_NE(conv->input(1), "K");
    EXPECT_EQ(conv_weight->data_type(), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(FindNode(graph, "reduce")->input(0), "K");
    const onnx::TensorProto* k = FindInitializer(graph, "K");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(k->float_data_size(), 9);
    EXPECT_EQ(k->float_data(2), 0.3f);
    for (const auto& node : graph.node()) {
      if (node.op_type() == "Cast") {
        EXPECT_NE(node.input(0), "K");
      }
    }
    EXPECT_EQ(result.report.casts_inserted, 2);  // x in, y out
  }
}

// ---------------------------------------------------------------------------------
// Pain 5: Casts of subgraph values land in the main graph, or the order breaks.

// Main graph: If (then-branch reads x and W from outside), Loop with carried state,
// Scan, and a Loop whose body holds an If (two levels). Every main-graph node is
// control flow, so the main graph needs no Cast at all.
onnx::ModelProto ControlFlowModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("cond", DType::kBool, {}).Input("x", DType::kFloat32, {2, 4}).Input("xs", DType::kFloat32, {3, 1, 4});
  g.Input("s0", DType::kFloat32, {1, 4});
  g.Output("if_y", DType::kFloat32, {2, 4}).Output("loop_v", DType::kFloat32, {2, 4});
  g.Output("scan_s", DType::kFloat32, {1, 4}).Output("scan_ys", DType::kFloat32, {3, 1, 4});
  g.Output("nested_v", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Ints("trip", {}, {3});

  onnx::NodeProto& if_node = g.Node("If", {"cond"}, {"if_y"}, "if");
  GraphBuilder then_branch(testing::AddGraphAttr(if_node, "then_branch"));
  then_branch.Output("t_out", DType::kFloat32, {2, 4});
  then_branch.Node("MatMul", {"x", "W"}, {"t_h"}, "then_mm1");
  then_branch.Node("MatMul", {"t_h", "W"}, {"t_out"}, "then_mm2");
  GraphBuilder else_branch(testing::AddGraphAttr(if_node, "else_branch"));
  else_branch.Output("e_out", DType::kFloat32, {2, 4});
  else_branch.Node("Identity", {"x"}, {"e_out"}, "else_id");

  onnx::NodeProto& loop = g.Node("Loop", {"trip", "", "x"}, {"loop_v"}, "loop");
  GraphBuilder body(testing::AddGraphAttr(loop, "body"));
  body.Input("l_iter", DType::kInt64, {}).Input("l_cond", DType::kBool, {}).Input("l_v", DType::kFloat32, {2, 4});
  body.Output("l_cond_out", DType::kBool, {}).Output("l_v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"l_cond"}, {"l_cond_out"}, "loop_cond");
  body.Node("MatMul", {"l_v", "W"}, {"l_h"}, "loop_mm1");
  body.Node("Tanh", {"l_h"}, {"l_t"}, "loop_tanh");
  body.Node("MatMul", {"l_t", "W"}, {"l_v_out"}, "loop_mm2");

  onnx::NodeProto& scan = g.Node("Scan", {"s0", "xs"}, {"scan_s", "scan_ys"}, "scan");
  testing::SetIntAttr(scan, "num_scan_inputs", 1);
  GraphBuilder scan_body(testing::AddGraphAttr(scan, "body"));
  scan_body.Input("s_in", DType::kFloat32, {1, 4}).Input("x_t", DType::kFloat32, {1, 4});
  scan_body.Output("s_out", DType::kFloat32, {1, 4}).Output("y_t", DType::kFloat32, {1, 4});
  scan_body.Node("MatMul", {"x_t", "W"}, {"s_h"}, "scan_mm1");
  scan_body.Node("MatMul", {"s_h", "W"}, {"s_h2"}, "scan_mm2");
  scan_body.Node("Add", {"s_in", "s_h2"}, {"s_out"}, "scan_add");
  scan_body.Node("Relu", {"s_h2"}, {"y_t"}, "scan_relu");

  onnx::NodeProto& outer = g.Node("Loop", {"trip", "", "x"}, {"nested_v"}, "outer_loop");
  GraphBuilder outer_body(testing::AddGraphAttr(outer, "body"));
  outer_body.Input("o_iter", DType::kInt64, {}).Input("o_cond", DType::kBool, {}).Input("o_v", DType::kFloat32, {2, 4});
  outer_body.Output("o_cond_out", DType::kBool, {}).Output("o_v_out", DType::kFloat32, {2, 4});
  outer_body.Node("Identity", {"o_cond"}, {"o_cond_out"}, "outer_cond");
  onnx::NodeProto& inner_if = outer_body.Node("If", {"cond"}, {"o_v_out"}, "inner_if");
  GraphBuilder inner_then(testing::AddGraphAttr(inner_if, "then_branch"));
  inner_then.Output("it_out", DType::kFloat32, {2, 4});
  inner_then.Node("MatMul", {"o_v", "W"}, {"it_h"}, "inner_mm1");  // reads the Loop body's o_v
  inner_then.Node("MatMul", {"it_h", "W"}, {"it_out"}, "inner_mm2");
  GraphBuilder inner_else(testing::AddGraphAttr(inner_if, "else_branch"));
  inner_else.Output("ie_out", DType::kFloat32, {2, 4});
  inner_else.Node("Identity", {"o_v"}, {"ie_out"}, "inner_else_id");
  return model;
}

TEST(ConverterPains, P05_SubgraphCastsStayInTheirScope) {
  const onnx::ModelProto model = ControlFlowModel();
  ASSERT_TRUE(CheckModel(model, /*full_check=*/true).ok());
  const auto result = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  const onnx::GraphProto& graph = result.model.graph();
  for (const char* name : {"then_mm1", "then_mm2", "loop_mm1", "loop_tanh", "loop_mm2", "scan_mm1", "scan_mm2",
                           "scan_relu", "inner_mm1", "inner_mm2"}) {
    EXPECT_EQ(NodeDType(result.report, name), "float16") << name;
  }
  // Main-graph outputs keep float32, so the control flow writing them does too.
  for (const char* name : {"if", "loop", "scan", "outer_loop", "scan_add"}) {
    EXPECT_EQ(NodeDType(result.report, name), "float") << name;
  }
  // Hand-counted boundaries of the scopes whose outputs must stay float32.
  EXPECT_EQ(CountOps(graph, "Cast"), 0);
  EXPECT_EQ(CountOps(Subgraph(graph, "if", "then_branch"), "Cast"), 2);   // x in, t_out out
  EXPECT_EQ(CountOps(Subgraph(graph, "if", "else_branch"), "Cast"), 0);
  EXPECT_EQ(CountOps(Subgraph(graph, "loop", "body"), "Cast"), 2);        // l_v in, l_v_out out
  EXPECT_EQ(CountOps(Subgraph(graph, "scan", "body"), "Cast"), 3);        // x_t in, s_h2 to Add, y_t out
  // Every scope, the nested If included (its branch outputs may match low or float32),
  // has exactly one Cast per boundary edge of its own.
  const std::vector<int> edges = ScopeBoundaryEdges(model, result.model, result.report);
  const std::vector<const onnx::GraphProto*> scopes = AllGraphs(graph);
  ASSERT_EQ(edges.size(), scopes.size());
  int total = 0;
  for (size_t g = 0; g < scopes.size(); ++g) {
    EXPECT_EQ(CountAmpCasts(*scopes[g]), edges[g]) << "graph '" << scopes[g]->name() << "'";
    EXPECT_EQ(CountOps(*scopes[g], "Cast"), CountAmpCasts(*scopes[g]));
    total += edges[g];
  }
  EXPECT_EQ(result.report.casts_inserted, total);
  ExpectAmpCastsReadWhereTheyLive(graph);
  ExpectTopologicallySorted(graph, {});
  EXPECT_TRUE(CheckModel(result.model, /*full_check=*/true).ok());
  // Graph outputs of the bodies keep their float32 type and names.
  EXPECT_EQ(Subgraph(graph, "scan", "body").output(1).name(), "y_t");
  EXPECT_EQ(Subgraph(graph, "scan", "body").output(1).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);

  // It runs, close to float32. Every weight is 0.25 > 0 and Tanh/Relu are 1-Lipschitz,
  // so the float32 model run on |inputs| bounds the magnitude of every value; each
  // rounding on a path adds at most u of that bound (3 Loop iterations of 4 roundings).
  const std::vector<float> x = {0.5f, -1.0f, 0.75f, 0.3f, -0.2f, 0.9f, -0.6f, 0.1f};
  const std::vector<float> xs = {0.3f, -0.7f, 0.2f, 0.9f, -0.5f, 0.4f, 0.8f, -0.1f, 0.6f, 0.05f, -0.3f, 0.7f};
  const std::vector<float> s0 = {0.1f, -0.2f, 0.3f, -0.4f};
  auto abs_of = [](std::vector<float> v) {
    for (float& e : v) e = std::fabs(e);
    return v;
  };
  auto feeds = [&](bool absolute) {
    Feeds f;
    f["cond"] = BoolScalar(true);
    f["x"] = FloatTensor({2, 4}, absolute ? abs_of(x) : x);
    f["xs"] = FloatTensor({3, 1, 4}, absolute ? abs_of(xs) : xs);
    f["s0"] = FloatTensor({1, 4}, absolute ? abs_of(s0) : s0);
    return f;
  };
  const auto reference = RunModel(model, feeds(false));
  const auto bound = RunModel(model, feeds(true));
  const auto mixed = RunModel(result.model, feeds(false));
  constexpr int kRoundingsPerPath = 12;
  for (const auto& [name, values] : reference) {
    ASSERT_EQ(mixed.at(name).size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(mixed.at(name)[i], values[i], kRoundingsPerPath * kFloat16Roundoff * bound.at(name)[i])
          << name << "[" << i << "]";
    }
  }
}

// ---------------------------------------------------------------------------------
// Pain 6: cascaded Casts and buggy pair removal change numerics.

TEST(ConverterPains, P06_CastCountEqualsBoundaryEdges) {
  // x feeds two MatMuls (one Cast, not one per consumer); h feeds a MatMul and an Exp.
  onnx::ModelProto fan_out = testing::NewModel();
  {
    GraphBuilder g(fan_out.mutable_graph());
    g.Input("x", DType::kFloat32, {2, 4});
    g.Output("y1", DType::kFloat32, {2, 4}).Output("y2", DType::kFloat32, {2, 4}).Output("y3", DType::kFloat32, {2, 4});
    g.Floats("W1", {4, 4}, kW16).Floats("W2", {4, 4}, kW16).Floats("W3", {4, 4}, kW16);
    g.Node("MatMul", {"x", "W1"}, {"h"}, "mm1");
    g.Node("MatMul", {"x", "W3"}, {"y3"}, "mm3");
    g.Node("MatMul", {"h", "W2"}, {"y1"}, "mm2");
    g.Node("Exp", {"h"}, {"y2"}, "exp");
  }
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    const auto result = ConvertOk(fan_out, Options(kind));
    // (x, low), (h, float), y1 and y3 produced low: 4, by hand.
    EXPECT_EQ(CountBoundaryEdges(fan_out.graph(), result.report), 4);
    EXPECT_EQ(result.report.casts_inserted, 4);
    EXPECT_EQ(CountOps(result.model.graph(), "Cast"), 4);
  }

  // A chain of deny ops: nothing low, no Cast, the graph untouched.
  onnx::ModelProto blocked = testing::NewModel();
  {
    GraphBuilder g(blocked.mutable_graph());
    g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
    g.Node("Exp", {"x"}, {"e"}, "exp");
    g.Node("Softplus", {"e"}, {"s"}, "softplus");
    g.Node("Log", {"s"}, {"y"}, "log");
  }
  const auto untouched = ConvertOk(blocked, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(untouched.report.casts_inserted, 0);
  EXPECT_EQ(CountOps(untouched.model.graph(), "Cast"), 0);
  EXPECT_EQ(untouched.model.graph().SerializeAsString(), blocked.graph().SerializeAsString());

  // The user's float->int32->float truncation and float->float16->float rounding are
  // numerics, not redundant Casts: both pairs survive, with their effect.
  onnx::ModelProto round_trips = testing::NewModel();
  {
    GraphBuilder g(round_trips.mutable_graph());
    g.Input("x", DType::kFloat32, {1, 4}).Output("y", DType::kFloat32, {1, 4}).Output("z", DType::kFloat32, {1, 4});
    g.Floats("I", {4, 4}, Identity(4));
    testing::SetIntAttr(g.Node("Cast", {"x"}, {"xi"}, "truncate"), "to", ToOnnx(DType::kInt32));
    testing::SetIntAttr(g.Node("Cast", {"xi"}, {"xf"}, "back"), "to", ToOnnx(DType::kFloat32));
    g.Node("MatMul", {"xf", "I"}, {"y"}, "mm");
    testing::SetIntAttr(g.Node("Cast", {"x"}, {"x16"}, "round16"), "to", ToOnnx(DType::kFloat16));
    testing::SetIntAttr(g.Node("Cast", {"x16"}, {"x32"}, "widen"), "to", ToOnnx(DType::kFloat32));
    g.Node("Exp", {"x32"}, {"z"}, "exp");
  }
  const auto kept = ConvertOk(round_trips, Options(PolicyKind::kMixedFloat16));
  const onnx::GraphProto& graph = kept.model.graph();
  for (const char* name : {"truncate", "back", "round16", "widen"}) ASSERT_NE(FindNode(graph, name), nullptr) << name;
  EXPECT_EQ(IntAttr(*FindNode(graph, "truncate"), "to"), ToOnnx(DType::kInt32));
  EXPECT_EQ(FindNode(graph, "back")->input(0), "xi");
  EXPECT_EQ(FindNode(graph, "truncate")->input(0), "x");
  EXPECT_EQ(IntAttr(*FindNode(graph, "round16"), "to"), ToOnnx(DType::kFloat16));
  EXPECT_EQ(IntAttr(*FindNode(graph, "widen"), "to"), ToOnnx(DType::kFloat32));
  EXPECT_EQ(FindNode(graph, "widen")->input(0), "x16");
  EXPECT_EQ(FindNode(graph, "exp")->input(0), "x32");
  // 1 + 2^-12 is not a float16: the user's rounding makes it 1, so z = e; the
  // truncation makes y = [1, -2, 3, 0] exactly.
  Feeds feeds;
  feeds["x"] = FloatTensor({1, 4}, {1.7f, -2.5f, 3.9f, 1.0f + 1.0f / 4096.0f});
  const auto outputs = RunModel(kept.model, feeds);
  ASSERT_EQ(outputs.at("y").size(), 4u);
  EXPECT_EQ(outputs.at("y"), (std::vector<double>{1.0, -2.0, 3.0, 1.0}));
  EXPECT_NEAR(outputs.at("z")[3], std::exp(1.0), 4e-7 * std::exp(1.0));
}

// ---------------------------------------------------------------------------------
// Pain 7: reconversion makes orphan or self-recurring nodes and name collisions.

// A bit of everything: a shared weight duplicated, a Cast(to=float) retargeted, a
// converted constant, a Loop body with Casts, names the converter's would collide with.
onnx::ModelProto KitchenSinkModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Input("ids", DType::kInt64, {2, 4});
  g.Output("y", DType::kFloat32, {2, 4}).Output("z", DType::kFloat32, {1, 1}).Output("v", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Floats("C", {4}, {300.0f, -1.0f, 0.5f, 2.0f}).Ints("trip", {}, {2});
  g.Floats("W_amp_float16", {4, 4}, kW16);  // the name a float16 copy of W would take
  testing::SetIntAttr(g.Node("Cast", {"ids"}, {"f"}, "to_float"), "to", ToOnnx(DType::kFloat32));
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Add", {"h", "C"}, {"a"}, "add");
  g.Node("Mul", {"a", "f"}, {"m"}, "mul");
  g.Node("MatMul", {"m", "W_amp_float16"}, {"y"}, "mm2");
  g.Node("ReduceSum", {"W"}, {"z"}, "reduce");
  onnx::NodeProto& loop = g.Node("Loop", {"trip", "", "x"}, {"v"}, "loop");
  GraphBuilder body(testing::AddGraphAttr(loop, "body"));
  body.Input("iter", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("v_in", DType::kFloat32, {2, 4});
  body.Output("cond_out", DType::kBool, {}).Output("v_out", DType::kFloat32, {2, 4});
  body.Node("Identity", {"cond_in"}, {"cond_out"}, "body_cond");
  body.Node("MatMul", {"v_in", "W"}, {"b_h"}, "body_mm1");
  body.Node("MatMul", {"b_h", "W"}, {"v_out"}, "body_mm2");
  return model;
}

// Node names and produced values are unique across all graphs, no node reads its own
// output, and every node's output is read or is a graph output.
void ExpectWellFormed(const onnx::ModelProto& model) {
  std::map<std::string, int> node_names, produced;
  std::set<std::string> read;
  ForEachGraph(model.graph(), [&](const onnx::GraphProto& graph) {
    for (const auto& output : graph.output()) read.insert(output.name());
    for (const auto& node : graph.node()) {
      ++node_names[node.name()];
      for (const auto& in : node.input()) read.insert(in);
      for (const auto& out : node.output()) {
        ++produced[out];
        for (const auto& in : node.input()) EXPECT_NE(in, out) << "node '" << node.name() << "' reads its own output";
      }
    }
  });
  for (const auto& [name, count] : node_names) EXPECT_EQ(count, 1) << "node name '" << name << "' repeats";
  for (const auto& [name, count] : produced) {
    EXPECT_EQ(count, 1) << "value '" << name << "' is produced " << count << " times";
    EXPECT_TRUE(read.count(name)) << "value '" << name << "' is read by nothing (orphan node)";
  }
}

TEST(ConverterPains, P07_ReconversionIsIdempotent) {
  const onnx::ModelProto model = KitchenSinkModel();
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16,
                          PolicyKind::kBFloat16, PolicyKind::kFloat32}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto once = ConvertOk(model, Options(kind));
    ExpectWellFormed(once.model);
    const auto twice = ConvertOk(once.model, Options(kind));
    EXPECT_EQ(twice.model.SerializeAsString(), once.model.SerializeAsString());
    EXPECT_EQ(twice.report.casts_inserted, 0);
    EXPECT_EQ(twice.report.casts_retargeted, 0);
    EXPECT_EQ(twice.report.initializers_duplicated, 0);
    EXPECT_EQ(twice.report.initializers_converted, 0);
    const auto thrice = ConvertOk(twice.model, Options(kind));
    EXPECT_EQ(thrice.model.SerializeAsString(), once.model.SerializeAsString());
  }
  // The first conversion did something to re-convert (not vacuous).
  const auto once = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_GT(once.report.casts_inserted, 0);
  EXPECT_EQ(once.report.initializers_duplicated, 1);
  EXPECT_EQ(once.report.casts_retargeted, 1);
}

// ---------------------------------------------------------------------------------
// Pain 10: epsilon constants underflow to 0 in float16.

// q = h / (sqrt(hv) + 1e-12) between MatMuls, h = x W, hv = v W. With x = v = 0 the
// float32 model gives 0 / 1e-12 = 0; 1e-12 flushed to float16 zero would give 0/0 = NaN.
onnx::ModelProto EpsilonModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Input("v", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Floats("eps", {}, {1e-12f});
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm_x");
  g.Node("MatMul", {"v", "W"}, {"hv"}, "mm_v");
  g.Node("Sqrt", {"hv"}, {"sd"}, "sqrt");
  g.Node("Add", {"sd", "eps"}, {"den"}, "guard");
  g.Node("Div", {"h", "den"}, {"q"}, "div");
  g.Node("MatMul", {"q", "W"}, {"y"}, "mm_out");
  return model;
}

TEST(ConverterPains, P10_TinyEpsilonStaysNonZeroAndOutputFinite) {
  const onnx::ModelProto model = EpsilonModel();
  Feeds feeds;
  // Row 0: all zero (the 0/eps case). Row 1: positive, so errors are relative.
  feeds["x"] = FloatTensor({2, 4}, {0, 0, 0, 0, 0.5f, 1.0f, 0.25f, 0.75f});
  feeds["v"] = FloatTensor({2, 4}, {0, 0, 0, 0, 0.3f, 0.6f, 0.9f, 0.2f});
  const auto reference = RunModel(model, feeds);
  for (PolicyKind kind : {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_EQ(NodeDType(result.report, "mm_out"), kind == PolicyKind::kMixedFloat16 ? "float16" : "bfloat16");
    if (kind == PolicyKind::kMixedFloat16) {
      // 1e-12 is 0 in float16: the guard and the division stay float32; the Sqrt is
      // infer-class with no low consumer, so it stays float32 too.
      EXPECT_EQ(NodeDType(result.report, "guard"), "float");
      EXPECT_EQ(NodeDType(result.report, "div"), "float");
      EXPECT_EQ(NodeDType(result.report, "sqrt"), "float");
      EXPECT_EQ(NodeDType(result.report, "mm_v"), "float16");
      const onnx::TensorProto* eps = FindInitializer(result.model.graph(), "eps");
      ASSERT_NE(eps, nullptr);
      EXPECT_EQ(eps->data_type(), onnx::TensorProto::FLOAT);
      EXPECT_TRUE(result.report.clamped.empty());  // nothing flushed to zero
    } else {
      // bfloat16 has float32's range: 1e-12 survives and the guard runs low.
      EXPECT_EQ(NodeDType(result.report, "guard"), "bfloat16");
    }
    const auto mixed = RunModel(result.model, feeds);
    const std::vector<double>& y = mixed.at("y");
    ASSERT_EQ(y.size(), 8u);
    for (double value : y) EXPECT_TRUE(std::isfinite(value));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 0.0);
    // Row 1, all positive: the longest path rounds x, h, sqrt, guard, q and y once and
    // v, hv at half weight under the Sqrt, 7 u to first order; allow 8 u.
    const double u = kind == PolicyKind::kMixedFloat16 ? kFloat16Roundoff : kBFloat16Roundoff;
    for (int i = 4; i < 8; ++i) EXPECT_NEAR(y[i], reference.at("y")[i], 8 * u * reference.at("y")[i]);
  }
}

// ---------------------------------------------------------------------------------
// Pain 11: large constants clamped silently.

// [70000, -1e9, inf, 1e-9] as an initializer (C) and a Constant (k):
// x -> MatMul -> h; a = h + C; m = h * k; MatMul(a + m) -> y. Without the constants'
// values, Add, Mul and the sum would all run low between the MatMuls.
onnx::ModelProto LargeConstantModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 4}).Output("y", DType::kFloat32, {2, 4});
  g.Floats("W", {4, 4}, kW16).Floats("C", {4}, {70000.0f, -1e9f, INFINITY, 1e-9f});
  auto& constant = g.Node("Constant", {}, {"k"}, "const");
  auto* attr = constant.add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(4);
  for (float v : {70000.0f, -1e9f, INFINITY, 1e-9f}) attr->mutable_t()->add_float_data(v);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Add", {"h", "C"}, {"a"}, "add");
  g.Node("Mul", {"h", "k"}, {"m"}, "mul");
  g.Node("Add", {"a", "m"}, {"s"}, "sum");
  g.Node("MatMul", {"s", "W"}, {"y"}, "mm2");
  return model;
}

const onnx::TensorProto& ConstantValue(const onnx::GraphProto& graph) {
  const onnx::NodeProto* constant = FindNode(graph, "const");
  if (constant == nullptr || constant->attribute_size() != 1) {
    ADD_FAILURE() << "no Constant 'const' with one attribute";
    static const onnx::TensorProto kNone;
    return kNone;
  }
  return constant->attribute(0).t();
}

std::string NodeReason(const ConversionReport& report, const std::string& name) {
  for (const NodeReport& node : report.nodes) {
    if (node.name == name) return node.reason;
  }
  return "";
}

// Round to nearest even of a finite float32 to bfloat16, by its bits.
uint16_t BFloat16Rne(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

TEST(ConverterPains, P11_LargeConstantsReportedAndHandledPerPolicy) {
  const onnx::ModelProto model = LargeConstantModel();
  const std::vector<float> original = {70000.0f, -1e9f, INFINITY, 1e-9f};

  // mixed_float16: a constant beyond 65504 keeps its readers float32 (init_max), so it
  // is neither clamped nor overflowed, and the report says which constant decided.
  const auto mixed = ConvertOk(model, Options(PolicyKind::kMixedFloat16));
  EXPECT_EQ(NodeDType(mixed.report, "mm1"), "float16");
  EXPECT_EQ(NodeDType(mixed.report, "add"), "float");
  EXPECT_EQ(NodeDType(mixed.report, "mul"), "float");
  EXPECT_NE(NodeReason(mixed.report, "add").find("'C'"), std::string::npos) << NodeReason(mixed.report, "add");
  EXPECT_NE(NodeReason(mixed.report, "mul").find("'k'"), std::string::npos) << NodeReason(mixed.report, "mul");
  EXPECT_TRUE(mixed.report.clamped.empty());
  const onnx::TensorProto* c = FindInitializer(mixed.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(std::vector<float>(c->float_data().begin(), c->float_data().end()), original);
  EXPECT_EQ(ConstantValue(mixed.model.graph()).data_type(), onnx::TensorProto::FLOAT);

  // float16 (everything low): each tensor is reported by name with the count and the
  // worst value; finite out-of-range values clamp to +-65504, inf stays inf, 1e-9
  // (below 2^-25) flushes to 0.
  const auto plain = ConvertOk(model, Options(PolicyKind::kFloat16));
  ASSERT_EQ(plain.report.clamped.size(), 2u);
  std::set<std::string> names;
  for (const ClampedTensor& clamped : plain.report.clamped) {
    names.insert(clamped.name);
    EXPECT_EQ(clamped.clamped, 2) << clamped.name;
    EXPECT_EQ(clamped.worst, -1e9f) << clamped.name;
    EXPECT_EQ(clamped.flushed_to_zero, 1) << clamped.name;
  }
  EXPECT_EQ(names, (std::set<std::string>{"C", "k"}));
  const std::vector<uint16_t> clamped_bits = {0x7BFF, 0xFBFF, 0x7C00, 0x0000};
  c = FindInitializer(plain.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(Bits16(*c), clamped_bits);
  EXPECT_EQ(ConstantValue(plain.model.graph()).data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(Bits16(ConstantValue(plain.model.graph())), clamped_bits);
  const nlohmann::json json = ReportToJson(plain.report);
  ASSERT_EQ(json["clamped"].size(), 2u);
  for (const auto& entry : json["clamped"]) {
    EXPECT_EQ(entry["clamped"], 2);
    EXPECT_EQ(entry["worst"].get<double>(), static_cast<double>(-1e9f));
    EXPECT_EQ(entry["flushed_to_zero"], 1);
  }

  // bfloat16 has float32's range: nothing clamped or reported, values rounded only.
  for (PolicyKind kind : {PolicyKind::kMixedBFloat16, PolicyKind::kBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_EQ(NodeDType(result.report, "add"), "bfloat16");
    EXPECT_TRUE(result.report.clamped.empty());
    const std::vector<uint16_t> expected = {BFloat16Rne(70000.0f), BFloat16Rne(-1e9f), 0x7F80, BFloat16Rne(1e-9f)};
    EXPECT_EQ(expected, (std::vector<uint16_t>{0x4789, 0xCE6E, 0x7F80, 0x3089}));  // by hand from the float32 bits
    c = FindInitializer(result.model.graph(), "C");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->data_type(), onnx::TensorProto::BFLOAT16);
    EXPECT_EQ(Bits16(*c), expected);
    EXPECT_EQ(ConstantValue(result.model.graph()).data_type(), onnx::TensorProto::BFLOAT16);
    EXPECT_EQ(Bits16(ConstantValue(result.model.graph())), expected);
  }
}

// ---------------------------------------------------------------------------------
// Pain 12: shape math done in float loses integers above 2048 in float16.

// len = Cast<int64>(Floor((L + 2p - k) / s) + 1) with L = 5000, p = 1, k = 3, s = 2:
// 2500. In float16, 5002 rounds to 5000 and 4997 to 4996, giving 2499; in bfloat16
// (integers exact to 256) it is further off.
onnx::ModelProto ConvLengthModel() {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {1, 5000}).Output("len", DType::kInt64, {1}).Output("y", DType::kFloat32, {1, 4});
  g.Ints("axis1", {1}, {1}).Floats("two_p", {}, {2.0f}).Floats("k", {}, {3.0f}).Floats("s", {}, {2.0f});
  g.Floats("one", {}, {1.0f}).Ints("starts", {1}, {0}).Ints("ends", {1}, {4}).Floats("W", {4, 4}, kW16);
  g.Node("Shape", {"x"}, {"shape"}, "shape");
  g.Node("Gather", {"shape", "axis1"}, {"L"}, "gather");
  testing::SetIntAttr(g.Node("Cast", {"L"}, {"Lf"}, "to_float"), "to", ToOnnx(DType::kFloat32));
  g.Node("Add", {"Lf", "two_p"}, {"padded"}, "pad");
  g.Node("Sub", {"padded", "k"}, {"d"}, "sub");
  g.Node("Div", {"d", "s"}, {"q"}, "div");
  g.Node("Floor", {"q"}, {"fq"}, "floor");
  g.Node("Add", {"fq", "one"}, {"n"}, "add_one");
  testing::SetIntAttr(g.Node("Cast", {"n"}, {"len"}, "to_int"), "to", ToOnnx(DType::kInt64));
  // A float path for the policy to convert: y = Slice(x)[:, :4] W.
  g.Node("Slice", {"x", "starts", "ends", "axis1"}, {"xs"}, "slice");
  g.Node("MatMul", {"xs", "W"}, {"y"}, "mm");
  return model;
}

TEST(ConverterPains, P12_ShapeMathStaysExact) {
  const onnx::ModelProto model = ConvLengthModel();
  std::vector<float> x(5000);
  for (int i = 0; i < 5000; ++i) x[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i % 97);
  Feeds feeds;
  feeds["x"] = FloatTensor({1, 5000}, x);
  ASSERT_EQ(RunModel(model, feeds).at("len"), std::vector<double>{2500.0});
  for (PolicyKind kind :
       {PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16, PolicyKind::kFloat16, PolicyKind::kBFloat16}) {
    SCOPED_TRACE(std::string(PolicyKindName(kind)));
    const auto result = ConvertOk(model, Options(kind));
    EXPECT_NE(NodeDType(result.report, "mm"), "float");  // the model is converted...
    for (const char* name : {"to_float", "pad", "sub", "div", "floor", "add_one"}) {
      EXPECT_EQ(NodeDType(result.report, name), "float") << name;  // ...but not its shape math
    }
    EXPECT_EQ(IntAttr(*FindNode(result.model.graph(), "to_float"), "to"), ToOnnx(DType::kFloat32));
    for (const char* name : {"two_p", "k", "s", "one"}) {
      EXPECT_EQ(FindInitializer(result.model.graph(), name)->data_type(), onnx::TensorProto::FLOAT) << name;
    }
    EXPECT_EQ(RunModel(result.model, feeds).at("len"), std::vector<double>{2500.0});
  }
}

// ---------------------------------------------------------------------------------
// Pain 14: auto mode is slow, takes one feed, fails even with everything blocked.

// 4 regions of 4 MatMuls by permutation matrices (exact in any dtype), separated by
// Pow(h, 1) (deny). In region 3, after its 2nd MatMul, a planted MatMul by 1000 P then
// Log (deny) brings values back down: with inputs of 100 or more the planted node's
// output passes 65504 in float16 and Log reads inf. Only keeping the planted node
// float32 fixes it. The Log splits region 3, so 5 regions are painted.
struct ChainModel {
  onnx::ModelProto model;
  int low_nodes = 0;
};

ChainModel OverflowChain() {
  ChainModel chain{testing::NewModel(), 0};
  GraphBuilder g(chain.model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, 8}).Output("y", DType::kFloat32, {2, 8});
  g.Floats("P", {8, 8}, Permutation(8, 3)).Floats("P1000", {8, 8}, Permutation(8, 5, 1000.0f));
  g.Floats("one", {}, {1.0f});
  std::string value = "x";
  auto add = [&](const std::string& op, const std::vector<std::string>& extra, const std::string& name) {
    std::vector<std::string> inputs = {value};
    inputs.insert(inputs.end(), extra.begin(), extra.end());
    g.Node(op, inputs, {name + "_out"}, name);
    value = name + "_out";
  };
  for (int region = 0; region < 4; ++region) {
    if (region > 0) add("Pow", {"one"}, "sep" + std::to_string(region));
    for (int i = 0; i < 4; ++i) {
      add("MatMul", {"P"}, "mm" + std::to_string(region) + "_" + std::to_string(i));
      ++chain.low_nodes;
      if (region == 2 && i == 1) {
        add("MatMul", {"P1000"}, "planted");
        ++chain.low_nodes;
        add("Log", {}, "log");
      }
    }
  }
  g.graph()->mutable_node(g.graph()->node_size() - 1)->set_output(0, "y");
  return chain;
}

Feeds ChainSample(float low, float step) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<size_t>(i)] = low + step * static_cast<float>(i);
  Feeds feeds;
  feeds["x"] = FloatTensor({2, 8}, x);
  return feeds;
}

TEST(ConverterPains, P14_AutoFindsPlantedOverflowInLogarithmicRuns) {
  const ChainModel chain = OverflowChain();
  AutoConvertOptions options;
  options.convert = Options(PolicyKind::kMixedFloat16);
  options.screen_ranges = false;  // make the search find it, not the range screen
  const auto painted = ConvertOk(chain.model, options.convert);
  EXPECT_EQ(painted.report.converted_nodes, chain.low_nodes);
  EXPECT_EQ(NodeDType(painted.report, "planted"), "float16");

  // Two samples in range, one that overflows: a search over the first sample alone
  // would find nothing to fix.
  const std::vector<Feeds> samples = {ChainSample(1.0f, 0.0625f), ChainSample(1.5f, 0.03125f),
                                      ChainSample(100.0f, 1.0f)};
  auto result = AutoConvert(chain.model, samples, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const AutoConvertReport& search = result->search;
  EXPECT_TRUE(search.passed);
  ASSERT_EQ(search.forced.size(), 1u);
  EXPECT_EQ(search.forced[0].node, "planted");
  EXPECT_EQ(search.forced[0].stage, ForcedStage::kSearch);
  EXPECT_EQ(NodeDType(result->conversion.report, "planted"), "float");
  EXPECT_EQ(NodeDType(result->conversion.report, "mm2_1"), "float16");  // its neighbours stay low
  EXPECT_EQ(NodeDType(result->conversion.report, "mm2_2"), "float16");
  // One failing run, ceil(log2(5)) = 3 over the regions, ceil(log2(3)) = 2 over the
  // guilty region's nodes, one passing run: within 2 log2(N) + 2 for N low nodes,
  // against N for a linear scan.
  const double bound = 2.0 * std::log2(static_cast<double>(chain.low_nodes)) + 2.0;
  EXPECT_LE(search.validation_runs, bound);
  EXPECT_LE(search.validation_runs, 1 + 3 + 2 + 1);
  EXPECT_EQ(search.rounds, 2);

  // Samples that fit: nothing forced, a single validation, and the float32 parts of
  // the model validate against themselves.
  auto clean = AutoConvert(chain.model, {samples[0], samples[1]}, options);
  ASSERT_TRUE(clean.ok()) << clean.status().message();
  EXPECT_TRUE(clean->search.passed);
  EXPECT_TRUE(clean->search.forced.empty());
  EXPECT_EQ(clean->search.validation_runs, 1);
}

// ---------------------------------------------------------------------------------
// Pain 15: bfloat16 requests; rounding; schemas without bfloat16 before opset 22.

// x -> MatMul -> Add(C) -> MatMul -> y: C is read only by a low Add, so it is converted.
onnx::ModelProto RoundingModel(const std::vector<float>& c) {
  onnx::ModelProto model = testing::NewModel();
  GraphBuilder g(model.mutable_graph());
  g.Input("x", DType::kFloat32, {2, static_cast<int64_t>(c.size())});
  g.Output("y", DType::kFloat32, {2, static_cast<int64_t>(c.size())});
  const int n = static_cast<int>(c.size());
  g.Floats("W", {n, n}, Identity(n)).Floats("C", {n}, c);
  g.Node("MatMul", {"x", "W"}, {"h"}, "mm1");
  g.Node("Add", {"h", "C"}, {"a"}, "add");
  g.Node("MatMul", {"a", "W"}, {"y"}, "mm2");
  return model;
}

TEST(ConverterPains, P15_RoundToNearestEvenNaNKeptAndBFloat16ConvOpset) {
  // bfloat16 keeps the top 16 bits of a float32. Ties: 0x3F808000 -> 0x3F80 (even),
  // 0x3F818000 -> 0x3F82, 0xBF808000 -> 0xBF80; 0x3F80FFFF rounds up to 0x3F81. NaNs
  // stay NaN, also 0x7F800001 whose payload lies only in the dropped bits (plain
  // rounding would carry it into inf).
  const std::vector<uint32_t> bf16_inputs = {0x3F808000, 0x3F818000, 0xBF808000, 0x3F80FFFF,
                                             0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0xFF800000};
  std::vector<float> bf16_values;
  for (uint32_t bits : bf16_inputs) bf16_values.push_back(FromBits(bits));
  const auto bf16 = ConvertOk(RoundingModel(bf16_values), Options(PolicyKind::kMixedBFloat16));
  const onnx::TensorProto* c = FindInitializer(bf16.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->data_type(), onnx::TensorProto::BFLOAT16);
  const std::vector<uint16_t> b = Bits16(*c);
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ(b[0], 0x3F80);
  EXPECT_EQ(b[1], 0x3F82);
  EXPECT_EQ(b[2], 0xBF80);
  EXPECT_EQ(b[3], 0x3F81);
  for (int i = 4; i < 7; ++i) EXPECT_TRUE(IsBFloat16NaN(b[static_cast<size_t>(i)])) << std::hex << b[static_cast<size_t>(i)];
  EXPECT_EQ(b[7], 0xFF80);  // -inf stays -inf
  EXPECT_TRUE(bf16.report.clamped.empty());

  // float16 (10 fraction bits): 1 + 2^-11 -> 1 (even), 1 + 3 * 2^-11 -> 1 + 2^-9,
  // -(1 + 2^-11) -> -1, the subnormal tie 3 * 2^-25 -> 2^-23; NaNs stay NaN.
  const std::vector<float> fp16_values = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -(1.0f + 0x1p-11f), 0x3p-25f,
                                          FromBits(0x7FC00000), FromBits(0x7F800001), FromBits(0xFFFFFFFF)};
  const auto fp16 = ConvertOk(RoundingModel(fp16_values), Options(PolicyKind::kMixedFloat16));
  c = FindInitializer(fp16.model.graph(), "C");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->data_type(), onnx::TensorProto::FLOAT16);
  const std::vector<uint16_t> h = Bits16(*c);
  ASSERT_EQ(h.size(), 7u);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C02);
  EXPECT_EQ(h[2], 0xBC00);
  EXPECT_EQ(h[3], 0x0002);
  for (int i = 4; i < 7; ++i) EXPECT_TRUE(IsFloat16NaN(h[static_cast<size_t>(i)])) << std::hex << h[static_cast<size_t>(i)];

  // Conv admits bfloat16 only from Conv-22: at opset 21 with --keep-opset the portable
  // target keeps it float32 and says why; by default, as with --opset 22, the converter
  // upgrades the model and converts it.
  onnx::ModelProto conv_model = testing::NewModel(21);
  conv_model.set_ir_version(10);
  {
    GraphBuilder g(conv_model.mutable_graph());
    g.Input("x", DType::kFloat32, {1, 1, 4, 4}).Output("y", DType::kFloat32, {1, 1, 4, 4});
    g.Floats("K", {1, 1, 1, 1}, {0.5f});
    g.Node("Conv", {"x", "K"}, {"y"}, "conv");
  }
  ConvertOptions keep = Options(PolicyKind::kMixedBFloat16);
  keep.keep_opset = true;
  const auto kept = ConvertOk(conv_model, keep);
  EXPECT_EQ(NodeDType(kept.report, "conv"), "float");
  ASSERT_EQ(kept.report.nodes.size(), 1u);
  EXPECT_NE(kept.report.nodes[0].reason.find("does not admit bfloat16"), std::string::npos)
      << kept.report.nodes[0].reason;
  EXPECT_EQ(kept.report.casts_inserted, 0);
  EXPECT_EQ(kept.model.opset_import(0).version(), 21);

  for (bool pinned : {false, true}) {
    ConvertOptions upgrade = Options(PolicyKind::kMixedBFloat16);
    if (pinned) upgrade.opset = 22;
    const auto upgraded = ConvertOk(conv_model, upgrade);
    EXPECT_EQ(NodeDType(upgraded.report, "conv"), "bfloat16");
    EXPECT_EQ(upgraded.report.opset, 22);
    EXPECT_EQ(upgraded.model.opset_import(0).version(), 22);
    EXPECT_EQ(FindInitializer(upgraded.model.graph(), "K")->data_type(), onnx::TensorProto::BFLOAT16);
    EXPECT_TRUE(CheckModel(upgraded.model, /*full_check=*/true).ok());
  }
}

}  // namespace
}  // namespace onnx_amp
