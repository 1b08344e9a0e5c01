// A fused Conv+Add(+Relu) may write its output over its residual when the residual dies
// there (KernelContext::fused_addend): the same bits as into a fresh buffer, in every
// policy and memory order, and never over a residual the Conv also reads as X.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddInitializer;
using testing::AddNode;
using testing::AsDouble;
using testing::Calls;
using testing::Converted;
using testing::Make;
using testing::Output;
using testing::RunOk;
using testing::SetIntsAttr;
using testing::TensorValue;
using testing::Uniform;

constexpr int64_t kBatch = 2, kChannels = 16, kSize = 10, kTaps = 9;

// x[2,16,10,10] -> Conv -> Relu -> r; r -> Conv -> Relu -> h; h -> Conv -> Add(., r) ->
// Relu -> Conv -> y, all 3x3 with pads 1: the residual r dies at the fused Conv+Add+Relu,
// which may write its output over r (in the plan's channels-last order too: a Conv reads
// that output). With `keep_residual` r is also a graph output, so it stays alive and the
// output gets a buffer of its own. With `self_residual` the fused Conv reads r itself
// (Add(Conv(r), r)), whose buffer it must never write while reading it.
onnx::ModelProto ResidualChain(std::mt19937_64& rng, bool keep_residual, bool self_residual) {
  onnx::GraphProto graph;
  graph.set_name("residual_chain");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kChannels, kSize, kSize});
  const auto conv = [&](const std::string& in, const std::string& out) {
    AddInitializer(graph, "w_" + out, {kChannels, kChannels, 3, 3}, Uniform(rng, kChannels * kChannels * kTaps, -0.2f, 0.2f));
    AddInitializer(graph, "b_" + out, {kChannels}, Uniform(rng, kChannels, -0.5f, 0.5f));
    SetIntsAttr(*AddNode(graph, "Conv", {in, "w_" + out, "b_" + out}, {out}, out), "pads", {1, 1, 1, 1});
  };
  conv("x", "a");
  AddNode(graph, "Relu", {"a"}, {"r"}, "relu_a");
  conv("r", "b");
  AddNode(graph, "Relu", {"b"}, {"h"}, "relu_b");
  conv(self_residual ? "r" : "h", "c");
  AddNode(graph, "Add", {"c", "r"}, {"sum"}, "add");
  AddNode(graph, "Relu", {"sum"}, {"s"}, "relu_s");
  conv("s", "y");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, kChannels, kSize, kSize});
  if (self_residual) *graph.add_output() = TensorValue("h", DType::kFloat32, {kBatch, kChannels, kSize, kSize});
  if (keep_residual) *graph.add_output() = TensorValue("r", DType::kFloat32, {kBatch, kChannels, kSize, kSize});
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

class ConvAddInPlaceTest : public ::testing::TestWithParam<std::tuple<PolicyKind, bool>> {};

// The fused Conv+Add+Relu written over its dying residual gives the bits it gives into a
// fresh buffer (the residual kept alive as a graph output), in NCHW and channels-last
// plans; reading the residual through X as well, it never takes that buffer (which
// would change the bits: the convolution would read what it writes).
TEST_P(ConvAddInPlaceTest, OutputOverTheDyingResidualChangesNoBit) {
  const auto [policy, channels_last] = GetParam();
  for (const bool self_residual : {false, true}) {
    SCOPED_TRACE(self_residual ? "Add(Conv(r), r)" : "Add(Conv(h), r)");
    RunResult results[2];
    for (const bool keep : {false, true}) {
      std::mt19937_64 rng(35);
      const onnx::ModelProto model = Converted(ResidualChain(rng, keep, self_residual), policy);
      ExecutorOptions options;
      options.num_threads = 2;
      options.channels_last = channels_last;
      Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(model), options);
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, kChannels, kSize, kSize});
      const std::vector<float> xv = Uniform(rng, static_cast<size_t>(x.num_elements()), -1.0f, 1.0f);
      std::copy(xv.begin(), xv.end(), x.data<float>());
      results[keep] = RunOk(**executor, {{"x", x}});
    }
    const RunResult& over = results[0];
    const RunResult& fresh = results[1];
    EXPECT_EQ(AsDouble(Output(over, "y")), AsDouble(Output(fresh, "y")));
    // mixed_float16 may keep the Add in float32 behind Casts: nothing fused, nothing taken.
    const bool fused = Calls(over, "Conv+Add+Relu") == 1;
    if (policy != PolicyKind::kMixedFloat16) {
      EXPECT_TRUE(fused);
    }
    if (!fused || self_residual) continue;
    // float32 has no other in-place output; in the mixed plans r reaches the graph output
    // through a Cast, after which it dies at the Conv even when kept.
    if (policy == PolicyKind::kFloat32) {
      EXPECT_EQ(over.stats.inplace_reuses, fresh.stats.inplace_reuses + 1);
    } else {
      EXPECT_GE(over.stats.inplace_reuses, 1);
    }
  }
}

// The model with float64 initializers, inputs and outputs.
onnx::ModelProto Float64Model(onnx::ModelProto model) {
  onnx::GraphProto& graph = *model.mutable_graph();
  for (onnx::TensorProto& initializer : *graph.mutable_initializer()) {
    Expected<Tensor> narrow = TensorFromProto(initializer);
    EXPECT_TRUE(narrow.ok()) << narrow.status().message();
    if (!narrow.ok()) return model;
    Tensor wide = Tensor::Empty(DType::kFloat64, narrow->shape());
    std::copy_n(narrow->data<float>(), narrow->num_elements(), wide.data<double>());
    Expected<onnx::TensorProto> proto = TensorToProto(wide, initializer.name());
    EXPECT_TRUE(proto.ok()) << proto.status().message();
    if (proto.ok()) initializer = *proto;
  }
  for (auto* values : {graph.mutable_input(), graph.mutable_output()}) {
    for (onnx::ValueInfoProto& value : *values) {
      value.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::DOUBLE);
    }
  }
  return model;
}

// float64 convolutions run on the reference loops, which add the residual as they go.
TEST(ConvAddInPlaceFloat64Test, OutputOverTheDyingResidualChangesNoBit) {
  for (const bool self_residual : {false, true}) {
    SCOPED_TRACE(self_residual ? "Add(Conv(r), r)" : "Add(Conv(h), r)");
    RunResult results[2];
    for (const bool keep : {false, true}) {
      std::mt19937_64 rng(36);
      std::unique_ptr<Executor> executor = Make(Float64Model(ResidualChain(rng, keep, self_residual)), true);
      ASSERT_TRUE(executor);
      Tensor x = Tensor::Empty(DType::kFloat64, {kBatch, kChannels, kSize, kSize});
      const std::vector<float> xv = Uniform(rng, static_cast<size_t>(x.num_elements()), -1.0f, 1.0f);
      std::copy(xv.begin(), xv.end(), x.data<double>());
      results[keep] = RunOk(*executor, {{"x", x}});
    }
    const Tensor& over = Output(results[0], "y");
    const Tensor& fresh = Output(results[1], "y");
    ASSERT_EQ(over.dtype(), DType::kFloat64);
    ASSERT_EQ(fresh.num_elements(), over.num_elements());
    EXPECT_TRUE(std::equal(over.data<double>(), over.data<double>() + over.num_elements(), fresh.data<double>()));
    EXPECT_EQ(Calls(results[0], "Conv+Add+Relu"), 1);
    EXPECT_EQ(results[0].stats.inplace_reuses, results[1].stats.inplace_reuses + (self_residual ? 0 : 1));
  }
}

INSTANTIATE_TEST_SUITE_P(PoliciesAndLayouts, ConvAddInPlaceTest,
                         ::testing::Combine(::testing::Values(PolicyKind::kFloat32, PolicyKind::kMixedFloat16,
                                                              PolicyKind::kMixedBFloat16),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<PolicyKind, bool>>& info) {
                           return std::string(PolicyKindName(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_channels_last" : "_nchw");
                         });

}  // namespace
}  // namespace onnx_amp
