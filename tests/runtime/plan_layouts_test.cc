// Channels-last values between convolutions and max pools (runtime/executor/plan_layouts.h):
// which values the plan picks, and that a run gives the same bits with them as with every
// value in NCHW, on a graph made to reach every case (a 3x3 stride-2 ceil-mode pool with
// padding, a residual Add, a pool feeding a non-convolution, channels not a multiple of
// 16, NaN, infinities and signed zeros in the input) and on the bundled CNN and ResNet
// block under each policy. With them, a Relu that only a max pool reads moves from its
// Conv into the pool (plan_fusion.h, MoveRelusIntoReaders), for the same bits too.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "converter/convert_model.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/onnx/model_io.h"
#include "tests/ops/dnn_test_util.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::RandomFloatInitializer;
using testing::SetIntAttr;
using testing::SetIntsAttr;
using testing::TensorValue;

constexpr int64_t kBatch = 2, kIn = 3, kMid = 20, kSize = 13;

// A model of `graph` importing the default domain at opset 17.
onnx::ModelProto ModelOf(const onnx::GraphProto& graph) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

// x[2,3,13,13] -> Conv 3x3 (pads 1) + Relu -> c1 -> MaxPool 3x3 stride 2 pads 1 ceil ->
// p1[2,20,8,8] -> Conv 3x3 (pads 1) + Add p1 + Relu -> r2 -> MaxPool 2x2 -> p2[2,20,4,4]
// -> Flatten -> y, and c1 also -> Conv 1x1 -> side (a graph output).
onnx::ModelProto ConvPoolChain() {
  std::mt19937_64 rng(7);
  onnx::GraphProto graph;
  graph.set_name("conv_pool_chain");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kIn, kSize, kSize});
  RandomFloatInitializer(graph, "w1", {kMid, kIn, 3, 3}, rng, 0.4f);
  RandomFloatInitializer(graph, "b1", {kMid}, rng, 0.4f);
  RandomFloatInitializer(graph, "w2", {kMid, kMid, 3, 3}, rng, 0.4f);
  RandomFloatInitializer(graph, "w3", {kMid, kMid, 1, 1}, rng, 0.4f);
  SetIntsAttr(*AddNode(graph, "Conv", {"x", "w1", "b1"}, {"c1_pre"}, "conv1"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Relu", {"c1_pre"}, {"c1"}, "relu1");
  onnx::NodeProto* pool1 = AddNode(graph, "MaxPool", {"c1"}, {"p1"}, "pool1");
  SetIntsAttr(*pool1, "kernel_shape", {3, 3});
  SetIntsAttr(*pool1, "strides", {2, 2});
  SetIntsAttr(*pool1, "pads", {1, 1, 1, 1});
  SetIntAttr(*pool1, "ceil_mode", 1);
  SetIntsAttr(*AddNode(graph, "Conv", {"p1", "w2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Add", {"c2", "p1"}, {"s2"}, "residual");
  AddNode(graph, "Relu", {"s2"}, {"r2"}, "relu2");
  onnx::NodeProto* pool2 = AddNode(graph, "MaxPool", {"r2"}, {"p2"}, "pool2");
  SetIntsAttr(*pool2, "kernel_shape", {2, 2});
  SetIntsAttr(*pool2, "strides", {2, 2});
  AddNode(graph, "Flatten", {"p2"}, {"y"}, "flatten");
  AddNode(graph, "Conv", {"c1", "w3"}, {"side"}, "conv3");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, kMid * 16});
  *graph.add_output() = TensorValue("side", DType::kFloat32, {kBatch, kMid, kSize, kSize});
  return ModelOf(graph);
}

// Random values with NaN, +-inf and signed zeros sprinkled in.
Tensor SpecialInput() { return testing::WithSpecials({kBatch, kIn, kSize, kSize}, 11, 97, 5); }

struct Outcome {
  std::vector<NamedTensor> outputs;
  std::vector<std::string> channels_last;
  std::set<std::string> steps;  // op labels of the run
};

Outcome RunModel(const onnx::ModelProto& model, const std::map<std::string, Tensor>& feeds, bool channels_last,
            std::vector<std::string> capture = {}) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.channels_last = channels_last;
  options.capture = std::move(capture);
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(model, options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return {};
  Outcome outcome;
  outcome.channels_last = (*executor)->ChannelsLastValues();
  // Twice: the second run takes its buffers from the learned memory plan.
  for (int run = 0; run < 2; ++run) {
    Expected<RunResult> result = (*executor)->Run(feeds);
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return {};
    outcome.outputs = std::move(result->outputs);
    for (const auto& [label, time] : result->stats.op_times) outcome.steps.insert(label);
  }
  return outcome;
}

void ExpectSameBits(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b, const std::string& label) {
  ASSERT_EQ(a.size(), b.size()) << label;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].tensor.dtype(), b[i].tensor.dtype()) << label << " " << a[i].name;
    ASSERT_EQ(a[i].tensor.shape(), b[i].tensor.shape()) << label << " " << a[i].name;
    const size_t bytes = static_cast<size_t>(a[i].tensor.num_elements()) * DTypeSize(a[i].tensor.dtype());
    EXPECT_EQ(std::memcmp(a[i].tensor.raw_data(), b[i].tensor.raw_data(), bytes), 0)
        << label << ": output " << a[i].name << " differs with channels-last values";
  }
}

TEST(ChannelsLastTest, PicksTheValuesBetweenConvolutionsAndPools) {
  const Outcome outcome = RunModel(ConvPoolChain(), {{"x", SpecialInput()}}, true);
  // c1 feeds a pool and a Conv; p1 a Conv and its residual; r2 (the fused Conv+Add+Relu)
  // a pool. p2 feeds Flatten and side is a graph output: both stay NCHW.
  EXPECT_EQ(outcome.channels_last, (std::vector<std::string>{"c1", "p1", "r2"}));
  const Outcome nchw = RunModel(ConvPoolChain(), {{"x", SpecialInput()}}, false);
  EXPECT_TRUE(nchw.channels_last.empty());
}

TEST(ChannelsLastTest, GivesTheSameBitsAsNchwWithNaNInfinitiesAndSignedZeros) {
  const std::map<std::string, Tensor> feeds{{"x", SpecialInput()}};
  const Outcome channels_last = RunModel(ConvPoolChain(), feeds, true);
  const Outcome nchw = RunModel(ConvPoolChain(), feeds, false);
  ExpectSameBits(channels_last.outputs, nchw.outputs, "conv_pool_chain");
  // The special values reach the outputs (so the comparison covers them).
  const Tensor& y = channels_last.outputs[0].tensor;
  EXPECT_TRUE(std::any_of(y.data<float>(), y.data<float>() + y.num_elements(), [](float v) { return std::isnan(v); }));
}

// ConvPoolChain without conv3 and its output, so that c1 too has the pool as its only
// reader: its 3x3 overlapping windows take the pool's general loop.
onnx::ModelProto ConvPoolChainWithoutSide() {
  onnx::ModelProto model = ConvPoolChain();
  onnx::GraphProto& graph = *model.mutable_graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    if (graph.node(i).name() != "conv3") continue;
    graph.mutable_node()->DeleteSubrange(i, 1);
    break;
  }
  graph.mutable_output()->DeleteSubrange(1, 1);  // side
  return model;
}

// x[2,20,8,8] -> Conv 1x1 (bias -1, so that whole windows come out negative) -> Relu ->
// MaxPool 2x2 -> y: the Relu decides many of the pool's outputs, on its 2x2 kernels.
// Channels of the Relu moved into a pool: whole blocks of 8 (the AVX2 tile kernel) and a
// part block of 16 (the AVX-512 one's masked tail).
constexpr int64_t kPoolChannels = 24;

onnx::ModelProto NegativeConvReluPool() {
  std::mt19937_64 rng(13);
  onnx::GraphProto graph;
  graph.set_name("negative_conv_relu_pool");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kPoolChannels, 8, 8});
  RandomFloatInitializer(graph, "w", {kPoolChannels, kPoolChannels, 1, 1}, rng, 0.3f);
  onnx::TensorProto* bias = graph.add_initializer();
  bias->set_name("b");
  bias->set_data_type(onnx::TensorProto::FLOAT);
  bias->add_dims(kPoolChannels);
  for (int64_t c = 0; c < kPoolChannels; ++c) bias->add_float_data(-1.0f);
  AddNode(graph, "Conv", {"x", "w", "b"}, {"c"}, "conv");
  AddNode(graph, "Relu", {"c"}, {"r"}, "relu");
  onnx::NodeProto* pool = AddNode(graph, "MaxPool", {"r"}, {"y"}, "pool");
  SetIntsAttr(*pool, "kernel_shape", {2, 2});
  SetIntsAttr(*pool, "strides", {2, 2});
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, kPoolChannels, 4, 4});
  return ModelOf(graph);
}

TEST(ChannelsLastTest, AReluOnlyAMaxPoolReadsMovesIntoThePool) {
  const std::map<std::string, Tensor> feeds{{"x", SpecialInput()}};
  // r2's Relu moves into pool2; c1 also feeds conv3, so conv1 keeps its Relu.
  const Outcome chain = RunModel(ConvPoolChain(), feeds, true);
  EXPECT_EQ(chain.steps, (std::set<std::string>{"Conv+Relu", "MaxPool", "Conv+Add", "Relu+MaxPool", "Conv", "Flatten"}));
  EXPECT_EQ(RunModel(ConvPoolChain(), feeds, false).steps.count("Relu+MaxPool"), 0u) << "NCHW plans move nothing";
  const Outcome alone = RunModel(ConvPoolChainWithoutSide(), feeds, true);
  EXPECT_EQ(alone.steps, (std::set<std::string>{"Conv", "Relu+MaxPool", "Conv+Add", "Flatten"}));
  // The same bits as the NCHW plan, on the AVX-512 2x2 kernel and on the others (AVX2 or
  // portable loops).
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, kPoolChannels, 8, 8});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = i % 89 == 3 ? -0.0f : uniform(rng);
  x.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  for (const bool avx512 : {true, false}) {
    if (avx512 && !__builtin_cpu_supports("avx512f")) continue;
    const testing::ScopedPool2x2Avx512 pools(avx512);
    const std::string label = avx512 ? "AVX-512 pools" : "portable pools";
    const Outcome moved = RunModel(ConvPoolChainWithoutSide(), feeds, true);
    ExpectSameBits(moved.outputs, RunModel(ConvPoolChainWithoutSide(), feeds, false).outputs, label);
    const Outcome negative = RunModel(NegativeConvReluPool(), {{"x", x}}, true);
    EXPECT_EQ(negative.steps, (std::set<std::string>{"Conv", "Relu+MaxPool"})) << label;
    ExpectSameBits(negative.outputs, RunModel(NegativeConvReluPool(), {{"x", x}}, false).outputs, label);
    // The Relu decided outputs: some windows were all negative.
    const Tensor& y = negative.outputs[0].tensor;
    EXPECT_GT(std::count(y.data<float>(), y.data<float>() + y.num_elements(), 0.0f), 10) << label;
  }
}

TEST(ChannelsLastTest, CapturedValuesStayNchw) {
  const Outcome outcome = RunModel(ConvPoolChain(), {{"x", SpecialInput()}}, true, {"p1"});
  EXPECT_EQ(outcome.channels_last, (std::vector<std::string>{"c1", "r2"}));
}

// x -> Conv -> a -> Sigmoid -> s -> Conv -> c -> Add(c, bias [1, C, 1, 1]) -> d -> Conv -> y:
// the Sigmoid, element-wise, keeps a and s channels-last between the convolutions; the
// Add's broadcast bias cannot be, so c and d stay NCHW.
onnx::ModelProto ElementWiseChain() {
  std::mt19937_64 rng(9);
  onnx::GraphProto graph;
  graph.set_name("element_wise_chain");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kIn, kSize, kSize});
  RandomFloatInitializer(graph, "w1", {kMid, kIn, 3, 3}, rng, 0.4f);
  RandomFloatInitializer(graph, "w2", {kMid, kMid, 3, 3}, rng, 0.4f);
  RandomFloatInitializer(graph, "w3", {kMid, kMid, 1, 1}, rng, 0.4f);
  RandomFloatInitializer(graph, "bias", {1, kMid, 1, 1}, rng, 0.4f);
  SetIntsAttr(*AddNode(graph, "Conv", {"x", "w1"}, {"a"}, "conv1"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Sigmoid", {"a"}, {"s"}, "sigmoid");
  SetIntsAttr(*AddNode(graph, "Conv", {"s", "w2"}, {"c"}, "conv2"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Add", {"c", "bias"}, {"d"}, "add_bias");
  AddNode(graph, "Conv", {"d", "w3"}, {"y"}, "conv3");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, kMid, kSize, kSize});
  return ModelOf(graph);
}

TEST(ChannelsLastTest, ElementWiseOpsPassTheirOrderOnUnlessAnInputBroadcasts) {
  const std::map<std::string, Tensor> feeds{{"x", SpecialInput()}};
  const Outcome channels_last = RunModel(ElementWiseChain(), feeds, true);
  EXPECT_EQ(channels_last.channels_last, (std::vector<std::string>{"a", "s"}));
  const Outcome nchw = RunModel(ElementWiseChain(), feeds, false);
  ExpectSameBits(channels_last.outputs, nchw.outputs, "element_wise_chain");
}

class BundledModelTest : public ::testing::TestWithParam<std::tuple<const char*, PolicyKind, int64_t>> {};

TEST_P(BundledModelTest, GivesTheSameBitsAsNchw) {
  const auto& [name, policy, batch] = GetParam();
  Expected<onnx::ModelProto> loaded = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + name + ".onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  onnx::ModelProto model = *loaded;
  if (policy != PolicyKind::kFloat32) {
    ConvertOptions convert;
    convert.policy.kind = policy;
    Expected<ConvertResult> converted = ConvertModel(model, convert);
    ASSERT_TRUE(converted.ok()) << converted.status().message();
    model = std::move(converted->model);
  }
  ExecutorOptions options;
  Expected<std::unique_ptr<Executor>> probe = Executor::Create(model, options);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  std::mt19937_64 rng(3);
  std::map<std::string, Tensor> feeds;
  for (const InputSpec& spec : (*probe)->inputs()) {
    Expected<Tensor> tensor = RandomInput(spec, {{"batch", batch}}, rng);
    ASSERT_TRUE(tensor.ok()) << tensor.status().message();
    feeds[spec.name] = std::move(tensor).value();
  }
  const Outcome channels_last = RunModel(model, feeds, true);
  const Outcome nchw = RunModel(model, feeds, false);
  EXPECT_FALSE(channels_last.channels_last.empty()) << name << ": no value between convolutions went channels-last";
  ExpectSameBits(channels_last.outputs, nchw.outputs, std::string(name) + " " + std::string(PolicyKindName(policy)));
}

INSTANTIATE_TEST_SUITE_P(Models, BundledModelTest,
                         ::testing::Combine(::testing::Values("cnn", "resnet_block"),
                                            ::testing::Values(PolicyKind::kFloat32, PolicyKind::kMixedFloat16,
                                                              PolicyKind::kMixedBFloat16),
                                            ::testing::Values(int64_t{1}, int64_t{3})));

}  // namespace
}  // namespace onnx_amp
