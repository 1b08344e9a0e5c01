// MaxPool, AveragePool, LpPool and the global pools against double-precision loops
// written here and hand values from the ONNX operator docs. Max is exact (a stored input
// value); an average of n taps has n - 1 float32 additions and a division, so
// |out - ref| <= u_low |ref| + (1 + u_low)(n + 1) u32 1.01 (sum |x|) / n + floor.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "tests/ops/dnn_test_util.h"
#include "tests/ops/window_reference.h"

namespace onnx_amp::testing {
namespace {

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

// Planes of 49, 256 and 1601 values: whole 16-lane vectors with and without a tail, and a
// plane over two of the kernel's 1024-value blocks. The sum runs in 16 lanes of at most
// ceil(n / 16) terms folded in 4 halvings, so its error is below (ceil(n / 16) + 4) u32
// times (sum |x|). Max carries a NaN anywhere in the plane and ignores a -inf.
TEST(PoolTest, GlobalPoolsOverLargePlanes) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const int64_t side_product : {int64_t{49}, int64_t{256}, int64_t{1601}}) {
      const Shape shape{1, 3, side_product, 1};
      std::vector<double> values = RandomValues(static_cast<size_t>(3 * side_product), 9100, -2.0, 2.0);
      values[static_cast<size_t>(side_product + side_product - 1)] = NAN;  // plane 1, its last value
      values[static_cast<size_t>(2 * side_product + 17)] = -INFINITY;     // plane 2, lane 1
      values[static_cast<size_t>(2 * side_product + 3)] = 9.0;            // plane 2's maximum
      const RoundedTensor x = Rounded(dtype, shape, values);
      auto avg = SingleNode("GlobalAveragePool").Input(x.tensor).Run();
      auto mx = SingleNode("GlobalMaxPool").Input(x.tensor).Run();
      ASSERT_TRUE(avg.ok() && mx.ok());
      const std::vector<double> means = ToDoubles((*avg)[0]), maxima = ToDoubles((*mx)[0]);
      const std::string label = std::string(DTypeName(dtype)) + " plane of " + std::to_string(side_product);
      // Plane 0: finite values only.
      double mean = 0, abs_sum = 0, max = -INFINITY;
      for (int64_t i = 0; i < side_product; ++i) {
        mean += x.values[static_cast<size_t>(i)] / static_cast<double>(side_product);
        abs_sum += std::abs(x.values[static_cast<size_t>(i)]);
        max = std::max(max, x.values[static_cast<size_t>(i)]);
      }
      const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
      const double terms = static_cast<double>((side_product + 15) / 16 + 4 + 1);
      const double bound = u_low * std::abs(mean) + (1 + u_low) * terms * kUnitF32 * 1.01 * abs_sum / static_cast<double>(side_product) +
                           AbsoluteFloor(dtype);
      ExpectWithin({means[0]}, {mean}, {bound}, label + " GlobalAveragePool");
      EXPECT_EQ(maxima[0], max) << label;
      EXPECT_TRUE(std::isnan(means[1]) && std::isnan(maxima[1])) << label << ": a NaN in the plane";
      EXPECT_TRUE(std::isinf(means[2]) && means[2] < 0) << label << ": -inf in the plane";
      EXPECT_EQ(maxima[2], 9.0) << label;
    }
  }
}

}  // namespace
}  // namespace onnx_amp::testing
