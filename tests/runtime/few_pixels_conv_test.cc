// Convolutions with at most 16 output pixels (or small ones of more, in tiles of 16) and
// constant weights run on the few-pixels kernels (ops/conv/few_pixels_conv.h, AVX-512 and AVX2), which sum each output in float32
// in (ky, kx, in_channel) order, or on VDPBF16PS in pairs of that order, each pair's odd
// term first. Checked bit for bit against those sums computed here one fused
// multiply-add at a time, through a chain that reads and writes NCHW and channels-last
// values, with a fused residual and Relu, strides, dilations, 1 x 1 kernels, pads on one
// side only and an odd k, in float32, float16 and bfloat16; and against oneDNN's path,
// which sums in another order. The VDPBF16PS kernel's float32 sums are checked before
// rounding too, where the two orders differ.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ops/conv/few_pixels_conv.h"
#include "runtime/core/convert.h"
#include "tests/ops/dnn_test_util.h"
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

// Odd: the first layer's k (3 x 3 x 7) is odd, which the pairs pad with a zero term.
constexpr int64_t kInChannels = 7, kWide = 128, kOutChannels = 16;

// The order each output's products are added in.
enum class SumOrder {
  kSequential,     // k order
  kPairsOddFirst,  // VDPBF16PS: pairs of k order, the odd term of each first
};

// The terms' sum from +0, one fused multiply-add at a time, in `order`.
float SumInOrder(const std::vector<float>& taps, const std::vector<float>& weights, SumOrder order) {
  float sum = 0.0f;
  if (order == SumOrder::kSequential) {
    for (size_t i = 0; i < taps.size(); ++i) sum = std::fma(taps[i], weights[i], sum);
    return sum;
  }
  for (size_t i = 0; i < taps.size(); i += 2) {
    if (i + 1 < taps.size()) sum = std::fma(taps[i + 1], weights[i + 1], sum);
    sum = std::fma(taps[i], weights[i], sum);
  }
  return sum;
}

struct Conv2d {
  std::vector<float> w, bias;  // [out][in][k][k], [out]; values of the graph's dtype
  int64_t out = 0, in = 0, kernel = 1, stride = 1, pad = 0, dilation = 1;
  int64_t pad_end = 0;  // after each spatial dim (`pad` before)
  int64_t OutSize(int64_t size) const { return (size + pad + pad_end - dilation * (kernel - 1) - 1) / stride + 1; }
};

// ((sum + bias) + addend) per output, NCHW, the sum one fused multiply-add at a time in
// `order` over (ky, kx, in) from +0, taps in the padding included as zeros.
std::vector<float> SequentialConv(const std::vector<float>& x, int64_t batch, int64_t size, const Conv2d& c,
                                  const std::vector<float>* addend, SumOrder order) {
  const int64_t out_size = c.OutSize(size);
  std::vector<float> y(static_cast<size_t>(batch * c.out * out_size * out_size));
  std::vector<float> taps, weights;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < c.out; ++oc) {
      for (int64_t oy = 0; oy < out_size; ++oy) {
        for (int64_t ox = 0; ox < out_size; ++ox) {
          taps.clear();
          weights.clear();
          for (int64_t ky = 0; ky < c.kernel; ++ky) {
            for (int64_t kx = 0; kx < c.kernel; ++kx) {
              const int64_t iy = oy * c.stride - c.pad + ky * c.dilation;
              const int64_t ix = ox * c.stride - c.pad + kx * c.dilation;
              const bool inside = iy >= 0 && iy < size && ix >= 0 && ix < size;
              for (int64_t ic = 0; ic < c.in; ++ic) {
                taps.push_back(inside ? x[((n * c.in + ic) * size + iy) * size + ix] : 0.0f);
                weights.push_back(c.w[((oc * c.in + ic) * c.kernel + ky) * c.kernel + kx]);
              }
            }
          }
          const size_t at = static_cast<size_t>(((n * c.out + oc) * out_size + oy) * out_size + ox);
          y[at] = SumInOrder(taps, weights, order) + c.bias[oc];
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
Chain MakeChain(DType dtype, const Geometry& geometry, std::mt19937_64& rng, SumOrder order = SumOrder::kSequential,
                int64_t width = kWide) {
  const auto [batch, size, stride, dilation] = geometry;
  const Conv2d a = RandomConv(rng, dtype, width, kInChannels, 3, 1, 1, 1, 1);
  const Conv2d c = RandomConv(rng, dtype, width, width, 1, stride, 0, 1, 0);
  const Conv2d b = RandomConv(rng, dtype, width, width, 3, stride, dilation, dilation, dilation);
  const Conv2d d = RandomConv(rng, dtype, kOutChannels, width, 2, 1, 1, 1, 0);  // pads only before
  const int64_t mid = b.OutSize(size);
  Chain chain;
  const std::vector<float> xv = Rounded(Uniform(rng, static_cast<size_t>(batch * kInChannels * size * size), -1, 1), dtype);
  chain.x = FilledTensor(dtype, {batch, kInChannels, size, size}, std::vector<double>(xv.begin(), xv.end()));
  const std::vector<float> h = RoundedRelu(SequentialConv(xv, batch, size, a, nullptr, order), dtype);
  const std::vector<float> cv = Rounded(SequentialConv(h, batch, size, c, nullptr, order), dtype);
  const std::vector<float> y = RoundedRelu(SequentialConv(h, batch, size, b, &cv, order), dtype);
  chain.expected = Rounded(SequentialConv(y, batch, mid, d, nullptr, order), dtype);
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
    if (!FewPixelsConvSupported()) {
      GTEST_SKIP() << "this CPU lacks AVX2 with FMA and F16C: the few-pixels kernels do not run";
    }
  }
};

// Runs the chain in an NCHW plan and a channels-last one: z bit for bit as expected.
void ExpectChainBits(const Chain& chain) {
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

// On each kernel the CPU has (AVX2's sums pixels in tiles over runs of k, AVX-512's all
// at once): the same bits.
TEST_P(FewPixelsConvTest, SumsInKOrderInEveryLayout) {
  const auto [dtype, geometry] = GetParam();
  // bfloat16 on the widening kernel here; on VDPBF16PS in FewPixelsBf16PairsTest.
  const testing::ScopedBf16Kernels widened(Bf16Kernels::kFloat32);
  std::mt19937_64 rng(61);
  const Chain chain = MakeChain(dtype, geometry, rng);
  for (const FewRowsPath path : {FewRowsPath::kAvx512, FewRowsPath::kAvx2}) {
    if (!FewRowsPathSupported(path)) continue;
    SCOPED_TRACE(std::string(FewRowsPathName(path)) + " kernel");
    const testing::ScopedFewRowsPath kernel(path);
    ExpectChainBits(chain);
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

// Small convolutions of more pixels than one tile (kSmallConvMultiplyAdds): the chain
// 32 channels wide, whose layers all stay under that many multiply-adds and sum at least
// kSmallConvMinDepth products, on 7 x 7 and 6 x 6 images, so tiles of 16 pixels end
// short and cross images. The same bits as in one tile, on every kernel the CPU has, and
// in pairs on VDPBF16PS (FewPixelsBf16PairsTilesTest).
constexpr int64_t kTiledWidth = 32;
// 49 pixels, then 16 (stride 2); 72 pixels in every layer (batch 2, dilation 2).
const Geometry kTiledGeometries[] = {Geometry{1, 7, 2, 1}, Geometry{2, 6, 1, 2}};

class FewPixelsTilesTest : public FewPixelsConvTest {};

// Which sizes take the path: one tile's worth of pixels whatever the work; more pixels
// while the convolution is small and its sums not short. Every layer of the tiled chains
// is such a one (oneDNN sums these layers in the same order, so only this shows the path).
TEST(FewPixelsSize, TakesSmallConvolutionsOfManyPixels) {
  EXPECT_TRUE(FewPixelsSizeFits(16, 4608, 512));    // ResNet-18's last stage at batch 1
  EXPECT_FALSE(FewPixelsSizeFits(17, 4608, 512));   // 40M multiply-adds
  EXPECT_TRUE(FewPixelsSizeFits(196, 144, 32));     // the bundled CNN's second layer at batch 1
  EXPECT_FALSE(FewPixelsSizeFits(6272, 144, 32));   // ... at batch 32
  EXPECT_FALSE(FewPixelsSizeFits(784, 9, 16));      // its first layer: sums of 9 products
  EXPECT_TRUE(FewPixelsSizeFits(3, 9, 16));         // short sums but one tile
  EXPECT_FALSE(FewPixelsSizeFits(0, 9, 16));
  for (const Geometry& geometry : kTiledGeometries) {
    const auto [batch, size, stride, dilation] = geometry;
    const int64_t mid = (size - 1) / stride + 1;  // C and B: same-padded, strided
    const int64_t inner = kTiledWidth * 9;
    EXPECT_TRUE(FewPixelsSizeFits(batch * size * size, kInChannels * 9, kTiledWidth));  // A
    EXPECT_TRUE(FewPixelsSizeFits(batch * mid * mid, kTiledWidth, kTiledWidth));        // C
    EXPECT_TRUE(FewPixelsSizeFits(batch * mid * mid, inner, kTiledWidth));              // B
    EXPECT_TRUE(FewPixelsSizeFits(batch * mid * mid, kTiledWidth * 4, kOutChannels));   // D
    EXPECT_GT(batch * size * size, kFewPixelsMax);
  }
}

TEST_P(FewPixelsTilesTest, SumsInKOrderAcrossTiles) {
  const auto [dtype, geometry] = GetParam();
  const testing::ScopedBf16Kernels widened(Bf16Kernels::kFloat32);
  std::mt19937_64 rng(65);
  const Chain chain = MakeChain(dtype, geometry, rng, SumOrder::kSequential, kTiledWidth);
  for (const FewRowsPath path : {FewRowsPath::kAvx512, FewRowsPath::kAvx2}) {
    if (!FewRowsPathSupported(path)) continue;
    SCOPED_TRACE(std::string(FewRowsPathName(path)) + " kernel");
    const testing::ScopedFewRowsPath kernel(path);
    ExpectChainBits(chain);
  }
}

INSTANTIATE_TEST_SUITE_P(
    DtypesAndGeometries, FewPixelsTilesTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(kTiledGeometries[0], kTiledGeometries[1])),
    [](const ::testing::TestParamInfo<std::tuple<DType, Geometry>>& info) { return CaseName(info.param); });

// The VDPBF16PS kernel runs on the AVX-512 path only.
#define ONNX_AMP_SKIP_WITHOUT_PAIRS_KERNEL()                                                    \
  if (!FewRowsPathSupported(FewRowsPath::kAvx512)) GTEST_SKIP() << "this CPU lacks AVX-512"; \
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16()

class FewPixelsBf16PairsTest : public ::testing::TestWithParam<Geometry> {
 protected:
  void SetUp() override { ONNX_AMP_SKIP_WITHOUT_PAIRS_KERNEL(); }
};

TEST_P(FewPixelsBf16PairsTest, SumsInPairsOddTermFirstInEveryLayout) {
  const testing::ScopedFewRowsPath avx512(FewRowsPath::kAvx512);
  const testing::ScopedBf16Kernels native(Bf16Kernels::kNative);
  std::mt19937_64 rng(64);
  ExpectChainBits(MakeChain(DType::kBFloat16, GetParam(), rng, SumOrder::kPairsOddFirst));
}

INSTANTIATE_TEST_SUITE_P(Geometries, FewPixelsBf16PairsTest,
                         ::testing::Values(Geometry{1, 4, 1, 1}, Geometry{1, 4, 2, 1}, Geometry{1, 3, 1, 2},
                                           Geometry{2, 2, 2, 1}),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           return CaseName({DType::kBFloat16, info.param});
                         });

class FewPixelsBf16PairsTilesTest : public FewPixelsBf16PairsTest {};

TEST_P(FewPixelsBf16PairsTilesTest, SumsInPairsAcrossTiles) {
  const testing::ScopedFewRowsPath avx512(FewRowsPath::kAvx512);
  const testing::ScopedBf16Kernels native(Bf16Kernels::kNative);
  std::mt19937_64 rng(66);
  ExpectChainBits(MakeChain(DType::kBFloat16, GetParam(), rng, SumOrder::kPairsOddFirst, kTiledWidth));
}

INSTANTIATE_TEST_SUITE_P(Geometries, FewPixelsBf16PairsTilesTest,
                         ::testing::Values(kTiledGeometries[0], kTiledGeometries[1]),
                         [](const ::testing::TestParamInfo<Geometry>& info) {
                           return CaseName({DType::kBFloat16, info.param});
                         });

// Which kernel a bfloat16 convolution takes shows in its result when the order of the
// sums decides it: per output the products are 0, 2^30, -2^30 and 1 (k order). In k order
// the 1 comes after the cancellation and survives; in pairs, odd term first, it is added
// to 2^30 and lost: the result is 0. Pairs on the AVX-512 path under the native setting
// only; the AVX2 kernel always sums in k order.
TEST(FewPixelsBf16Pairs, TakenUnderTheNativeSettingOnly) {
  ONNX_AMP_SKIP_WITHOUT_PAIRS_KERNEL();
  constexpr int64_t kChannels = 4, kSize = 4;
  const float big = std::ldexp(1.0f, 15);
  std::vector<float> x, w;
  for (const float value : {1.0f, big, big, 1.0f}) x.insert(x.end(), kSize * kSize, value);
  for (int64_t oc = 0; oc < kOutChannels; ++oc) w.insert(w.end(), {0.0f, big, -big, 1.0f});
  onnx::GraphProto graph;
  graph.set_name("pair_order");
  *graph.add_input() = TensorValue("x", DType::kBFloat16, {1, kChannels, kSize, kSize});
  AddValues(graph, "w", DType::kBFloat16, {kOutChannels, kChannels, 1, 1}, w);
  AddNode(graph, "Conv", {"x", "w"}, {"y"}, "conv");
  *graph.add_output() = TensorValue("y", DType::kBFloat16, {1, kOutChannels, kSize, kSize});
  const onnx::ModelProto model = testing::MakeModel(graph);
  const Tensor input = FilledTensor(DType::kBFloat16, {1, kChannels, kSize, kSize}, std::vector<double>(x.begin(), x.end()));
  for (const FewRowsPath path : {FewRowsPath::kAvx512, FewRowsPath::kAvx2}) {
    if (!FewRowsPathSupported(path)) continue;
    const testing::ScopedFewRowsPath kernel(path);
    for (const Bf16Kernels kernels : {Bf16Kernels::kNative, Bf16Kernels::kFloat32}) {
      SCOPED_TRACE(std::string(FewRowsPathName(path)) + ", " + std::string(Bf16KernelsName(kernels)));
      const testing::ScopedBf16Kernels choice(kernels);
      const double expected = path == FewRowsPath::kAvx512 && kernels == Bf16Kernels::kNative ? 0.0 : 1.0;
      Expected<std::unique_ptr<Executor>> executor = Executor::Create(onnx::ModelProto(model), ExecutorOptions());
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      const std::vector<double> y = AsDouble(Output(RunOk(**executor, {{"x", input}}), "y"));
      ASSERT_EQ(y.size(), static_cast<size_t>(kOutChannels * kSize * kSize));
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], expected) << "y[" << i << "]";
    }
  }
}

uint16_t BFloat16Bits(float value) {
  uint16_t bits = 0;
  ConvertFloatToBFloat16(&value, &bits, 1);
  return bits;
}

// The VDPBF16PS kernel's float32 sums before any rounding, for a range of blocks that
// starts past the first: bit for bit the pair order, which differs from k order in some
// of them (so the check tells the two apart), and the blocks outside the range untouched.
TEST(FewPixelsBf16PairsKernel, SumsEachPairOddTermFirst) {
  ONNX_AMP_SKIP_WITHOUT_PAIRS_KERNEL();
  constexpr int64_t kDepth = 90, kBlocks = 3, kChannels = kBlocks * 16;
  std::mt19937_64 rng(65);
  std::vector<float> weights = Rounded(Uniform(rng, kChannels * kDepth, -1, 1), DType::kBFloat16);  // [oc][k]
  std::vector<uint16_t> packed(weights.size());
  for (int64_t oc = 0; oc < kChannels; ++oc) {
    for (int64_t kk = 0; kk < kDepth; ++kk) {
      packed[((oc / 16) * kDepth + kk / 2 * 2) * 16 + oc % 16 * 2 + kk % 2] = BFloat16Bits(weights[oc * kDepth + kk]);
    }
  }
  int64_t orders_differ = 0;
  for (const int pixels : {1, 5, 16}) {
    SCOPED_TRACE("pixels " + std::to_string(pixels));
    const std::vector<float> rows = Rounded(Uniform(rng, static_cast<size_t>(pixels * kDepth), -1, 1), DType::kBFloat16);
    std::vector<uint16_t> row_bits(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) row_bits[i] = BFloat16Bits(rows[i]);
    const float untouched = -7.0f;
    std::vector<float> sums(static_cast<size_t>(pixels * kChannels), untouched);
    FewPixelsAvx512Bf16(FewPixelsPairArgs{row_bits.data(), pixels, kDepth, packed.data(), 1, kBlocks, sums.data(),
                                          kChannels});
    for (int64_t i = 0; i < pixels; ++i) {
      const std::vector<float> taps(rows.begin() + i * kDepth, rows.begin() + (i + 1) * kDepth);
      for (int64_t oc = 0; oc < kChannels; ++oc) {
        const float got = sums[static_cast<size_t>(i * kChannels + oc)];
        if (oc < 16) {
          ASSERT_EQ(got, untouched) << "pixel " << i << ", channel " << oc;
          continue;
        }
        const std::vector<float> column(weights.begin() + oc * kDepth, weights.begin() + (oc + 1) * kDepth);
        ASSERT_EQ(got, SumInOrder(taps, column, SumOrder::kPairsOddFirst)) << "pixel " << i << ", channel " << oc;
        orders_differ += got != SumInOrder(taps, column, SumOrder::kSequential);
      }
    }
  }
  EXPECT_GT(orders_differ, 0);
}

}  // namespace
}  // namespace onnx_amp
