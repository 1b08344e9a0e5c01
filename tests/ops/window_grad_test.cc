// The fused gradients ConvGrad, MaxPoolGrad and BatchNormalizationGrad (domain
// ai.onnx_amp) against double-precision loops written here from their definitions, on
// shapes large enough for oneDNN's channel-blocked kernels (16 and 32 channels), its
// Winograd kernels (64 channels) and the row-vectorised pool windows, with pads,
// strides, groups and dilations.
//
// Each gradient element is a sum of n products (n counted by the reference), accumulated
// in float32 and rounded once to the dtype of dY: |out - ref| <= u_low |ref| +
// (1 + u_low)(n + 2) u32 1.01 sum |products| + floor (the MatMul bound of linalg_test.cc).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "ops/conv/few_channels_conv.h"
#include "runtime/core/onnx_domain.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

// A gradient computed in double with, per element, the number of products summed and
// the sum of their magnitudes.
struct GradientReference {
  std::vector<double> value, abs_sum, terms;
  explicit GradientReference(size_t size) : value(size), abs_sum(size), terms(size) {}
  void Add(size_t i, double product) {
    value[i] += product;
    abs_sum[i] += std::abs(product);
    terms[i] += 1;
  }
};

void ExpectGradient(const Tensor& out, const GradientReference& ref, const std::string& label) {
  const DType dtype = out.dtype();
  const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
  std::vector<double> bound(ref.value.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    bound[i] = u_low * std::abs(ref.value[i]) + (1 + u_low) * (ref.terms[i] + 2) * kUnitF32 * 1.01 * ref.abs_sum[i] +
               AbsoluteFloor(dtype);
  }
  ExpectWithin(ToDoubles(out), ref.value, bound, label);
}

struct ConvGradCase {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // per spatial dim; pads begin then end
};

// Spatial input position of output `o`, tap `k` (row-major indices), or -1 outside.
int64_t TapOffset(const ConvGradCase& c, int64_t o, int64_t k, const std::vector<int64_t>& out) {
  const size_t r = c.x.size() - 2;
  int64_t offset = 0, o_rest = o, k_rest = k, o_div = NumElements(out), k_div = 1;
  for (size_t i = 0; i < r; ++i) k_div *= c.w[2 + i];
  for (size_t i = 0; i < r; ++i) {
    o_div /= out[i];
    k_div /= c.w[2 + i];
    const int64_t oi = o_rest / o_div, ki = k_rest / k_div;
    o_rest %= o_div;
    k_rest %= k_div;
    const int64_t pos = oi * c.strides[i] - c.pads[i] + ki * c.dilations[i];
    if (pos < 0 || pos >= c.x[2 + i]) return -1;
    offset = offset * c.x[2 + i] + pos;
  }
  return offset;
}

std::vector<int64_t> ConvOutDims(const ConvGradCase& c) {
  const size_t r = c.x.size() - 2;
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t span = (c.w[2 + i] - 1) * c.dilations[i] + 1;
    out[i] = (c.x[2 + i] + c.pads[i] + c.pads[i + r] - span) / c.strides[i] + 1;
  }
  return out;
}

// How CheckConvGrad runs the node: dY and X stored channels-last (bits 0 and 1 of
// `channels_last_inputs`), dX wanted or not (a first layer's is not), on 1 or 2 threads.
struct ConvGradRun {
  uint32_t channels_last_inputs = 0;
  bool want_dx = true;
  int threads = 2;
};

// Checks the gradients against the double reference; `outputs`, when given, receives them.
void CheckConvGrad(const ConvGradCase& c, DType dtype, uint32_t seed, const ConvGradRun& run = {},
                   std::vector<Tensor>* outputs = nullptr) {
  const std::vector<int64_t> out = ConvOutDims(c);
  Shape y_shape{c.x[0], c.w[0]};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  const RoundedTensor dy = RandomTensor(dtype, y_shape, seed);
  const RoundedTensor x = RandomTensor(dtype, c.x, seed + 1);
  const RoundedTensor w = RandomTensor(dtype, c.w, seed + 2);
  const int64_t n = c.x[0], channels = c.x[1], maps = c.w[0], group_channels = c.w[1];
  const int64_t maps_per_group = maps / c.group, out_size = NumElements(out);
  const int64_t in_size = NumElements(Shape(c.x.begin() + 2, c.x.end()));
  const int64_t k_size = NumElements(Shape(c.w.begin() + 2, c.w.end()));
  GradientReference dx(x.values.size()), dw(w.values.size()), db(static_cast<size_t>(maps));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t m = 0; m < maps; ++m) {
      for (int64_t o = 0; o < out_size; ++o) {
        const double g = dy.values[(b * maps + m) * out_size + o];
        db.Add(m, g);
        for (int64_t cl = 0; cl < group_channels; ++cl) {
          const int64_t channel = (m / maps_per_group) * group_channels + cl;
          for (int64_t k = 0; k < k_size; ++k) {
            const int64_t offset = TapOffset(c, o, k, out);
            if (offset < 0) continue;
            const size_t xi = (b * channels + channel) * in_size + offset, wi = (m * group_channels + cl) * k_size + k;
            dx.Add(xi, g * w.values[wi]);
            dw.Add(wi, g * x.values[xi]);
          }
        }
      }
    }
  }
  const std::string label = std::string(DTypeName(dtype)) + " ConvGrad X" + ShapeToString(c.x) + " W" +
                            ShapeToString(c.w) + " group " + std::to_string(c.group);
  SingleNode node("ConvGrad", 1, std::string(kOnnxAmpDomain));
  node.Attr("group", c.group).Attr("strides", c.strides).Attr("dilations", c.dilations).Attr("pads", c.pads);
  node.Input(run.channels_last_inputs & 1u ? ToChannelsLast(dy.tensor) : dy.tensor)
      .Input(run.channels_last_inputs & 2u ? ToChannelsLast(x.tensor) : x.tensor)
      .Input(w.tensor)
      .NumOutputs(3);
  if (!run.want_dx) node.node().set_output(0, "");
  NodeRunOptions options;
  options.channels_last_inputs = run.channels_last_inputs;
  options.threads = run.threads;
  auto result = node.Options(options).Run();
  ASSERT_TRUE(result.ok()) << label << ": " << result.status().message();
  ASSERT_EQ(result->size(), 3u);
  EXPECT_EQ((*result)[1].shape(), c.w) << label;
  if (run.want_dx) {
    EXPECT_EQ((*result)[0].shape(), c.x) << label;
    ExpectGradient((*result)[0], dx, label + " dX");
  }
  ExpectGradient((*result)[1], dw, label + " dW");
  ExpectGradient((*result)[2], db, label + " dB");
  if (outputs != nullptr) *outputs = std::move(*result);
}

const std::vector<ConvGradCase> kConvGradCases = {
    {{4, 16, 10, 10}, {32, 16, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {{3, 1, 12, 12}, {16, 1, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {{2, 16, 9, 9}, {32, 8, 3, 3}, 2, {2, 2}, {1, 1}, {1, 0, 1, 2}},
    {{2, 16, 11}, {16, 16, 3}, 1, {1}, {2}, {2, 1}},
};

TEST(ConvGradTest, Float32MatchesDoubleReference) {
  uint32_t seed = 100;
  for (const ConvGradCase& c : kConvGradCases) CheckConvGrad(c, DType::kFloat32, seed += 3);
}

TEST(ConvGradTest, LowPrecisionMatchesDoubleReference) {
  uint32_t seed = 200;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const ConvGradCase& c : kConvGradCases) CheckConvGrad(c, dtype, seed += 3);
  }
}

TEST(ConvGradTest, BFloat16NativeKernelsMatchDoubleReference) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  uint32_t seed = 300;
  for (const ConvGradCase& c : kConvGradCases) CheckConvGrad(c, DType::kBFloat16, seed += 3);
}

TEST(ConvGradTest, BFloat16Float32KernelsMatchDoubleReference) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  uint32_t seed = 400;
  for (const ConvGradCase& c : kConvGradCases) CheckConvGrad(c, DType::kBFloat16, seed += 3);
}

// A float16/bfloat16 first layer's weights gradient (dX not wanted, 1 to 3 image
// channels, at most 27 weights per map, 12 on AVX2, dY channels-last with 16 or 32 maps),
// and a float32 one on AVX2, runs on its own loop (few_channels_conv.h), which reads dY as stored: within the same
// bound, X in either order, with pads, strides, dilations, 4 channels and a 5 x 5 window, image
// counts that leave a part chunk, and the same bits on one thread as on two. Each
// gradient is kept in `gradients` (case by case, dW then dB) for the comparison of paths.
const ConvGradCase kFirstLayerGradCases[] = {
    {{5, 1, 12, 12}, {16, 1, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {{3, 3, 11, 9}, {32, 3, 3, 3}, 1, {2, 2}, {1, 1}, {1, 0, 1, 2}},
    {{6, 2, 10, 10}, {16, 2, 2, 3}, 1, {1, 1}, {2, 2}, {2, 2, 2, 2}},
    {{2, 1, 9, 9}, {16, 1, 5, 5}, 1, {1, 1}, {1, 1}, {2, 2, 2, 2}},
    {{5, 4, 9, 10}, {32, 4, 1, 3}, 1, {1, 2}, {1, 1}, {0, 1, 0, 1}},
};

int64_t Taps(const ConvGradCase& c) { return c.w[1] * c.w[2] * c.w[3]; }

const std::vector<DType> kAllFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

void CheckFirstLayerWeightGradient(FewChannelsPath path, const std::vector<DType>& dtypes,
                                   std::vector<std::vector<double>>* gradients) {
  const ScopedFewChannelsPath scoped(path);
  const bool avx2 = path == FewChannelsPath::kAvx2;
  const int64_t max_taps = avx2 ? kMaxFewChannelsTapsAvx2 : kMaxFewChannelsTaps;
  uint32_t seed = 700;
  for (DType dtype : dtypes) {
    for (const ConvGradCase& c : kFirstLayerGradCases) {
      WindowGeometry g;
      g.in = {c.x[2], c.x[3]};
      g.kernel = {c.w[2], c.w[3]};
      EXPECT_EQ(TakesFewChannelsConv(dtype, c.x, c.w, 1, true, g),
                Taps(c) <= max_taps && (dtype != DType::kFloat32 || avx2));
      for (const uint32_t x_last : {0u, 2u}) {
        std::vector<Tensor> runs[2];
        for (const int threads : {1, 2}) CheckConvGrad(c, dtype, seed, {1u | x_last, false, threads}, &runs[threads - 1]);
        ASSERT_EQ(runs[0].size(), 3u);
        ASSERT_EQ(runs[1].size(), 3u);
        for (size_t i = 1; i < 3; ++i) {
          EXPECT_EQ(std::memcmp(runs[0][i].raw_data(), runs[1][i].raw_data(), runs[0][i].bytes()), 0)
              << DTypeName(dtype) << " X" << ShapeToString(c.x) << " output " << i << ": 1 and 2 threads differ";
          gradients->push_back(ToDoubles(runs[1][i]));
        }
      }
      seed += 3;
    }
  }
}

TEST(ConvGradTest, FirstLayerWeightGradientOnAvx512MatchesDoubleReference) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  std::vector<std::vector<double>> gradients;
  CheckFirstLayerWeightGradient(FewChannelsPath::kAvx512, kAllFloatTypes, &gradients);
}

TEST(ConvGradTest, FirstLayerWeightGradientOnAvx2MatchesDoubleReference) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx2)) GTEST_SKIP() << "this CPU has no AVX2 with FMA and F16C";
  std::vector<std::vector<double>> gradients;
  CheckFirstLayerWeightGradient(FewChannelsPath::kAvx2, kAllFloatTypes, &gradients);
}

// Both paths sum each weight's gradient in the same order, 16 maps to a register or 8:
// the same bits wherever both take the case (more than 12 weights a map run on oneDNN on
// AVX2, their numbers then differ).
TEST(ConvGradTest, FirstLayerWeightGradientGivesTheSameBitsOnAvx2AndAvx512) {
  if (!FewChannelsPathSupported(FewChannelsPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 (F, BW, VL)";
  std::vector<std::vector<double>> gradients[2];
  // float32 takes the loop on AVX2 only.
  const std::vector<DType> low = {DType::kFloat16, DType::kBFloat16};
  CheckFirstLayerWeightGradient(FewChannelsPath::kAvx2, low, &gradients[0]);
  CheckFirstLayerWeightGradient(FewChannelsPath::kAvx512, low, &gradients[1]);
  ASSERT_EQ(gradients[0].size(), gradients[1].size());
  // Per dtype and case: X in two orders, dW and dB of each.
  constexpr size_t kPerCase = 4;
  const size_t cases = std::size(kFirstLayerGradCases);
  size_t compared = 0;
  for (size_t i = 0; i < gradients[0].size(); ++i) {
    if (Taps(kFirstLayerGradCases[i / kPerCase % cases]) > kMaxFewChannelsTapsAvx2) continue;
    EXPECT_EQ(gradients[0][i], gradients[1][i]) << "gradient " << i;
    ++compared;
  }
  EXPECT_EQ(compared, 2 * 3 * kPerCase);
}

// 3x3 stride-1 gradients of 64 channels take oneDNN's Winograd kernels where it has them
// (ops/conv/winograd_choice.h): within the same bound, and not the direct kernels' bits,
// so those kernels did run.
TEST(ConvGradTest, WinogradKernelsMatchDoubleReference) {
  const ConvGradCase c = {{4, 64, 8, 8}, {64, 64, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}};
  uint32_t seed = 600;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) CheckConvGrad(c, dtype, seed += 3);
  if (!WinogradKernelsAvailable()) GTEST_SKIP() << "oneDNN has no Winograd kernels here (they need AVX-512)";
  const RoundedTensor dy = RandomTensor(DType::kFloat32, {4, 64, 8, 8}, 610);
  const RoundedTensor x = RandomTensor(DType::kFloat32, c.x, 611);
  const RoundedTensor w = RandomTensor(DType::kFloat32, c.w, 612);
  std::vector<std::vector<double>> gradients[2];
  for (const bool winograd : {false, true}) {
    const ScopedConvWinograd choice(winograd);
    SingleNode node("ConvGrad", 1, std::string(kOnnxAmpDomain));
    node.Attr("strides", c.strides).Attr("dilations", c.dilations).Attr("pads", c.pads);
    auto result = node.Input(dy.tensor).Input(x.tensor).Input(w.tensor).NumOutputs(3).Run();
    ASSERT_TRUE(result.ok()) << result.status().message();
    for (const Tensor& gradient : *result) gradients[winograd].push_back(ToDoubles(gradient));
  }
  EXPECT_NE(gradients[0][0], gradients[1][0]) << "dX: the Winograd kernels did not run";
  EXPECT_NE(gradients[0][1], gradients[1][1]) << "dW: the Winograd kernels did not run";
}

// With dX and dW both wanted, dY is moved into the backward primitives' layout once and
// read by both; dX alone moves it itself. dX has the same bits either way.
TEST(ConvGradTest, DyMovedOnceForBothGivesDxTheSameBits) {
  uint32_t seed = 500;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const ConvGradCase& c : kConvGradCases) {
      const std::vector<int64_t> out = ConvOutDims(c);
      Shape y_shape{c.x[0], c.w[0]};
      y_shape.insert(y_shape.end(), out.begin(), out.end());
      const RoundedTensor dy = RandomTensor(dtype, y_shape, seed += 3);
      const RoundedTensor x = RandomTensor(dtype, c.x, seed + 1);
      const RoundedTensor w = RandomTensor(dtype, c.w, seed + 2);
      const std::string label = std::string(DTypeName(dtype)) + " ConvGrad X" + ShapeToString(c.x);
      std::vector<double> dx[2];
      for (int outputs : {1, 3}) {
        SingleNode node("ConvGrad", 1, std::string(kOnnxAmpDomain));
        node.Attr("group", c.group).Attr("strides", c.strides).Attr("dilations", c.dilations).Attr("pads", c.pads);
        auto result = node.Input(dy.tensor).Input(x.tensor).Input(w.tensor).NumOutputs(outputs).Run();
        ASSERT_TRUE(result.ok()) << label << ": " << result.status().message();
        dx[outputs / 3] = ToDoubles((*result)[0]);
      }
      EXPECT_EQ(dx[0], dx[1]) << label;
    }
  }
}

// MaxPoolGrad routes each dY to the first maximum of its window (NaN counts as the
// maximum); values on a coarse grid make ties common. Each dX element sums the dY of
// the windows that picked it.
void CheckMaxPoolGrad(DType dtype, const Shape& x_shape, int64_t kernel, int64_t stride, int64_t pad, bool with_nan) {
  const int64_t h = x_shape[2], w = x_shape[3];
  const int64_t oh = (h + 2 * pad - kernel) / stride + 1, ow = (w + 2 * pad - kernel) / stride + 1;
  std::vector<double> xv = RandomValues(static_cast<size_t>(NumElements(x_shape)), 300 + kernel);
  for (double& v : xv) v = std::round(v * 2.0) / 2.0;  // 5 levels: many ties
  for (size_t i : {size_t{7}, size_t{50}}) {
    if (with_nan && i < xv.size()) xv[i] = std::numeric_limits<double>::quiet_NaN();
  }
  const RoundedTensor x = Rounded(dtype, x_shape, xv);
  const RoundedTensor dy = RandomTensor(dtype, {x_shape[0], x_shape[1], oh, ow}, 400 + kernel);
  GradientReference dx(x.values.size());
  for (int64_t plane = 0; plane < x_shape[0] * x_shape[1]; ++plane) {
    for (int64_t o = 0; o < oh * ow; ++o) {
      int64_t best = -1;
      for (int64_t ki = 0; ki < kernel; ++ki) {
        for (int64_t kj = 0; kj < kernel; ++kj) {
          const int64_t r = (o / ow) * stride - pad + ki, col = (o % ow) * stride - pad + kj;
          if (r < 0 || r >= h || col < 0 || col >= w) continue;
          const int64_t i = plane * h * w + r * w + col;
          const double v = x.values[i];
          if (best < 0 || (std::isnan(v) && !std::isnan(x.values[best])) || v > x.values[best]) best = i;
        }
      }
      dx.Add(best, dy.values[plane * oh * ow + o]);
    }
  }
  const std::string label = std::string(DTypeName(dtype)) + " MaxPoolGrad X" + ShapeToString(x_shape) + " kernel " +
                            std::to_string(kernel) + " stride " + std::to_string(stride) + " pad " +
                            std::to_string(pad) + (with_nan ? " NaN" : "");
  auto result = SingleNode("MaxPoolGrad", 1, std::string(kOnnxAmpDomain))
                    .Attr("kernel_shape", std::vector<int64_t>{kernel, kernel})
                    .Attr("strides", std::vector<int64_t>{stride, stride})
                    .Attr("pads", std::vector<int64_t>{pad, pad, pad, pad})
                    .Input(dy.tensor)
                    .Input(x.tensor)
                    .Run();
  ASSERT_TRUE(result.ok()) << label << ": " << result.status().message();
  ExpectGradient((*result)[0], dx, label);
}

TEST(MaxPoolGradTest, MatchesFirstMaximumReference) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    CheckMaxPoolGrad(dtype, {2, 3, 28, 28}, 2, 2, 0, false);
    CheckMaxPoolGrad(dtype, {2, 3, 28, 28}, 2, 2, 0, true);
    // 2x2 pools that tile their planes, with rows ending inside, at and past 32 columns.
    for (const Shape& shape : {Shape{1, 2, 4, 2}, Shape{1, 3, 6, 32}, Shape{2, 2, 4, 34}, Shape{1, 2, 2, 98}}) {
      CheckMaxPoolGrad(dtype, shape, 2, 2, 0, true);
    }
    CheckMaxPoolGrad(dtype, {1, 2, 17, 19}, 3, 2, 1, true);
    CheckMaxPoolGrad(dtype, {1, 2, 15, 16}, 3, 1, 1, false);
  }
}

// The 2x2 tiling pools again on the portable loops (the AVX-512 kernels above, where the
// CPU has them).
TEST(MaxPoolGradTest, PortableTilingKernelMatchesFirstMaximumReference) {
  const ScopedPool2x2Avx512 portable(false);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (const Shape& shape : {Shape{2, 3, 28, 28}, Shape{1, 2, 4, 2}, Shape{2, 2, 4, 34}, Shape{1, 2, 2, 98}}) {
      CheckMaxPoolGrad(dtype, shape, 2, 2, 0, true);
    }
  }
}

// BatchNormalizationGrad in training mode, from the batch statistics of X:
// dX = scale inv_std (dY - mean(dY) - xhat mean(dY xhat)), dScale = sum dY xhat,
// dBias = sum dY. The float32 statistics and the three sums add a few roundings of
// sum |dY| |xhat| size per element; the bound is that (with m = N * spatial terms).
TEST(BatchNormGradTest, TrainingModeMatchesDoubleReference) {
  const Shape shape{8, 16, 9, 9};
  const int64_t n = shape[0], channels = shape[1], spatial = shape[2] * shape[3], m = n * spatial;
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const RoundedTensor dy = RandomTensor(dtype, shape, 500);
    const RoundedTensor x = RandomTensor(dtype, shape, 501, -2.0, 3.0);
    const RoundedTensor scale = RandomTensor(dtype, {channels}, 502, 0.5, 1.5);
    const RoundedTensor stat = RandomTensor(dtype, {channels}, 503, 0.5, 1.0);  // unused in training mode
    const float epsilon = 1e-3f;
    std::vector<double> dx(x.values.size()), dscale(channels), dbias(channels), dx_scale(x.values.size());
    std::vector<double> dscale_abs(channels), dbias_abs(channels);
    for (int64_t c = 0; c < channels; ++c) {
      auto at = [&](int64_t b, int64_t p) { return static_cast<size_t>((b * channels + c) * spatial + p); };
      double mean = 0, var = 0;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) mean += x.values[at(b, p)];
      }
      mean /= m;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) var += std::pow(x.values[at(b, p)] - mean, 2);
      }
      var /= m;
      const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(epsilon));
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) {
          const double g = dy.values[at(b, p)], xhat = (x.values[at(b, p)] - mean) * inv_std;
          dbias[c] += g;
          dscale[c] += g * xhat;
          dbias_abs[c] += std::abs(g);
          dscale_abs[c] += std::abs(g * xhat);
        }
      }
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) {
          const double g = dy.values[at(b, p)], xhat = (x.values[at(b, p)] - mean) * inv_std;
          dx[at(b, p)] = scale.values[c] * inv_std * (g - dbias[c] / m - xhat * dscale[c] / m);
          dx_scale[at(b, p)] =
              scale.values[c] * inv_std * (std::abs(g) + dbias_abs[c] / m + std::abs(xhat) * dscale_abs[c] / m);
        }
      }
    }
    auto result = SingleNode("BatchNormalizationGrad", 1, std::string(kOnnxAmpDomain))
                      .Attr("epsilon", epsilon)
                      .Attr("training_mode", int64_t{1})
                      .Input(dy.tensor)
                      .Input(x.tensor)
                      .Input(scale.tensor)
                      .Input(stat.tensor)
                      .Input(stat.tensor)
                      .NumOutputs(3)
                      .Run();
    const std::string label = std::string(DTypeName(dtype)) + " BatchNormalizationGrad";
    ASSERT_TRUE(result.ok()) << label << ": " << result.status().message();
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    // The statistics' own rounding (mean and variance over m terms) reaches every term.
    const double relative = 1.01 * (m + 8) * kUnitF32;
    auto bounds = [&](const std::vector<double>& ref, const std::vector<double>& magnitude) {
      std::vector<double> bound(ref.size());
      for (size_t i = 0; i < ref.size(); ++i) {
        bound[i] = u_low * std::abs(ref[i]) + (1 + u_low) * relative * magnitude[i];
      }
      return bound;
    };
    ExpectWithin(ToDoubles((*result)[0]), dx, bounds(dx, dx_scale), label + " dX");
    ExpectWithin(ToDoubles((*result)[1]), dscale, bounds(dscale, dscale_abs), label + " dScale");
    ExpectWithin(ToDoubles((*result)[2]), dbias, bounds(dbias, dbias_abs), label + " dBias");
  }
}

}  // namespace
}  // namespace onnx_amp::testing
