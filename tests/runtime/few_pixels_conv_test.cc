// Convolutions with at most 16 output pixels and constant weights run on the few-pixels
// kernel (ops/conv/few_pixels_conv.h), which sums each output in float32 in (ky, kx,
// in_channel) order. Checked bit for bit against that sum computed here one fused
// multiply-add at a time, through a chain that reads and writes NCHW and channels-last
// values, with a fused residual and Relu, strides, dilations, 1 x 1 kernels and pads on
// one side only, in float32, float16 and bfloat16; and against oneDNN's path, which sums
// in another order.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ops/conv/few_pixels_conv.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::AsDouble;
using testing::FilledTensor;
using testing::Output;
using testing::Rounded;
using testing::RoundedTo;
using testing::RunOk;
using testing::SetIntsAttr;
using testing::TensorValue;
using testing::Uniform;

constexpr int64_t kInChannels = 8, kWide = 128, kOutChannels = 16;

struct Conv2d {
  std::vector<float> w, bias;  // [out][in][k][k], [out]; values of the graph's dtype
  int64_t out = 0, in = 0, kernel = 1, stride = 1, pad = 0, dilation = 1;
  int64_t pad_end = 0;  // after each spatial dim (`pad` before)
  int64_t OutSize(int64_t size) const { return (size + pad + pad_end - dilation * (kernel - 1) - 1) / stride + 1; }
};

// ((sum + bias) + addend) per output, NCHW, the sum one fused multiply-add at a time in
// (ky, kx, in) order from +0, taps in the padding included as zeros.
std::vector<float> SequentialConv(const std::vector<float>& x, int64_t batch, int64_t size, const Conv2d& c,
                                  const std::vector<float>* addend) {
  const int64_t out_size = c.OutSize(size);
  std::vector<float> y(static_cast<size_t>(batch * c.out * out_size * out_size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < c.out; ++oc) {
      for (int64_t oy = 0; oy < out_size; ++oy) {
        for (int64_t ox = 0; ox < out_size; ++ox) {
          float sum = 0.0f;
          for (int64_t ky = 0; ky < c.kernel; ++ky) {
            for (int64_t kx = 0; kx < c.kernel; ++kx) {
              const int64_t iy = oy * c.stride - c.pad + ky * c.dilation;
              const int64_t ix = ox * c.stride - c.pad + kx * c.dilation;
              const bool inside = iy >= 0 && iy < size && ix >= 0 && ix < size;
              for (int64_t ic = 0; ic < c.in; ++ic) {
                const float tap = inside ? x[((n * c.in + ic) * size + iy) * size + ix] : 0.0f;
                sum = std::fma(tap, c.w[((oc * c.in + ic) * c.kernel + ky) * c.kernel + kx], sum);
              }
            }
          }
          const size_t at = static_cast<size_t>(((n * c.out + oc) * out_size + oy) * out_size + ox);
          y[at] = sum + c.bias[oc];
          if (addend != nullptr) y[at] += (*addend)[at];
        }
      }
    }
  }
  return y;
}

// Rounded to `dtype`, then Relu (ReluOp: -0 and NaN pass).
std::vector<float> RoundedRelu(std::vector<float> values, DType dtype) {
  for (float& v : values) {
    v = RoundedTo(dtype, v);
    v = v < 0.0f ? 0.0f : v;
  }
  return values;
}

Conv2d RandomConv(std::mt19937_64& rng, DType dtype, int64_t out, int64_t in, int64_t kernel, int64_t stride,
                  int64_t pad, int64_t dilation, int64_t pad_end) {
  Conv2d c{{}, {}, out, in, kernel, stride, pad, dilation, pad_end};
  const float bound = 1.0f / std::sqrt(static_cast<float>(in * kernel * kernel));
  c.w = Rounded(Uniform(rng, static_cast<size_t>(out * in * kernel * kernel), -bound, bound), dtype);
  c.bias = Rounded(Uniform(rng, static_cast<size_t>(out), -0.5f, 0.5f), dtype);
  return c;
}

void AddValues(onnx::GraphProto& graph, const std::string& name, DType dtype, const Shape& shape,
               const std::vector<float>& values) {
  const Tensor tensor = FilledTensor(dtype, shape, std::vector<double>(values.begin(), values.end()));
  Expected<onnx::TensorProto> proto = TensorToProto(tensor, name);
  ASSERT_TRUE(proto.ok()) << proto.status().message();
  *graph.add_initializer() = *proto;
}

onnx::NodeProto* AddConv(onnx::GraphProto& graph, DType dtype, const Conv2d& c, const std::string& in,
                         const std::string& out) {
  AddValues(graph, "w_" + out, dtype, {c.out, c.in, c.kernel, c.kernel}, c.w);
  AddValues(graph, "b_" + out, dtype, {c.out}, c.bias);
  onnx::NodeProto* node = AddNode(graph, "Conv", {in, "w_" + out, "b_" + out}, {out}, out);
  SetIntsAttr(*node, "strides", {c.stride, c.stride});
  SetIntsAttr(*node, "pads", {c.pad, c.pad, c.pad_end, c.pad_end});
  SetIntsAttr(*node, "dilations", {c.dilation, c.dilation});
  return node;
}

// batch, input size, the middle convolution's stride and dilation.
using Geometry = std::tuple<int64_t, int64_t, int64_t, int64_t>;

struct Chain {
  onnx::ModelProto model;
  Tensor x;
  std::vector<float> expected;  // z, NCHW
  Shape z_shape;
};

// x -> A (3 x 3) -> Relu -> h;  h -> C (1 x 1, stride s) -> c;  h -> B (3 x 3, stride s,
// dilation d) -> Add(., c) -> Relu -> y;  y -> D (2 x 2, padded before only) -> z. In a channels-last plan h,
// c and y are stored channels-last (each is read by Convs only), so the kernel gathers
// channels-last X, adds a channels-last residual and writes channels-last Y.
Chain MakeChain(DType dtype, const Geometry& geometry, std::mt19937_64& rng) {
  const auto [batch, size, stride, dilation] = geometry;
  const Conv2d a = RandomConv(rng, dtype, kWide, kInChannels, 3, 1, 1, 1, 1);
  const Conv2d c = RandomConv(rng, dtype, kWide, kWide, 1, stride, 0, 1, 0);
  const Conv2d b = RandomConv(rng, dtype, kWide, kWide, 3, stride, dilation, dilation, dilation);
  const Conv2d d = RandomConv(rng, dtype, kOutChannels, kWide, 2, 1, 1, 1, 0);  // pads only before
  const int64_t mid = b.OutSize(size);
  Chain chain;
  const std::vector<float> xv = Rounded(Uniform(rng, static_cast<size_t>(batch * kInChannels * size * size), -1, 1), dtype);
  chain.x = FilledTensor(dtype, {batch, kInChannels, size, size}, std::vector<double>(xv.begin(), xv.end()));
  const std::vector<float> h = RoundedRelu(SequentialConv(xv, batch, size, a, nullptr), dtype);
  const std::vector<float> cv = Rounded(SequentialConv(h, batch, size, c, nullptr), dtype);
  const std::vector<float> y = RoundedRelu(SequentialConv(h, batch, size, b, &cv), dtype);
  chain.expected = Rounded(SequentialConv(y, batch, mid, d, nullptr), dtype);
  chain.z_shape = {batch, kOutChannels, mid, mid};

  onnx::GraphProto graph;
  graph.set_name("few_pixels_chain");
  *graph.add_input() = TensorValue("x", dtype, {batch, kInChannels, size, size});
  AddConv(graph, dtype, a, "x", "a");
  AddNode(graph, "Relu", {"a"}, {"h"}, "relu_h");
  AddConv(graph, dtype, c, "h", "c");  // before B, so the Add folds into B with c as its residual
  AddConv(graph, dtype, b, "h", "b");
  AddNode(graph, "Add", {"b", "c"}, {"sum"}, "add");
  AddNode(graph, "Relu", {"sum"}, {"y"}, "relu_y");
  AddConv(graph, dtype, d, "y", "z");
  *graph.add_output() = TensorValue("z", dtype, chain.z_shape);
  chain.model = testing::MakeModel(graph);
  return chain;
}

RunResult RunChain(const Chain& chain, ExecutorOptions options) {
  options.num_threads = 2;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(chain.model), options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  return executor.ok() ? RunOk(**executor, {{"x", chain.x}}) : RunResult();
}

std::string CaseName(const std::tuple<DType, Geometry>& param) {
  const auto [batch, size, stride, dilation] = std::get<1>(param);
  return std::string(DTypeName(std::get<0>(param))) + "_n" + std::to_string(batch) + "_size" + std::to_string(size) +
         "_stride" + std::to_string(stride) + "_dilation" + std::to_string(dilation);
}

class FewPixelsConvTest : public ::testing::TestWithParam<std::tuple<DType, Geometry>> {
 protected:
  void SetUp() override {
    if (!FewPixelsConvSupported()) GTEST_SKIP() << "this CPU lacks AVX-512: the few-pixels kernel does not run";
  }
};

TEST_P(FewPixelsConvTest, SumsInKOrderInEveryLayout) {
  const auto [dtype, geometry] = GetParam();
  std::mt19937_64 rng(61);
  const Chain chain = MakeChain(dtype, geometry, rng);
  for (const bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last plan" : "NCHW plan");
    ExecutorOptions options;
    options.channels_last = channels_last;
    const RunResult result = RunChain(chain, options);
    const Tensor& z = Output(result, "z");
    ASSERT_EQ(z.shape(), chain.z_shape);
    const std::vector<double> got = AsDouble(z);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], chain.expected[i]) << "z[" << i << "]";
    }
    EXPECT_EQ(testing::Calls(result, "Conv+Add+Relu"), 1);
  }
}

// oneDNN's path, which sums in its own order: within a rounding of the dtype per layer
// (a few float32 roundings for float32, which float16/bfloat16 results mostly absorb),
// amplified by at most the sum of |weights| of the layers after (about sqrt(K) here).
void ExpectCloseToSequential(const RunResult& result, const Chain& chain, DType dtype) {
  const std::vector<double> got = AsDouble(Output(result, "z"));
  ASSERT_EQ(got.size(), chain.expected.size());
  const double unit = dtype == DType::kFloat32   ? std::ldexp(1.0, -20)
                      : dtype == DType::kFloat16 ? std::ldexp(1.0, -8)
                                                 : std::ldexp(1.0, -5);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], chain.expected[i], unit * (1.0 + std::fabs(chain.expected[i]))) << "z[" << i << "]";
  }
}

TEST_P(FewPixelsConvTest, AgreesWithOneDnnPath) {
  const auto [dtype, geometry] = GetParam();
  std::mt19937_64 rng(62);
  const Chain chain = MakeChain(dtype, geometry, rng);
  const bool previous = SetFewPixelsConvEnabled(false);
  const RunResult onednn = RunChain(chain, ExecutorOptions());
  SetFewPixelsConvEnabled(previous);
  ExpectCloseToSequential(onednn, chain, dtype);
}

// Without the node state that keeps packed weights the path is not taken (packing on
// every run would cost more than it saves): oneDNN's path runs instead.
TEST_P(FewPixelsConvTest, WithoutPrepackingRunsOneDnnPath) {
  const auto [dtype, geometry] = GetParam();
  std::mt19937_64 rng(63);
  const Chain chain = MakeChain(dtype, geometry, rng);
  ExecutorOptions options;
  options.prepack_weights = false;
  ExpectCloseToSequential(RunChain(chain, options), chain, dtype);
}

INSTANTIATE_TEST_SUITE_P(
    DtypesAndGeometries, FewPixelsConvTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       // 16 pixels; 16 then 4 (stride 2); 9 (dilation 2); 8 then 2 (batch 2)
                       ::testing::Values(Geometry{1, 4, 1, 1}, Geometry{1, 4, 2, 1}, Geometry{1, 3, 1, 2},
                                         Geometry{2, 2, 2, 1})),
    [](const ::testing::TestParamInfo<std::tuple<DType, Geometry>>& info) { return CaseName(info.param); });

}  // namespace
}  // namespace onnx_amp
