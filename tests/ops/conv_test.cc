// Conv, ConvTranspose and the pools against double-precision loops written here, hand
// values from the ONNX operator docs, and (ConvTranspose) the adjoint identity
// <Conv(x), y> = <x, ConvTranspose(y)> for the same weights.
//
// Conv's error bound is MatMul's (see linalg_test.cc) with K = C/group * prod(kernel)
// products plus the bias: |out - ref| <= u_low |ref| + (1 + u_low)(K + 3) u32 1.01
// sum |terms| + floor. Pools: max is exact (a stored input value); an average of n
// taps has n - 1 float32 additions and a division, so |out - ref| <= u_low |ref| +
// (1 + u_low)(n + 1) u32 1.01 (sum |x|) / n + floor.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

struct ConvCase {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: default
  std::string auto_pad = "NOTSET";
  bool bias = false;
};

struct Reference {
  Shape shape;
  std::vector<double> value, abs_sum;
  int64_t terms = 0;
};

// Resolved per-dim geometry, derived from the ONNX spec formulas.
struct Geometry {
  std::vector<int64_t> in, k, s, d, pb, out;
};

Geometry Resolve(const Shape& in, const std::vector<int64_t>& kernel, std::vector<int64_t> strides,
                 std::vector<int64_t> dilations, std::vector<int64_t> pads, const std::string& auto_pad,
                 bool ceil_mode = false) {
  const size_t r = in.size();
  if (strides.empty()) strides.assign(r, 1);
  if (dilations.empty()) dilations.assign(r, 1);
  if (pads.empty()) pads.assign(2 * r, 0);
  Geometry g{in, kernel, strides, dilations, std::vector<int64_t>(r), std::vector<int64_t>(r)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t dk = (kernel[i] - 1) * dilations[i] + 1;
    int64_t pb = pads[i], pe = pads[i + r];
    if (auto_pad == "VALID") pb = pe = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + dk - in[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    }
    const double span = static_cast<double>(in[i] + pb + pe - dk) / strides[i];
    int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (ceil_mode && (out - 1) * strides[i] >= in[i] + pb) --out;
    g.pb[i] = pb;
    g.out[i] = out;
  }
  return g;
}

Reference RefConv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& b) {
  const std::vector<int64_t> kernel(c.w.begin() + 2, c.w.end());
  const Geometry g = Resolve(Shape(c.x.begin() + 2, c.x.end()), kernel, c.strides, c.dilations, c.pads, c.auto_pad);
  const int64_t n_batch = c.x[0], channels = c.x[1], m = c.w[0], cg = channels / c.group, mg = m / c.group;
  const size_t r = g.in.size();
  Reference ref;
  ref.terms = cg * NumElements(kernel) + (c.bias ? 1 : 0);
  ref.shape = {n_batch, m};
  ref.shape.insert(ref.shape.end(), g.out.begin(), g.out.end());
  const int64_t out_size = NumElements(g.out), in_size = NumElements(g.in), k_size = NumElements(kernel);
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      for (int64_t o = 0; o < out_size; ++o) {
        std::vector<int64_t> oi(r);
        for (int64_t rest = o, i = r - 1; i >= 0; --i) oi[i] = rest % g.out[i], rest /= g.out[i];
        double sum = c.bias ? b[oc] : 0.0, abs_sum = c.bias ? std::abs(b[oc]) : 0.0;
        for (int64_t ic = 0; ic < cg; ++ic) {
          for (int64_t kk = 0; kk < k_size; ++kk) {
            int64_t offset = 0, rest = kk, div = k_size;
            bool inside = true;
            for (size_t i = 0; i < r; ++i) {
              div /= kernel[i];
              const int64_t ki = rest / div;
              rest %= div;
              const int64_t pos = oi[i] * g.s[i] - g.pb[i] + ki * g.d[i];
              inside = inside && pos >= 0 && pos < g.in[i];
              offset = offset * g.in[i] + pos;
            }
            if (!inside) continue;
            const double term = x[(n * channels + (oc / mg) * cg + ic) * in_size + offset] * w[(oc * cg + ic) * k_size + kk];
            sum += term;
            abs_sum += std::abs(term);
          }
        }
        ref.value.push_back(sum);
        ref.abs_sum.push_back(abs_sum);
      }
    }
  }
  return ref;
}

SingleNode ConvNode(const std::string& op, const ConvCase& c) {
  SingleNode node(op, 18);
  if (c.group != 1) node.Attr("group", c.group);
  if (!c.strides.empty()) node.Attr("strides", c.strides);
  if (!c.dilations.empty()) node.Attr("dilations", c.dilations);
  if (!c.pads.empty()) node.Attr("pads", c.pads);
  if (c.auto_pad != "NOTSET") node.Attr("auto_pad", c.auto_pad);
  return node;
}

void CheckConv(DType dtype, const ConvCase& c, uint32_t seed) {
  const RoundedTensor x = RandomTensor(dtype, c.x, seed), w = RandomTensor(dtype, c.w, seed + 1);
  const RoundedTensor b = RandomTensor(dtype, {c.w[0]}, seed + 2);
  SingleNode node = ConvNode("Conv", c);
  node.Input(x.tensor).Input(w.tensor);
  if (c.bias) node.Input(b.tensor);
  const Reference ref = RefConv(c, x.values, w.values, b.values);
  const std::string label = std::string(DTypeName(dtype)) + " conv X" + ShapeToString(c.x) + " W" + ShapeToString(c.w) +
                            " group " + std::to_string(c.group) + " " + c.auto_pad;
  auto out = node.Run();
  ASSERT_TRUE(out.ok()) << label << ": " << out.status().message();
  ASSERT_EQ((*out)[0].shape(), ref.shape) << label;
  const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
  std::vector<double> bound(ref.value.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    bound[i] = u_low * std::abs(ref.value[i]) + (1 + u_low) * (ref.terms + 3) * kUnitF32 * 1.01 * ref.abs_sum[i] +
               AbsoluteFloor(dtype);
  }
  ExpectWithin(ToDoubles((*out)[0]), ref.value, bound, label);
}

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 7}, {4, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", true},
    {{1, 2, 9, 8}, {3, 2, 3, 2}, 1, {2, 2}, {2, 1}, {0, 1, 1, 0}, "NOTSET", false},
    {{2, 4, 6, 6}, {6, 2, 3, 3}, 2, {1, 2}, {}, {1, 0, 1, 2}, "NOTSET", true},
    {{1, 8, 10, 10}, {8, 1, 3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, "NOTSET", true},  // depthwise
    {{2, 2, 11}, {3, 2, 4}, 1, {3}, {}, {}, "SAME_UPPER", true},                     // 1-D
    {{1, 3, 8, 7}, {2, 3, 2, 2}, 1, {2, 2}, {}, {}, "SAME_LOWER", false},
    {{1, 2, 9, 9}, {2, 2, 3, 3}, 1, {2, 2}, {2, 2}, {}, "VALID", true},
    {{1, 2, 5, 6, 5}, {2, 2, 2, 3, 3}, 1, {1, 2, 1}, {}, {1, 1, 0, 0, 1, 1}, "NOTSET", true},  // 3-D
    {{1, 64, 6, 6}, {16, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", false},                   // K = 576
};

TEST(ConvTest, Float32MatchesDoubleReference) {
  uint32_t seed = 1000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kFloat32, c, seed += 3);
}

TEST(ConvTest, Float16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 2000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16RoundsOnceFromFloat32Accumulation) {
  uint32_t seed = 3000;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16NativeKernelsRoundOnce) {
  ONNX_AMP_SKIP_WITHOUT_NATIVE_BF16();
  const ScopedBf16Kernels native(Bf16Kernels::kNative);
  uint32_t seed = 3100;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

TEST(ConvTest, BFloat16Float32KernelsRoundOnce) {
  const ScopedBf16Kernels float32(Bf16Kernels::kFloat32);
  uint32_t seed = 3200;
  for (const ConvCase& c : kConvCases) CheckConv(DType::kBFloat16, c, seed += 3);
}

TEST(ConvTest, Float64MatchesDoubleReference) {
  uint32_t seed = 4000;
  for (const ConvCase& c : kConvCases) {
    const RoundedTensor x = RandomTensor(DType::kFloat64, c.x, seed += 3), w = RandomTensor(DType::kFloat64, c.w, seed + 1);
    const RoundedTensor b = RandomTensor(DType::kFloat64, {c.w[0]}, seed + 2);
    SingleNode node = ConvNode("Conv", c);
    node.Input(x.tensor).Input(w.tensor);
    if (c.bias) node.Input(b.tensor);
    const Reference ref = RefConv(c, x.values, w.values, b.values);
    auto out = node.Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<double> bound(ref.value.size());
    for (size_t i = 0; i < bound.size(); ++i) bound[i] = (ref.terms + 1) * 0x1p-53 * 1.01 * ref.abs_sum[i];
    ExpectWithin(ToDoubles((*out)[0]), ref.value, bound, "float64 conv " + ShapeToString(c.x));
  }
}

TEST(ConvTest, Float16OutputOverflowIsInf) {
  // 3 taps of 30000 * 1 = 90000 > 65504; each tap alone fits.
  const Tensor x = MakeFloatTensor(DType::kFloat16, {1, 1, 3}, {30000, 30000, 30000});
  const Tensor w = MakeFloatTensor(DType::kFloat16, {2, 1, 3}, {1, 1, 1, 1, -1, 0});
  auto out = SingleNode("Conv").Input(x).Input(w).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<double> y = ToDoubles((*out)[0]);
  EXPECT_EQ(y[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[1], 0.0);
}

TEST(ConvTest, RejectsChannelMismatch) {
  auto out = SingleNode("Conv")
                 .Input(MakeFloatTensor(DType::kFloat32, {1, 3, 4, 4}, std::vector<double>(48, 1.0)))
                 .Input(MakeFloatTensor(DType::kFloat32, {2, 2, 3, 3}, std::vector<double>(36, 1.0)))
                 .Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidModel);
}

TEST(ConvTransposeTest, MatchesOnnxDocExample) {
  // ONNX ConvTranspose doc example: X = 0..8 (3x3), W = ones (1x2x3x3).
  std::vector<double> xv(9);
  for (int i = 0; i < 9; ++i) xv[i] = i;
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 1, 3, 3}, xv);
  const Tensor w = MakeFloatTensor(DType::kFloat32, {1, 2, 3, 3}, std::vector<double>(18, 1.0));
  auto out = SingleNode("ConvTranspose").Input(x).Input(w).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].shape(), (Shape{1, 2, 5, 5}));
  const std::vector<double> plane = {0, 1, 3,  3,  2,  3, 8,  15, 12, 7,  9, 21, 36,
                                     27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<double> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  EXPECT_EQ(ToDoubles((*out)[0]), want);
}

TEST(ConvTransposeTest, IsTheAdjointOfConv) {
  const std::vector<ConvCase> cases = {
      {{1, 2, 7, 7}, {3, 2, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}},
      {{2, 4, 8, 9}, {6, 2, 3, 2}, 2, {2, 3}, {1, 2}, {1, 0, 2, 1}},
      {{1, 3, 10}, {3, 1, 4}, 3, {3}, {2}, {2, 1}},
      {{1, 2, 4, 5, 4}, {2, 2, 2, 2, 3}, 1, {2, 1, 2}, {}, {0, 1, 1, 1, 0, 0}},
  };
  uint32_t seed = 5000;
  for (const ConvCase& c : cases) {
    const RoundedTensor x = RandomTensor(DType::kFloat64, c.x, seed += 3), w = RandomTensor(DType::kFloat64, c.w, seed + 1);
    auto y = ConvNode("Conv", c).Input(x.tensor).Input(w.tensor).Run();
    ASSERT_TRUE(y.ok()) << y.status().message();
    const RoundedTensor v = RandomTensor(DType::kFloat64, (*y)[0].shape(), seed + 2);
    SingleNode transpose = ConvNode("ConvTranspose", c);
    transpose.Attr("output_shape", std::vector<int64_t>(c.x.begin() + 2, c.x.end()));
    auto xt = transpose.Input(v.tensor).Input(w.tensor).Run();
    ASSERT_TRUE(xt.ok()) << xt.status().message();
    ASSERT_EQ((*xt)[0].shape(), c.x);
    const std::vector<double> conv_x = ToDoubles((*y)[0]), transpose_v = ToDoubles((*xt)[0]);
    double lhs = 0, rhs = 0, scale = 0;
    for (size_t i = 0; i < conv_x.size(); ++i) lhs += conv_x[i] * v.values[i], scale += std::abs(conv_x[i] * v.values[i]);
    for (size_t i = 0; i < transpose_v.size(); ++i) rhs += x.values[i] * transpose_v[i];
    EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + scale)) << "X" << ShapeToString(c.x);
  }
}

TEST(ConvTransposeTest, LowPrecisionMatchesRoundedFloat64) {
  // The same problem in float64 on the rounded inputs, rounded once, within the bound.
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    ConvCase c{{1, 4, 5, 5}, {4, 3, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}};
    const RoundedTensor x = RandomTensor(dtype, c.x, 17), w = RandomTensor(dtype, c.w, 18);
    auto low = ConvNode("ConvTranspose", c).Input(x.tensor).Input(w.tensor).Run();
    auto ref = ConvNode("ConvTranspose", c)
                   .Input(MakeFloatTensor(DType::kFloat64, c.x, x.values))
                   .Input(MakeFloatTensor(DType::kFloat64, c.w, w.values))
                   .Run();
    ASSERT_TRUE(low.ok() && ref.ok());
    const std::vector<double> want = ToDoubles((*ref)[0]);
    // Each output sums at most C * prod(kernel) = 36 terms of magnitude <= 1.
    std::vector<double> bound(want.size());
    for (size_t i = 0; i < want.size(); ++i) bound[i] = UnitRoundoff(dtype) * std::abs(want[i]) + 2 * 39 * kUnitF32 * 36;
    ExpectWithin(ToDoubles((*low)[0]), want, bound, std::string(DTypeName(dtype)) + " ConvTranspose");
  }
}

// Pools.

struct PoolCase {
  Shape x;
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// Max and average over the window, written from the ONNX spec; abs_mean is (sum |x|)/n.
void RefPool(const PoolCase& c, const std::vector<double>& x, std::vector<double>& max_out,
             std::vector<double>& avg_out, std::vector<double>& abs_mean, std::vector<double>& taps, Shape& shape) {
  const Shape in(c.x.begin() + 2, c.x.end());
  const Geometry g = Resolve(in, c.kernel, c.strides, c.dilations, c.pads, c.auto_pad, c.ceil_mode);
  const size_t r = in.size();
  std::vector<int64_t> pe(r);
  for (size_t i = 0; i < r; ++i) {
    pe[i] = c.pads.empty() || c.auto_pad != "NOTSET" ? 0 : c.pads[i + r];
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      const int64_t dk = (c.kernel[i] - 1) * g.d[i] + 1;
      pe[i] = std::max<int64_t>(0, (g.out[i] - 1) * g.s[i] + dk - in[i]) - g.pb[i];
    }
  }
  shape = {c.x[0], c.x[1]};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  const int64_t planes = c.x[0] * c.x[1], in_size = NumElements(in), out_size = NumElements(g.out),
                k_size = NumElements(c.kernel);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o = 0; o < out_size; ++o) {
      std::vector<int64_t> oi(r);
      for (int64_t rest = o, i = r - 1; i >= 0; --i) oi[i] = rest % g.out[i], rest /= g.out[i];
      double mx = -INFINITY, sum = 0, abs = 0;
      int64_t inside_count = 0, padded_count = 0;
      for (int64_t kk = 0; kk < k_size; ++kk) {
        int64_t offset = 0, rest = kk, div = k_size;
        bool inside = true, padded = true;
        for (size_t i = 0; i < r; ++i) {
          div /= c.kernel[i];
          const int64_t pos = oi[i] * g.s[i] - g.pb[i] + (rest / div) * g.d[i];
          rest %= div;
          inside = inside && pos >= 0 && pos < in[i];
          padded = padded && pos >= -g.pb[i] && pos < in[i] + pe[i];
          offset = offset * in[i] + pos;
        }
        padded_count += padded;
        if (!inside) continue;
        const double v = x[p * in_size + offset];
        mx = std::max(mx, v);
        sum += v;
        abs += std::abs(v);
        ++inside_count;
      }
      max_out.push_back(mx);
      const double n = static_cast<double>(c.count_include_pad ? padded_count : inside_count);
      avg_out.push_back(sum / n);
      abs_mean.push_back(abs / n);
      taps.push_back(static_cast<double>(inside_count));
    }
  }
}

SingleNode PoolNode(const std::string& op, const PoolCase& c) {
  SingleNode node(op, 19);
  node.Attr("kernel_shape", c.kernel);
  if (!c.strides.empty()) node.Attr("strides", c.strides);
  if (!c.dilations.empty()) node.Attr("dilations", c.dilations);
  if (!c.pads.empty()) node.Attr("pads", c.pads);
  if (c.auto_pad != "NOTSET") node.Attr("auto_pad", c.auto_pad);
  if (c.ceil_mode) node.Attr("ceil_mode", int64_t{1});
  if (c.count_include_pad) node.Attr("count_include_pad", int64_t{1});
  return node;
}

const std::vector<PoolCase> kPoolCases = {
    {{2, 3, 7, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
    {{1, 2, 8, 9}, {3, 2}, {2, 3}, {}, {1, 0, 1, 1}, "NOTSET", true},
    {{1, 2, 8, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, "NOTSET", true, true},
    {{1, 2, 9, 9}, {2, 2}, {1, 1}, {2, 2}, {}},
    {{2, 3, 8, 34}, {2, 2}, {2, 2}, {}, {}},  // 2x2 windows tiling the input (the CNNs' max pool)
    {{1, 3, 10}, {4}, {3}, {}, {}, "SAME_UPPER"},
    {{1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {}, "SAME_LOWER", false, true},
    {{1, 1, 5, 6, 5}, {2, 3, 2}, {2, 1, 2}, {}, {1, 1, 0, 0, 1, 1}, "NOTSET", false, true},
};

void CheckPools(DType dtype, uint32_t seed) {
  for (const PoolCase& c : kPoolCases) {
    const RoundedTensor x = RandomTensor(dtype, c.x, seed += 2, -4.0, 4.0);
    std::vector<double> max_ref, avg_ref, abs_mean, taps;
    Shape shape;
    RefPool(c, x.values, max_ref, avg_ref, abs_mean, taps, shape);
    const std::string label = std::string(DTypeName(dtype)) + " pool X" + ShapeToString(c.x) + " " + c.auto_pad +
                              (c.ceil_mode ? " ceil" : "") + (c.count_include_pad ? " include_pad" : "");
    auto mx = PoolNode("MaxPool", c).Input(x.tensor).Run();
    ASSERT_TRUE(mx.ok()) << label << ": " << mx.status().message();
    ASSERT_EQ((*mx)[0].shape(), shape) << label;
    EXPECT_EQ(ToDoubles((*mx)[0]), max_ref) << label;  // max returns one of the stored inputs

    auto avg = PoolNode("AveragePool", c).Input(x.tensor).Run();
    ASSERT_TRUE(avg.ok()) << label << ": " << avg.status().message();
    ASSERT_EQ((*avg)[0].shape(), shape) << label;
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    std::vector<double> bound(avg_ref.size());
    for (size_t i = 0; i < bound.size(); ++i) {
      bound[i] = u_low * std::abs(avg_ref[i]) + (1 + u_low) * (taps[i] + 1) * kUnitF32 * 1.01 * abs_mean[i] +
                 AbsoluteFloor(dtype);
    }
    ExpectWithin(ToDoubles((*avg)[0]), avg_ref, bound, label + " average");
  }
}

TEST(PoolTest, Float32MatchesReference) { CheckPools(DType::kFloat32, 6000); }
TEST(PoolTest, Float16MatchesReference) { CheckPools(DType::kFloat16, 7000); }
TEST(PoolTest, BFloat16MatchesReference) { CheckPools(DType::kBFloat16, 8000); }

TEST(PoolTest, MaxPoolCeilModeAndIndicesMatchOnnxDocs) {
  // ONNX MaxPool doc example "maxpool_2d_ceil": 1..16 in 4x4, kernel 3, stride 2.
  std::vector<double> xv(16);
  for (int i = 0; i < 16; ++i) xv[i] = i + 1;
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 1, 4, 4}, xv);
  auto out = SingleNode("MaxPool", 12)
                 .Attr("kernel_shape", std::vector<int64_t>{3, 3})
                 .Attr("strides", std::vector<int64_t>{2, 2})
                 .Attr("ceil_mode", int64_t{1})
                 .Input(x)
                 .NumOutputs(2)
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToDoubles((*out)[0]), (std::vector<double>{11, 12, 15, 16}));
  EXPECT_EQ(ToVector<int64_t>((*out)[1]), (std::vector<int64_t>{10, 11, 14, 15}));
  // storage_order 1 reports column-major positions: (row 2, col 2) -> 2 + 2 * 4.
  auto column = SingleNode("MaxPool", 12)
                    .Attr("kernel_shape", std::vector<int64_t>{3, 3})
                    .Attr("strides", std::vector<int64_t>{2, 2})
                    .Attr("ceil_mode", int64_t{1})
                    .Attr("storage_order", int64_t{1})
                    .Input(x)
                    .NumOutputs(2)
                    .Run();
  ASSERT_TRUE(column.ok());
  EXPECT_EQ(ToVector<int64_t>((*column)[1]), (std::vector<int64_t>{10, 14, 11, 15}));
}

// MaxPool with 2x2 windows and stride 2, the tiling path of the 2-D pool.
Expected<std::vector<Tensor>> MaxPool2x2(const Tensor& x) {
  return SingleNode("MaxPool", 12)
      .Attr("kernel_shape", std::vector<int64_t>{2, 2})
      .Attr("strides", std::vector<int64_t>{2, 2})
      .Input(x)
      .Run();
}

// 2x2 windows, stride 2, tiling a 2x8 plane: the max keeps the first of equal values
// (so the sign of a zero) and the first NaN in row-major tap order, whatever the window's
// other values; windows of one plane: {+0,-0,-0,+0}, {-0,+0,+0,-0}, {1,NaN,-NaN,2},
// {-1,-1,-3,-NaN} (top row then bottom row of each).
void CheckMaxPool2x2KeepsFirstZeroAndFirstNaN() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float top[8] = {0.0f, -0.0f, -0.0f, 0.0f, 1.0f, nan, -1.0f, -1.0f};
  const float bottom[8] = {-0.0f, 0.0f, 0.0f, -0.0f, -nan, 2.0f, -3.0f, -nan};
  Tensor x = Tensor::Empty(DType::kFloat32, {1, 1, 2, 8});
  std::copy(top, top + 8, x.data<float>());
  std::copy(bottom, bottom + 8, x.data<float>() + 8);
  auto out = MaxPool2x2(x);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const uint32_t* bits = (*out)[0].data<uint32_t>();
  uint32_t nan_bits, minus_nan_bits;
  std::memcpy(&nan_bits, &nan, 4);
  minus_nan_bits = nan_bits | 0x80000000u;
  EXPECT_EQ(bits[0], 0x00000000u);  // +0, the first of four equal zeros
  EXPECT_EQ(bits[1], 0x80000000u);  // -0
  EXPECT_EQ(bits[2], nan_bits);     // the first NaN, not -NaN after it
  EXPECT_EQ(bits[3], minus_nan_bits);
}

TEST(PoolTest, MaxPool2x2KeepsFirstZeroAndFirstNaN) { CheckMaxPool2x2KeepsFirstZeroAndFirstNaN(); }

TEST(PoolTest, MaxPool2x2PortableKernelKeepsFirstZeroAndFirstNaN) {
  const ScopedPool2x2Avx512 portable(false);
  CheckMaxPool2x2KeepsFirstZeroAndFirstNaN();
}

// The 2x2 tiling path at widths below, at and across its 32-column steps, over several
// planes: each output is the first maximum of its window in row-major tap order (the
// first NaN when there is one), compared bit for bit. Values come from a coarse grid
// with signed zeros and NaNs of both signs, so ties and NaNs are common.
void CheckMaxPool2x2AtEveryWidth() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float grid[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, nan, -nan, 0.5f};
  std::mt19937 gen(42);
  for (const int64_t width : {2, 14, 28, 30, 32, 34, 64, 70}) {
    const int64_t planes = 3, height = 6;
    Tensor x = Tensor::Empty(DType::kFloat32, {1, planes, height, width});
    float* xs = x.data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) xs[i] = grid[gen() % 8];
    auto out = MaxPool2x2(x);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const uint32_t* bits = (*out)[0].data<uint32_t>();
    int64_t k = 0;
    for (int64_t p = 0; p < planes; ++p) {
      for (int64_t r = 0; r < height / 2; ++r) {
        for (int64_t c = 0; c < width / 2; ++c, ++k) {
          const float* tl = xs + (p * height + 2 * r) * width + 2 * c;
          float best = tl[0];
          for (const float tap : {tl[1], tl[width], tl[width + 1]}) {
            if (std::isnan(best)) break;
            if (std::isnan(tap) || tap > best) best = tap;
          }
          uint32_t want;
          std::memcpy(&want, &best, 4);
          ASSERT_EQ(bits[k], want) << "width " << width << " plane " << p << " row " << r << " col " << c;
        }
      }
    }
  }
}

TEST(PoolTest, MaxPool2x2MatchesFirstMaximumAtEveryWidth) { CheckMaxPool2x2AtEveryWidth(); }

TEST(PoolTest, MaxPool2x2PortableKernelMatchesFirstMaximumAtEveryWidth) {
  const ScopedPool2x2Avx512 portable(false);
  CheckMaxPool2x2AtEveryWidth();
}

TEST(PoolTest, AveragePoolPadsCountOnlyWhenAsked) {
  // 2x2 input of ones, 3x3 window with pads 1: 4 real taps of 9.
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto excluded = SingleNode("AveragePool")
                      .Attr("kernel_shape", std::vector<int64_t>{3, 3})
                      .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                      .Input(x)
                      .Run();
  auto included = SingleNode("AveragePool")
                      .Attr("kernel_shape", std::vector<int64_t>{3, 3})
                      .Attr("pads", std::vector<int64_t>{1, 1, 1, 1})
                      .Attr("count_include_pad", int64_t{1})
                      .Input(x)
                      .Run();
  ASSERT_TRUE(excluded.ok() && included.ok());
  EXPECT_EQ(ToDoubles((*excluded)[0]), (std::vector<double>{1, 1, 1, 1}));
  const float four_ninths = 4.0f / 9.0f;  // a float32 sum of 4 divided by 9, rounded once
  EXPECT_EQ(ToDoubles((*included)[0]), std::vector<double>(4, four_ninths));
}

TEST(PoolTest, LpPoolsTakeThePNorm) {
  // Pads 1 and 1, windows {pad, 3, 4}, {4, 0, 0}, {0, -12, pad}: 2-norms 5, 4, 12;
  // GlobalLpPool with p = 1 sums |x|.
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 1, 5}, {3, 4, 0, 0, -12});
  auto lp = SingleNode("LpPool", 18)
                .Attr("kernel_shape", std::vector<int64_t>{3})
                .Attr("strides", std::vector<int64_t>{2})
                .Attr("pads", std::vector<int64_t>{1, 1})
                .Input(x)
                .Run();
  auto global = SingleNode("GlobalLpPool", 2).Attr("p", int64_t{1}).Input(x).Run();
  ASSERT_TRUE(lp.ok() && global.ok()) << lp.status().message();
  EXPECT_EQ(ToDoubles((*lp)[0]), (std::vector<double>{5, 4, 12}));
  EXPECT_EQ(ToDoubles((*global)[0]), (std::vector<double>{19}));
}

TEST(PoolTest, GlobalPoolsReduceEachPlane) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const RoundedTensor x = RandomTensor(dtype, {2, 3, 5, 4}, 9000, -2.0, 2.0);
    auto avg = SingleNode("GlobalAveragePool").Input(x.tensor).Run();
    auto mx = SingleNode("GlobalMaxPool").Input(x.tensor).Run();
    ASSERT_TRUE(avg.ok() && mx.ok());
    EXPECT_EQ((*avg)[0].shape(), (Shape{2, 3, 1, 1}));
    std::vector<double> mean(6, 0.0), abs_mean(6, 0.0), max(6, -INFINITY);
    for (int p = 0; p < 6; ++p) {
      for (int i = 0; i < 20; ++i) {
        mean[p] += x.values[p * 20 + i] / 20;
        abs_mean[p] += std::abs(x.values[p * 20 + i]) / 20;
        max[p] = std::max(max[p], x.values[p * 20 + i]);
      }
    }
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    std::vector<double> bound(6);
    for (int p = 0; p < 6; ++p) bound[p] = u_low * std::abs(mean[p]) + (1 + u_low) * 21 * kUnitF32 * 1.01 * abs_mean[p] + AbsoluteFloor(dtype);
    ExpectWithin(ToDoubles((*avg)[0]), mean, bound, std::string(DTypeName(dtype)) + " GlobalAveragePool");
    EXPECT_EQ(ToDoubles((*mx)[0]), max);
  }
}

}  // namespace
}  // namespace onnx_amp::testing
