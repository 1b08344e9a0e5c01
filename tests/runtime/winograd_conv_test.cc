// 3x3 stride-1 convolutions of 64 channels run on oneDNN's Winograd kernels where the
// CPU has them (ops/conv/winograd_choice.h).
// Each layer of a ResNet-like chain (Conv+Relu, Conv+Add+Relu with the residual, a plain
// Conv) is checked against a float64 sum over the layer's own inputs, with the Winograd
// kernels and without, in float32, float16 and bfloat16 (operands widened exactly), at
// batch 2 and 16 (oneDNN takes different Winograd tilings for the two), with constant
// weights (the inference kernels) and with weights given as inputs (the training
// kernels). Where the kernels exist the bits differ from the direct kernel's, so the
// path did run.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/conv/winograd_choice.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::AsDouble;
using testing::FilledTensor;
using testing::Output;
using testing::Rounded;
using testing::RunOk;
using testing::SetIntsAttr;
using testing::TensorValue;
using testing::Uniform;

constexpr int64_t kChannels = 64, kSize = 8, kTaps = 9;

struct Layer {
  std::string name;
  std::vector<float> w, bias;  // [64][64][3][3], [64]; values of the graph's dtype
};

Layer RandomLayer(const std::string& name, DType dtype, std::mt19937_64& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(kChannels * kTaps));
  return {name, Rounded(Uniform(rng, kChannels * kChannels * kTaps, -bound, bound), dtype),
          Rounded(Uniform(rng, kChannels, -0.5f, 0.5f), dtype)};
}

struct Chain {
  onnx::ModelProto model;
  Tensor x;
  std::vector<Layer> layers;  // a: x -> h, b: h -> y (residual h), c: y -> z
};

// x -> Conv a -> Relu -> h; h -> Conv b -> Add(., h) -> Relu -> y; y -> Conv c -> z.
// With `constant_weights` false, a's weights are a graph input.
Chain MakeChain(DType dtype, int64_t batch, bool constant_weights, std::mt19937_64& rng) {
  Chain chain;
  chain.layers = {RandomLayer("a", dtype, rng), RandomLayer("b", dtype, rng), RandomLayer("c", dtype, rng)};
  const Shape shape = {batch, kChannels, kSize, kSize};
  const std::vector<float> x = Rounded(Uniform(rng, static_cast<size_t>(batch * kChannels * kSize * kSize), -1, 1), dtype);
  chain.x = FilledTensor(dtype, shape, std::vector<double>(x.begin(), x.end()));
  onnx::GraphProto graph;
  graph.set_name("winograd_chain");
  *graph.add_input() = TensorValue("x", dtype, shape);
  const std::string inputs[] = {"x", "h", "y"};
  const std::string outputs[] = {"a_out", "b_out", "z"};
  for (size_t i = 0; i < chain.layers.size(); ++i) {
    const Layer& layer = chain.layers[i];
    const Tensor w = FilledTensor(dtype, {kChannels, kChannels, 3, 3}, std::vector<double>(layer.w.begin(), layer.w.end()));
    const Tensor b = FilledTensor(dtype, {kChannels}, std::vector<double>(layer.bias.begin(), layer.bias.end()));
    if (i == 0 && !constant_weights) {
      *graph.add_input() = TensorValue("w_a", dtype, {kChannels, kChannels, 3, 3});
    } else {
      *graph.add_initializer() = *TensorToProto(w, "w_" + layer.name);
    }
    *graph.add_initializer() = *TensorToProto(b, "b_" + layer.name);
    onnx::NodeProto* conv = AddNode(graph, "Conv", {inputs[i], "w_" + layer.name, "b_" + layer.name}, {outputs[i]},
                                    "conv_" + layer.name);
    SetIntsAttr(*conv, "pads", {1, 1, 1, 1});
  }
  AddNode(graph, "Relu", {"a_out"}, {"h"}, "relu_h");
  AddNode(graph, "Add", {"b_out", "h"}, {"sum"}, "add");
  AddNode(graph, "Relu", {"sum"}, {"y"}, "relu_y");
  for (const char* name : {"h", "y", "z"}) *graph.add_output() = TensorValue(name, dtype, shape);
  chain.model = testing::MakeModel(graph);
  return chain;
}

RunResult RunChain(const Chain& chain, bool winograd) {
  const bool previous = SetConvUsesWinograd(winograd);
  ExecutorOptions options;
  options.num_threads = 2;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(chain.model), options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  std::map<std::string, Tensor> feeds = {{"x", chain.x}};
  if (chain.model.graph().input_size() > 1) {
    const Layer& a = chain.layers[0];
    feeds["w_a"] = FilledTensor(chain.x.dtype(), {kChannels, kChannels, 3, 3}, std::vector<double>(a.w.begin(), a.w.end()));
  }
  RunResult result = executor.ok() ? RunOk(**executor, feeds) : RunResult();
  SetConvUsesWinograd(previous);
  return result;
}

// Each output of `layer` over `in` (NCHW) against the float64 sum plus bias (plus the
// residual, then Relu, as `relu` and `residual` say): within twice the worst case of a
// float32 sum of the 576 products (K u times the sum of their sizes; the errors seen are
// a few hundred times smaller, with the Winograd transforms or without), plus twice a
// rounding of the dtype.
void ExpectLayerClose(const std::vector<double>& in, const Layer& layer, const std::vector<double>* residual, bool relu,
                      const std::vector<double>& got, DType dtype, int64_t batch, const std::string& label) {
  const double float32_terms = 2.0 * kChannels * kTaps * std::ldexp(1.0, -24);
  size_t failures = 0;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < kChannels; ++oc) {
      for (int64_t oy = 0; oy < kSize; ++oy) {
        for (int64_t ox = 0; ox < kSize; ++ox) {
          double sum = layer.bias[oc], magnitude = std::fabs(layer.bias[oc]);
          for (int64_t ic = 0; ic < kChannels; ++ic) {
            for (int64_t ky = 0; ky < 3; ++ky) {
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                if (iy < 0 || iy >= kSize || ix < 0 || ix >= kSize) continue;
                const double term = in[((n * kChannels + ic) * kSize + iy) * kSize + ix] *
                                    layer.w[((oc * kChannels + ic) * 3 + ky) * 3 + kx];
                sum += term;
                magnitude += std::fabs(term);
              }
            }
          }
          const size_t at = static_cast<size_t>(((n * kChannels + oc) * kSize + oy) * kSize + ox);
          if (residual != nullptr) {
            sum += (*residual)[at];
            magnitude += std::fabs((*residual)[at]);
          }
          if (relu) sum = std::max(sum, 0.0);
          const double bound = float32_terms * magnitude + UnitRoundoff(dtype) * std::fabs(sum) * 2.0;
          if (std::fabs(got[at] - sum) > bound && failures++ < 3) {
            ADD_FAILURE() << label << " at " << at << ": " << got[at] << " against " << sum << " (bound " << bound << ")";
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u) << label;
}

void ExpectChainClose(const Chain& chain, const RunResult& result, int64_t batch, const std::string& label) {
  const DType dtype = chain.x.dtype();
  const std::vector<double> x = AsDouble(chain.x), h = AsDouble(Output(result, "h")), y = AsDouble(Output(result, "y")),
                            z = AsDouble(Output(result, "z"));
  ExpectLayerClose(x, chain.layers[0], nullptr, true, h, dtype, batch, label + " h");
  ExpectLayerClose(h, chain.layers[1], &h, true, y, dtype, batch, label + " y");
  ExpectLayerClose(y, chain.layers[2], nullptr, false, z, dtype, batch, label + " z");
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.num_elements() == b.num_elements() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.num_elements()) * DTypeSize(a.dtype())) == 0;
}

class WinogradConvTest : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {};

// Runs the chain with the Winograd kernels and without: each layer within the bound both
// times, and, where oneDNN has the kernels and runs them on these operands, other bits.
void CheckChain(const Chain& chain, int64_t batch) {
  const RunResult winograd = RunChain(chain, true);
  const RunResult direct = RunChain(chain, false);
  ExpectChainClose(chain, winograd, batch, "winograd");
  ExpectChainClose(chain, direct, batch, "direct");
  EXPECT_EQ(testing::Calls(winograd, "Conv+Add+Relu"), 1);
  if (!WinogradKernelsAvailable()) GTEST_SKIP() << "oneDNN has no Winograd kernels here (they need AVX-512)";
  // float32 kernels run float16 everywhere and bfloat16 where native bfloat16 ones do not pay.
  if (chain.x.dtype() == DType::kBFloat16) return;
  EXPECT_FALSE(SameBits(Output(winograd, "h"), Output(direct, "h"))) << "the Winograd kernels did not run";
}

TEST_P(WinogradConvTest, EachLayerMatchesTheFloat64Sum) {
  const auto [dtype, batch] = GetParam();
  std::mt19937_64 rng(71);
  CheckChain(MakeChain(dtype, batch, true, rng), batch);
}

// Weights that are graph inputs (a training step's) take the training kernels, which
// transform them on each call.
TEST_P(WinogradConvTest, WeightsThatChangeTakeTheTrainingKernels) {
  const auto [dtype, batch] = GetParam();
  std::mt19937_64 rng(72);
  CheckChain(MakeChain(dtype, batch, false, rng), batch);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndBatches, WinogradConvTest,
                         ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                                            ::testing::Values(int64_t{2}, int64_t{16})),
                         [](const ::testing::TestParamInfo<std::tuple<DType, int64_t>>& info) {
                           return std::string(DTypeName(std::get<0>(info.param))) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace onnx_amp
