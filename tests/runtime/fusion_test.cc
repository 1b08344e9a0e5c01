// Activation fusion and weight prepacking in the CPU executor: a Conv/Gemm/MatMul with
// its Relu / LeakyRelu / Clip folded in, a float32 MatMul with its bias Add folded in, and
// constant weights kept in oneDNN's layout, must give bit-identical outputs to the
// unfused, unpacked plan (ReLU-like ops commute with the one output rounding), in float32
// and in the mixed_float16 / mixed_bfloat16 conversions; a captured intermediate keeps its
// own step.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "converter/convert_model.h"
#include "ops/common/bf16_kernel_choice.h"
#include "runtime/core/float16.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::Converted;

onnx::ValueInfoProto FloatValue(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto value;
  value.set_name(name);
  auto* tensor_type = value.mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(d);
  return value;
}

onnx::NodeProto* Node(onnx::GraphProto& graph, const std::string& op, const std::vector<std::string>& inputs,
                      const std::string& output) {
  onnx::NodeProto* node = graph.add_node();
  node->set_op_type(op);
  node->set_name(output + "_node");
  for (const std::string& input : inputs) node->add_input(input);
  node->add_output(output);
  return node;
}

void IntsAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void IntAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

// x[2,8,10,10] -> Conv 3x3 -> Relu -> depthwise Conv 3x3 (group 8) -> Clip(0, 6)
// -> grouped Conv 1x1 (group 2) -> LeakyRelu -> Reshape [2, 800] -> MatMul [800, 24]
// -> Relu -> y. Each activation alone reads its producer's output; "act3" and "y" are
// graph outputs, so the folded values themselves are compared.
onnx::ModelProto ConvNet() {
  std::mt19937_64 rng(7);
  onnx::GraphProto graph;
  graph.set_name("conv_net");
  *graph.add_input() = FloatValue("x", {2, 8, 10, 10});
  testing::RandomFloatInitializer(graph, "w1", {8, 8, 3, 3}, rng, 0.4f);
  testing::RandomFloatInitializer(graph, "b1", {8}, rng, 0.2f);
  testing::RandomFloatInitializer(graph, "w2", {8, 1, 3, 3}, rng, 1.5f);
  testing::RandomFloatInitializer(graph, "w3", {8, 4, 1, 1}, rng, 0.8f);
  testing::RandomFloatInitializer(graph, "b3", {8}, rng, 0.2f);
  testing::RandomFloatInitializer(graph, "wm", {800, 24}, rng, 0.1f);
  for (const auto& [name, value] : {std::pair<const char*, float>{"lo", 0.0f}, {"hi", 6.0f}}) {
    Tensor bound = Tensor::Empty(DType::kFloat32, {});
    *bound.data<float>() = value;
    *graph.add_initializer() = *TensorToProto(bound, name);
  }
  Tensor shape = Tensor::Empty(DType::kInt64, {2});
  shape.data<int64_t>()[0] = 2;
  shape.data<int64_t>()[1] = 800;
  *graph.add_initializer() = *TensorToProto(shape, "flat_shape");

  onnx::NodeProto* conv1 = Node(graph, "Conv", {"x", "w1", "b1"}, "conv1");
  IntsAttr(*conv1, "pads", {1, 1, 1, 1});
  Node(graph, "Relu", {"conv1"}, "act1");
  onnx::NodeProto* conv2 = Node(graph, "Conv", {"act1", "w2"}, "conv2");
  IntsAttr(*conv2, "pads", {1, 1, 1, 1});
  IntAttr(*conv2, "group", 8);
  Node(graph, "Clip", {"conv2", "lo", "hi"}, "act2");
  onnx::NodeProto* conv3 = Node(graph, "Conv", {"act2", "w3", "b3"}, "conv3");
  IntAttr(*conv3, "group", 2);
  onnx::NodeProto* leaky = Node(graph, "LeakyRelu", {"conv3"}, "act3");
  onnx::AttributeProto* alpha = leaky->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.125f);
  Node(graph, "Reshape", {"act3", "flat_shape"}, "flat");
  Node(graph, "MatMul", {"flat", "wm"}, "mm");
  Node(graph, "Relu", {"mm"}, "y");
  *graph.add_output() = FloatValue("act3", {2, 8, 10, 10});
  *graph.add_output() = FloatValue("y", {2, 24});

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

// Linear layers as exporters write them, MatMul then Add of a bias row:
//   y1 = Relu(Add(b, MatMul(x, w)))   x [2, 40]: a few rows (their own kernel), the bias first
//   y2 = Add(MatMul(x3, w), b)        x3 [3, 70, 40]: 210 rows on oneDNN
//   y3 = Add(mm3, b), mm3 = MatMul(x, w) a graph output too: not folded.
onnx::ModelProto LinearNet() {
  std::mt19937_64 rng(9);
  onnx::GraphProto graph;
  graph.set_name("linear_net");
  *graph.add_input() = FloatValue("x", {2, 40});
  *graph.add_input() = FloatValue("x3", {3, 70, 40});
  testing::RandomFloatInitializer(graph, "w", {40, 48}, rng, 0.3f);
  testing::RandomFloatInitializer(graph, "b", {48}, rng, 0.5f);
  Node(graph, "MatMul", {"x", "w"}, "mm1");
  Node(graph, "Add", {"b", "mm1"}, "sum1");
  Node(graph, "Relu", {"sum1"}, "y1");
  Node(graph, "MatMul", {"x3", "w"}, "mm2");
  Node(graph, "Add", {"mm2", "b"}, "y2");
  Node(graph, "MatMul", {"x", "w"}, "mm3");
  Node(graph, "Add", {"mm3", "b"}, "y3");
  *graph.add_output() = FloatValue("y1", {2, 48});
  *graph.add_output() = FloatValue("y2", {3, 70, 48});
  *graph.add_output() = FloatValue("y3", {2, 48});
  *graph.add_output() = FloatValue("mm3", {2, 48});

  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

onnx::ModelProto Bundled(const std::string& name) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + name);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : onnx::ModelProto();
}

std::unique_ptr<Executor> Make(const onnx::ModelProto& model, bool optimize, std::vector<std::string> capture = {}) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.fuse_activations = optimize;
  options.prepack_weights = optimize;
  options.capture = std::move(capture);
  // The executor keeps its own copy: callers pass temporaries.
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(model), options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  return executor.ok() ? std::move(executor).value() : nullptr;
}

// Inputs uniform in [-1, 1) (about half the pre-activation values are negative); the
// transformer's token ids in [0, 10), 5 of them per sequence.
std::map<std::string, Tensor> Inputs(const Executor& executor, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::map<std::string, Tensor> feeds;
  for (const InputSpec& spec : executor.inputs()) {
    Expected<Tensor> tensor = RandomInput(spec, {{"batch", 3}, {"seq", 5}}, rng);
    EXPECT_TRUE(tensor.ok()) << tensor.status().message();
    if (tensor.ok()) feeds[spec.name] = std::move(tensor).value();
  }
  return feeds;
}

RunResult RunOk(Executor& executor, const std::map<std::string, Tensor>& feeds) {
  Expected<RunResult> result = executor.Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : RunResult();
}

void ExpectBitIdentical(const RunResult& expected, const RunResult& actual, const std::string& label) {
  ASSERT_EQ(expected.outputs.size(), actual.outputs.size()) << label;
  for (size_t i = 0; i < expected.outputs.size(); ++i) {
    const Tensor& a = expected.outputs[i].tensor;
    const Tensor& b = actual.outputs[i].tensor;
    ASSERT_EQ(a.dtype(), b.dtype()) << label << " " << expected.outputs[i].name;
    ASSERT_EQ(a.shape(), b.shape()) << label << " " << expected.outputs[i].name;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0)
        << label << ": output '" << expected.outputs[i].name << "' differs";
  }
}

int64_t Calls(const RunResult& result, const std::string& label) {
  auto it = result.stats.op_times.find(label);
  return it == result.stats.op_times.end() ? 0 : it->second.calls;
}

// Fraction of the elements of `name` that the fused activation clamped to exactly 0:
// evidence that the comparison exercised both sides of the ReLU.
double ZeroFraction(const RunResult& result, const std::string& name) {
  for (const NamedTensor& output : result.outputs) {
    if (output.name != name) continue;
    const size_t element = DTypeSize(output.tensor.dtype());
    const char* bytes = static_cast<const char*>(output.tensor.raw_data());
    int64_t zeros = 0;
    for (int64_t i = 0; i < output.tensor.num_elements(); ++i) {
      bool zero = true;
      for (size_t k = 0; k < element; ++k) zero = zero && bytes[i * element + k] == 0;
      zeros += zero ? 1 : 0;
    }
    return static_cast<double>(zeros) / static_cast<double>(output.tensor.num_elements());
  }
  ADD_FAILURE() << "no output " << name;
  return 0;
}

struct Case {
  const char* model;
  PolicyKind policy;
  std::vector<std::pair<std::string, int64_t>> fused;  // stats label, calls per run
};

class FusionTest : public ::testing::TestWithParam<Case> {};

TEST_P(FusionTest, FusedAndPrepackedMatchUnfusedBitForBit) {
  const Case& c = GetParam();
  const std::string name = c.model;
  const onnx::ModelProto model =
      Converted(name == "conv_net" ? ConvNet() : name == "linear_net" ? LinearNet() : Bundled(name), c.policy);
  std::unique_ptr<Executor> fused = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(fused && plain);
  // Three runs: the first packs the weights, the others reuse them; the middle one
  // has other inputs, so a stale cache would show.
  for (uint64_t seed : {11u, 12u, 11u}) {
    const auto feeds = Inputs(*fused, seed);
    const RunResult expected = RunOk(*plain, feeds);
    const RunResult actual = RunOk(*fused, feeds);
    const std::string label = name + " / " + std::string(PolicyKindName(c.policy)) + " / seed " + std::to_string(seed);
    ExpectBitIdentical(expected, actual, label);
    for (const auto& [op, calls] : c.fused) EXPECT_EQ(Calls(actual, op), calls) << label << ": " << op;
    for (const auto& [op, time] : expected.stats.op_times) EXPECT_EQ(op.find('+'), std::string::npos) << label;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, FusionTest,
    ::testing::Values(
        Case{"conv_net", PolicyKind::kFloat32, {{"Conv+Relu", 1}, {"Conv+Clip", 1}, {"Conv+LeakyRelu", 1}, {"MatMul+Relu", 1}}},
        Case{"conv_net", PolicyKind::kMixedFloat16, {{"Conv+Relu", 1}, {"Conv+Clip", 1}, {"Conv+LeakyRelu", 1}, {"MatMul+Relu", 1}}},
        Case{"conv_net", PolicyKind::kMixedBFloat16, {{"Conv+Relu", 1}, {"Conv+Clip", 1}, {"Conv+LeakyRelu", 1}, {"MatMul+Relu", 1}}},
        // float32 bias rows fold into their MatMuls; float16/bfloat16 products are rounded
        // before their Add, which stays.
        Case{"linear_net", PolicyKind::kFloat32, {{"MatMul+Add+Relu", 1}, {"MatMul+Add", 1}, {"MatMul", 1}, {"Add", 1}}},
        Case{"linear_net", PolicyKind::kMixedBFloat16, {{"Add", 3}}},
        Case{"transformer_block.onnx", PolicyKind::kFloat32, {{"MatMul+Add", 7}}},
        Case{"mlp_u64.onnx", PolicyKind::kFloat32, {{"Gemm+Relu", 2}}},
        // The logits' Cast to float32 folds into their Gemm.
        Case{"mlp_u64.onnx", PolicyKind::kMixedFloat16, {{"Gemm+Relu", 2}, {"Gemm+Cast", 1}}},
        Case{"mlp_u64.onnx", PolicyKind::kMixedBFloat16, {{"Gemm+Relu", 2}, {"Gemm+Cast", 1}}}),
    // The bundled CNN and ResNet block fold BatchNormalization into their Convs, which
    // moves roundings: plan_rewrite_test.cc compares them within the dtype's tolerance.
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string model = info.param.model;
      model = model.substr(0, model.find('.'));
      return model + "_" + std::string(PolicyKindName(info.param.policy));
    });

TEST(FusionPlanTest, ConvNetFoldsEveryActivationAndClampsHalfTheValues) {
  std::unique_ptr<Executor> fused = Make(ConvNet(), true);
  ASSERT_TRUE(fused);
  const RunResult result = RunOk(*fused, Inputs(*fused, 3));
  EXPECT_EQ(Calls(result, "Relu") + Calls(result, "Clip") + Calls(result, "LeakyRelu"), 0);
  EXPECT_EQ(Calls(result, "Conv"), 0);
  const double zeros = ZeroFraction(result, "y");
  EXPECT_GT(zeros, 0.1);
  EXPECT_LT(zeros, 0.9);
}

TEST(FusionPlanTest, CapturedIntermediateKeepsItsOwnStep) {
  const onnx::ModelProto model = Bundled("mlp_u64.onnx");
  std::unique_ptr<Executor> captured = Make(model, true, {"dense1"});
  std::unique_ptr<Executor> plain = Make(model, false, {"dense1"});
  ASSERT_TRUE(captured && plain);
  const auto feeds = Inputs(*captured, 5);
  const RunResult result = RunOk(*captured, feeds);
  EXPECT_EQ(Calls(result, "Gemm+Relu"), 1);  // dense2 + relu2 still fold
  EXPECT_EQ(Calls(result, "Gemm"), 2);
  EXPECT_EQ(Calls(result, "Relu"), 1);
  ASSERT_EQ(result.captured.count("dense1"), 1u);
  const RunResult expected = RunOk(*plain, feeds);
  const Tensor& a = expected.captured.at("dense1");
  const Tensor& b = result.captured.at("dense1");
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0);
  ExpectBitIdentical(expected, result, "mlp capture dense1");
}

TEST(FusionPlanTest, CaptureAllFoldsNothing) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.capture_all = true;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(ConvNet(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  const RunResult result = RunOk(**executor, Inputs(**executor, 4));
  for (const auto& [op, time] : result.stats.op_times) EXPECT_EQ(op.find('+'), std::string::npos) << op;
  for (const char* value : {"conv1", "conv2", "conv3", "mm", "act1", "act2"}) EXPECT_EQ(result.captured.count(value), 1u) << value;
}

TEST(FusionPlanTest, IntermediateReadTwiceOrAGraphOutputIsNotFolded) {
  onnx::ModelProto model = ConvNet();
  // conv3 becomes a graph output; mm gets a second reader.
  *model.mutable_graph()->add_output() = FloatValue("conv3", {2, 8, 10, 10});
  Node(*model.mutable_graph(), "Neg", {"mm"}, "neg_mm");
  *model.mutable_graph()->add_output() = FloatValue("neg_mm", {2, 24});
  std::unique_ptr<Executor> fused = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(fused && plain);
  const auto feeds = Inputs(*fused, 6);
  const RunResult result = RunOk(*fused, feeds);
  EXPECT_EQ(Calls(result, "Conv+Relu"), 1);
  EXPECT_EQ(Calls(result, "Conv+Clip"), 1);
  EXPECT_EQ(Calls(result, "LeakyRelu"), 1);
  EXPECT_EQ(Calls(result, "Relu"), 1);
  EXPECT_EQ(Calls(result, "MatMul"), 1);
  ExpectBitIdentical(RunOk(*plain, feeds), result, "conv_net with shared values");
}

// float16 Gemm + Relu by hand: a = [2^-12, 2^-12], b's columns give products -2^-26
// (rounds to -0: below half the smallest subnormal 2^-24), 2^-14 and -1. The separate
// Relu keeps -0 (it is not < 0), so the fused step must too: [-0, 2^-14, +0].
TEST(FusionPlanTest, Float16GemmReluKeepsTheRoundedSignedZero) {
  onnx::GraphProto graph;
  graph.set_name("gemm_relu_f16");
  onnx::ValueInfoProto a = FloatValue("a", {1, 2});
  a.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  *graph.add_input() = a;
  Tensor b = Tensor::Empty(DType::kFloat16, {2, 3});
  const float b_values[] = {-0x1p-14f, 0x1p-2f, -0x1p12f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < 6; ++i) b.data<Float16>()[i] = Float16::FromFloat(b_values[i]);
  *graph.add_initializer() = *TensorToProto(b, "b");
  Node(graph, "Gemm", {"a", "b"}, "g");
  Node(graph, "Relu", {"g"}, "y");
  onnx::ValueInfoProto y = FloatValue("y", {1, 3});
  y.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  *graph.add_output() = y;
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;

  Tensor input = Tensor::Empty(DType::kFloat16, {1, 2});
  for (int i = 0; i < 2; ++i) input.data<Float16>()[i] = Float16::FromFloat(0x1p-12f);
  for (bool optimize : {false, true}) {
    std::unique_ptr<Executor> executor = Make(model, optimize);
    ASSERT_TRUE(executor);
    const RunResult result = RunOk(*executor, {{"a", input}});
    EXPECT_EQ(Calls(result, "Gemm+Relu"), optimize ? 1 : 0);
    ASSERT_EQ(result.outputs.size(), 1u);
    const uint16_t* bits = result.outputs[0].tensor.data<uint16_t>();
    EXPECT_EQ(bits[0], 0x8000) << "optimize " << optimize;  // -0
    EXPECT_EQ(bits[1], 0x0400) << "optimize " << optimize;  // 2^-14, the smallest normal
    EXPECT_EQ(bits[2], 0x0000) << "optimize " << optimize;  // +0
  }
}

// a [1, 2] @ b [2, 1] in float16 / bfloat16 followed by a Cast to float32, with the sum
// 1 + 3u/4 (u the dtype's unit in the last place at 1): float32 holds it exactly, the
// low-precision result rounds it to 1 + u. The folded Cast must give the rounded value.
onnx::ModelProto GemmCastModel(onnx::TensorProto::DataType low, bool second_reader) {
  onnx::GraphProto graph;
  graph.set_name("gemm_cast");
  onnx::ValueInfoProto a = FloatValue("a", {1, 2});
  a.mutable_type()->mutable_tensor_type()->set_elem_type(low);
  *graph.add_input() = a;
  *graph.add_input() = a;
  graph.mutable_input(1)->set_name("b");
  graph.mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(2);
  graph.mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(1);
  Node(graph, "MatMul", {"a", "b"}, "product");
  IntAttr(*Node(graph, "Cast", {"product"}, "y"), "to", onnx::TensorProto::FLOAT);
  *graph.add_output() = FloatValue("y", {1, 1});
  if (second_reader) {
    Node(graph, "Neg", {"product"}, "negated");
    onnx::ValueInfoProto negated = FloatValue("negated", {1, 1});
    negated.mutable_type()->mutable_tensor_type()->set_elem_type(low);
    *graph.add_output() = negated;
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

TEST(FusionPlanTest, CastToFloat32FoldsIntoMatMulAndKeepsTheRounding) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool half = dtype == DType::kFloat16;
    const float ulp = half ? 0x1p-10f : 0x1p-7f;
    const float a_values[] = {1.0f, 0.75f * ulp}, b_values[] = {1.0f, 1.0f};
    std::map<std::string, Tensor> feeds;
    for (const auto& [name, values, shape] : {std::tuple{"a", a_values, Shape{1, 2}}, std::tuple{"b", b_values, Shape{2, 1}}}) {
      Tensor tensor = Tensor::Empty(dtype, shape);
      for (int i = 0; i < 2; ++i) {
        if (half) tensor.data<Float16>()[i] = Float16::FromFloat(values[i]);
        else tensor.data<BFloat16>()[i] = BFloat16::FromFloat(values[i]);
      }
      feeds[name] = tensor;
    }
    const auto low = half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::BFLOAT16;
    for (bool second_reader : {false, true}) {
      for (bool optimize : {false, true}) {
        std::unique_ptr<Executor> executor = Make(GemmCastModel(low, second_reader), optimize);
        ASSERT_TRUE(executor);
        const RunResult result = RunOk(*executor, feeds);
        const std::string label = std::string(DTypeName(dtype)) + (second_reader ? ", product read twice" : "") +
                                  (optimize ? ", fused" : ", plain");
        // A second reader needs the low-precision product itself: no fold then.
        EXPECT_EQ(Calls(result, "MatMul+Cast"), optimize && !second_reader ? 1 : 0) << label;
        ASSERT_EQ(result.outputs[0].tensor.dtype(), DType::kFloat32) << label;
        EXPECT_EQ(*result.outputs[0].tensor.data<float>(), 1.0f + ulp) << label;
      }
    }
  }
}

// Products large enough to be widened in panels (ops/common/widened_panels.h), each
// followed by a Cast to float32 (folded: rounded in place in the float32 output) and by a
// Relu (fused: applied to each finished block): [300, 8000] @ [8000, 300] takes row and
// column panels, [1100, 2100] @ [2100, 40] all of B beside two row panels, and
// [2200, 1500] @ [1500, 1504] is cut along k into two slices (the Cast's float32 output
// holding the running sums, the Relu's rows summed in work blocks).
onnx::ModelProto PanelledProductsModel(onnx::TensorProto::DataType low) {
  onnx::GraphProto graph;
  graph.set_name("panelled_products");
  const std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> products = {{"wide", 300, 8000, 300},
                                                                                    {"tall", 1100, 2100, 40},
                                                                                    {"deep", 2200, 1500, 1504}};
  for (const auto& [name, m, k, n] : products) {
    for (const auto& [input, dims] : {std::pair{name + "_a", std::vector<int64_t>{m, k}},
                                      std::pair{name + "_b", std::vector<int64_t>{k, n}}}) {
      onnx::ValueInfoProto value = FloatValue(input, dims);
      value.mutable_type()->mutable_tensor_type()->set_elem_type(low);
      *graph.add_input() = value;
    }
    Node(graph, "MatMul", {name + "_a", name + "_b"}, name + "_product");
    IntAttr(*Node(graph, "Cast", {name + "_product"}, name + "_widened"), "to", onnx::TensorProto::FLOAT);
    *graph.add_output() = FloatValue(name + "_widened", {m, n});
    Node(graph, "MatMul", {name + "_a", name + "_b"}, name + "_pre");
    Node(graph, "Relu", {name + "_pre"}, name + "_relu");
    onnx::ValueInfoProto relu = FloatValue(name + "_relu", {m, n});
    relu.mutable_type()->mutable_tensor_type()->set_elem_type(low);
    *graph.add_output() = relu;
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

TEST(FusionPlanTest, PanelledProductsFinishLikeTheSeparateNodes) {
  // bfloat16 takes the panels where float32 kernels run it.
  const Bf16Kernels previous = SetBf16Kernels(Bf16Kernels::kFloat32);
  for (const auto low : {onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    const onnx::ModelProto model = PanelledProductsModel(low);
    std::unique_ptr<Executor> fused = Make(model, true);
    std::unique_ptr<Executor> plain = Make(model, false);
    ASSERT_TRUE(fused && plain);
    const auto feeds = Inputs(*fused, 17);
    const RunResult expected = RunOk(*plain, feeds);
    const RunResult actual = RunOk(*fused, feeds);
    const std::string label = low == onnx::TensorProto::FLOAT16 ? "float16" : "bfloat16";
    EXPECT_EQ(Calls(actual, "MatMul+Cast"), 3) << label;
    EXPECT_EQ(Calls(actual, "MatMul+Relu"), 3) << label;
    ExpectBitIdentical(expected, actual, label);
  }
  SetBf16Kernels(previous);
}

// Products of a few rows run on the few-rows kernels (ops/common/few_rows_matmul.h),
// which split the columns over the threads and sum every column in one fixed order:
// one thread and two give the same bits, B's rows contiguous (MatMul) or its columns
// (Gemm with transB), in float32, float16 and bfloat16.
TEST(FusionPlanTest, FewRowProductsGiveTheSameBitsOnOneAndTwoThreads) {
  for (const auto dtype : {onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    onnx::GraphProto graph;
    graph.set_name("few_rows");
    for (const auto& [name, dims] : {std::pair{"a", std::vector<int64_t>{3, 300}}, std::pair{"b", std::vector<int64_t>{300, 1000}},
                                     std::pair{"bt", std::vector<int64_t>{1000, 300}}}) {
      onnx::ValueInfoProto value = FloatValue(name, dims);
      value.mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
      *graph.add_input() = value;
    }
    Node(graph, "MatMul", {"a", "b"}, "rows");
    IntAttr(*Node(graph, "Gemm", {"a", "bt"}, "columns"), "transB", 1);
    for (const char* output : {"rows", "columns"}) {
      onnx::ValueInfoProto value = FloatValue(output, {3, 1000});
      value.mutable_type()->mutable_tensor_type()->set_elem_type(dtype);
      *graph.add_output() = value;
    }
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    *model.mutable_graph() = graph;
    std::unique_ptr<Executor> executors[2];
    for (int threads : {1, 2}) {
      ExecutorOptions options;
      options.num_threads = threads;
      Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(model), options);
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      executors[threads - 1] = std::move(executor).value();
    }
    const auto feeds = Inputs(*executors[0], 23);
    ExpectBitIdentical(RunOk(*executors[0], feeds), RunOk(*executors[1], feeds),
                       "few rows, dtype " + std::to_string(static_cast<int>(dtype)));
  }
}

TEST(FusionPlanTest, NonFiniteInputsMatchUnfused) {
  for (PolicyKind policy : {PolicyKind::kFloat32, PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    const onnx::ModelProto model = Converted(ConvNet(), policy);
    std::unique_ptr<Executor> fused = Make(model, true);
    std::unique_ptr<Executor> plain = Make(model, false);
    ASSERT_TRUE(fused && plain);
    auto feeds = Inputs(*fused, 8);
    float* x = feeds.at("x").data<float>();
    x[0] = std::numeric_limits<float>::quiet_NaN();
    x[500] = std::numeric_limits<float>::infinity();
    x[1000] = -std::numeric_limits<float>::infinity();
    ExpectBitIdentical(RunOk(*plain, feeds), RunOk(*fused, feeds), std::string(PolicyKindName(policy)) + " non-finite");
  }
}

}  // namespace
}  // namespace onnx_amp
