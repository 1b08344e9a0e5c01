// A first layer's 2x2 max pool folded into its Conv (runtime/executor/plan_fusion.h,
// FuseMaxPoolsIntoConvs; ops/conv/few_channels_conv.h): which pools fold, and that the
// folded step gives the bits of the separate Conv and MaxPool of the NCHW plan (which
// folds nothing and runs the Conv on oneDNN's direct float32 kernel, whose order the loops
// sum in), in float32, mixed_float16 and mixed_bfloat16, on the widest loop path the CPU
// has (the one matching oneDNN's kernels; a run held to AVX2 checks that path), with odd
// heights and widths (the last row and column left out), NaN, infinities and
// signed zeros in the input, and a Relu, a LeakyRelu or nothing between the two. bfloat16 products
// are held to float32 kernels: oneDNN's native ones sum in pairs.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "ops/conv/few_channels_conv.h"
#include "tests/ops/dnn_test_util.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::Calls;
using testing::RandomFloatInitializer;
using testing::SetIntAttr;
using testing::SetIntsAttr;
using testing::TensorValue;

constexpr int64_t kBatch = 3, kHeight = 13, kWidth = 15;

// How the layer under test is built.
struct Layer {
  int64_t channels = 1, maps = 16;
  std::string activation = "Relu";  // or "LeakyRelu", or "" for none
  std::vector<int64_t> pool_kernel{2, 2}, pool_strides{2, 2}, pool_pads;
  bool indices_out = false;  // the pool's Indices a graph output
  bool conv_out = false;     // the Conv's output a graph output too
};

// x[3, C, 13, 15] -> Conv 3x3 (pads 1, bias) -> activation -> a -> MaxPool -> p -> Conv
// 1x1 -> y. The 1x1 Conv reading p keeps p channels-last.
onnx::ModelProto FirstLayer(const Layer& layer) {
  std::mt19937_64 rng(5);
  onnx::GraphProto graph;
  graph.set_name("first_layer");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, layer.channels, kHeight, kWidth});
  RandomFloatInitializer(graph, "w1", {layer.maps, layer.channels, 3, 3}, rng, 0.5f);
  RandomFloatInitializer(graph, "b1", {layer.maps}, rng, 0.3f);
  RandomFloatInitializer(graph, "w2", {8, layer.maps, 1, 1}, rng, 0.3f);
  const std::string conv_out = layer.activation.empty() ? "a" : "c";
  SetIntsAttr(*AddNode(graph, "Conv", {"x", "w1", "b1"}, {conv_out}, "conv1"), "pads", {1, 1, 1, 1});
  if (layer.activation == "Relu") AddNode(graph, "Relu", {"c"}, {"a"}, "activation");
  if (layer.activation == "LeakyRelu") {
    onnx::NodeProto* activation = AddNode(graph, "LeakyRelu", {"c"}, {"a"}, "activation");
    onnx::AttributeProto* alpha = activation->add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(0.1f);
  }
  onnx::NodeProto* pool = layer.indices_out ? AddNode(graph, "MaxPool", {"a"}, {"p", "indices"}, "pool")
                                            : AddNode(graph, "MaxPool", {"a"}, {"p"}, "pool");
  onnx::AttributeProto* kernel = pool->add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  for (const int64_t k : layer.pool_kernel) kernel->add_ints(k);
  onnx::AttributeProto* strides = pool->add_attribute();
  strides->set_name("strides");
  strides->set_type(onnx::AttributeProto::INTS);
  for (const int64_t s : layer.pool_strides) strides->add_ints(s);
  if (!layer.pool_pads.empty()) {
    onnx::AttributeProto* pads = pool->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (const int64_t p : layer.pool_pads) pads->add_ints(p);
  }
  AddNode(graph, "Conv", {"p", "w2"}, {"y"}, "conv2");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, 8, -1, -1});
  if (layer.indices_out) *graph.add_output() = TensorValue("indices", DType::kInt64, {kBatch, layer.maps, -1, -1});
  if (layer.conv_out) *graph.add_output() = TensorValue("a", DType::kFloat32, {kBatch, layer.maps, kHeight, kWidth});
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

// Random values with NaN, +-inf and signed zeros sprinkled in.
Tensor SpecialInput(int64_t channels) {
  return testing::WithSpecials({kBatch, channels, kHeight, kWidth}, 21, 101, 7);
}

RunResult RunLayer(const onnx::ModelProto& model, const Tensor& x, bool channels_last) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.channels_last = channels_last;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(model, options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return {};
  testing::RunOk(**executor, {{"x", x}});  // the second run takes its buffers from the learned plan
  return testing::RunOk(**executor, {{"x", x}});
}

void ExpectSameBits(const RunResult& folded, const RunResult& separate, const std::string& label) {
  ASSERT_EQ(folded.outputs.size(), separate.outputs.size()) << label;
  for (size_t i = 0; i < folded.outputs.size(); ++i) {
    const Tensor& a = folded.outputs[i].tensor;
    const Tensor& b = separate.outputs[i].tensor;
    ASSERT_EQ(a.dtype(), b.dtype()) << label;
    ASSERT_EQ(a.shape(), b.shape()) << label;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.num_elements()) * DTypeSize(a.dtype())), 0)
        << label << ": output " << folded.outputs[i].name << " differs from the separate Conv and MaxPool";
  }
}

TEST(FirstLayerPoolTest, FoldsIntoTheConvAndGivesTheSeparateNodesBits) {
  const FewChannelsPath path = CurrentFewChannelsPath();
  if (path == FewChannelsPath::kNone) {
    GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA and F16C: no first-layer loops";
  }
  const testing::ScopedBf16Kernels float32_products(Bf16Kernels::kFloat32);
  const bool avx512 = path == FewChannelsPath::kAvx512;
  for (const PolicyKind policy : {PolicyKind::kFloat32, PolicyKind::kMixedFloat16, PolicyKind::kMixedBFloat16}) {
    for (const int64_t channels : {int64_t{1}, int64_t{3}}) {
      for (const int64_t maps : {int64_t{16}, int64_t{32}}) {
        for (const std::string activation : {"Relu", "LeakyRelu", ""}) {
          Layer layer;
          layer.channels = channels;
          layer.maps = maps;
          layer.activation = activation;
          const onnx::ModelProto model = testing::Converted(FirstLayer(layer), policy);
          const Tensor x = SpecialInput(channels);
          const std::string label = std::string(avx512 ? "avx512 " : "avx2 ") + std::string(PolicyKindName(policy)) + " " +
                                    std::to_string(channels) + " channels, " + std::to_string(maps) + " maps, " +
                                    activation;
          const RunResult folded = RunLayer(model, x, true);
          // AVX2 holds 12 weights a map: 3 channels of a 3 x 3 window stay on oneDNN.
          const bool folds = avx512 || channels * 9 <= kMaxFewChannelsTapsAvx2;
          const std::string fused = activation.empty() ? "Conv+MaxPool" : "Conv+" + activation + "+MaxPool";
          EXPECT_EQ(Calls(folded, fused), folds ? 1 : 0) << label;
          ExpectSameBits(folded, RunLayer(model, x, false), label);
          // The special values reach the output, so the comparison covers them.
          const Tensor& y = folded.outputs[0].tensor;
          const float* values = y.data<float>();
          EXPECT_TRUE(std::any_of(values, values + y.num_elements(), [](float v) { return std::isnan(v); })) << label;
        }
      }
    }
  }
}

TEST(FirstLayerPoolTest, LeavesOtherPoolsAndLayersAlone) {
  if (CurrentFewChannelsPath() == FewChannelsPath::kNone) {
    GTEST_SKIP() << "this CPU has neither AVX-512 nor AVX2 with FMA and F16C: no first-layer loops";
  }
  const testing::ScopedBf16Kernels float32_products(Bf16Kernels::kFloat32);
  Layer overlapping;  // ResNet's stem pool: 3x3 windows at stride 2
  overlapping.pool_kernel = {3, 3};
  overlapping.pool_pads = {1, 1, 1, 1};
  Layer padded;
  padded.pool_pads = {0, 0, 1, 1};
  Layer unit_stride;
  unit_stride.pool_strides = {1, 1};
  Layer indices;
  indices.indices_out = true;
  Layer observed;  // the Conv's activation is a graph output
  observed.conv_out = true;
  Layer wide;  // maps not a multiple of 16
  wide.maps = 24;
  Layer deep;  // more than 4 channels: not a first layer
  deep.channels = 8;
  for (const auto& [name, layer] : {std::pair<const char*, Layer>{"3x3 pool", overlapping}, {"padded pool", padded},
                                    {"stride 1", unit_stride}, {"indices", indices}, {"observed", observed},
                                    {"24 maps", wide}, {"8 channels", deep}}) {
    const onnx::ModelProto model = testing::Converted(FirstLayer(layer), PolicyKind::kMixedBFloat16);
    const Tensor x = SpecialInput(layer.channels);
    const RunResult result = RunLayer(model, x, true);
    EXPECT_EQ(Calls(result, "Conv+Relu+MaxPool"), 0) << name;
    EXPECT_EQ(Calls(result, "MaxPool") + Calls(result, "Relu+MaxPool"), 1) << name;
    ExpectSameBits(result, RunLayer(model, x, false), name);
  }
}

}  // namespace
}  // namespace onnx_amp
