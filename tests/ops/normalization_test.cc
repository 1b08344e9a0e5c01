// Softmax / LogSoftmax / Hardmax and the normalisations against hand-computed values
// and double-precision references written here.
//
// Bounds (u = float32 unit roundoff, u_low the output dtype's, K the row length,
// R = max - min of the row). Softmax: each exp(x - max) carries a relative error of
// at most u (x - max rounded) * |x - max| + 3u (the vector exp, ops/common/float_lanes.h),
// the sum K u, the division u, so
// |out - ref| <= u_low |ref| + (1 + u_low)(2R + K + 5) u |ref|; we double the float32
// part to cover the dropped second-order terms. LayerNorm and its relatives: the mean
// and variance are float32 sums of K terms ((K + 2) u relative to the sum of
// magnitudes), which moves z = (x - mean) / std by at most 3 (K + 2) u max|x| / std +
// 4 u |z|; y = z * scale + bias adds 2u |y|.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/onnx_domain.h"
#include "tests/ops/dnn_test_util.h"

namespace onnx_amp::testing {
namespace {

std::vector<double> RefSoftmaxRows(const std::vector<double>& x, int64_t rows, int64_t cols, bool log) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - mx);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = log ? x[r * cols + c] - mx - std::log(sum) : std::exp(x[r * cols + c] - mx) / sum;
    }
  }
  return y;
}

TEST(SoftmaxTest, Float32MatchesHandValues) {
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 3}, {1, 2, 3});
  auto soft = SingleNode("Softmax", 13).Input(x).Run();
  auto log_soft = SingleNode("LogSoftmax", 13).Input(x).Run();
  ASSERT_TRUE(soft.ok() && log_soft.ok());
  // softmax([1, 2, 3]) = e^(i-3) / (1 + e^-1 + e^-2).
  const std::vector<double> want = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
  const std::vector<double> want_log = {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806};
  const double bound = 2 * (2 * 2 + 3 + 5) * kUnitF32;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(ToDoubles((*soft)[0])[i], want[i], bound * want[i]);
    EXPECT_NEAR(ToDoubles((*log_soft)[0])[i], want_log[i], bound * 4);
  }
}

TEST(SoftmaxTest, OpsetDecidesBetweenFlattenAndSingleAxis) {
  std::vector<double> xv(8);
  for (int i = 0; i < 8; ++i) xv[i] = 0.25 * i * (i % 3 == 0 ? -1 : 1);
  const Tensor x = MakeFloatTensor(DType::kFloat32, {2, 2, 2}, xv);
  // Opset 11, axis 1: rows of the [2, 4] flattening.
  auto flat = SingleNode("Softmax", 11).Attr("axis", int64_t{1}).Input(x).Run();
  ASSERT_TRUE(flat.ok());
  ExpectWithin(ToDoubles((*flat)[0]), RefSoftmaxRows(xv, 2, 4, false), std::vector<double>(8, 32 * kUnitF32), "opset 11");
  // Opset 13, axis 1: pairs (n, :, k).
  auto single = SingleNode("Softmax", 13).Attr("axis", int64_t{1}).Input(x).Run();
  ASSERT_TRUE(single.ok());
  std::vector<double> want(8);
  for (int n = 0; n < 2; ++n) {
    for (int k = 0; k < 2; ++k) {
      const double a = xv[n * 4 + k], b = xv[n * 4 + 2 + k], m = std::max(a, b);
      want[n * 4 + k] = std::exp(a - m) / (std::exp(a - m) + std::exp(b - m));
      want[n * 4 + 2 + k] = std::exp(b - m) / (std::exp(a - m) + std::exp(b - m));
    }
  }
  ExpectWithin(ToDoubles((*single)[0]), want, std::vector<double>(8, 32 * kUnitF32), "opset 13");
  // Opset 13 default axis is the last one; opset 11's default is 1.
  auto last = SingleNode("Softmax", 13).Input(x).Run();
  ASSERT_TRUE(last.ok());
  ExpectWithin(ToDoubles((*last)[0]), RefSoftmaxRows(xv, 4, 2, false), std::vector<double>(8, 32 * kUnitF32), "default");
}

// Rows of 300 (18 whole 16-lane vectors and a tail of 12) with an attention mask's
// -10000 and -inf entries, whose exp is 0, and a row with a NaN, which is NaN throughout.
TEST(SoftmaxTest, LongMaskedRows) {
  const int64_t rows = 3, cols = 300;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    std::vector<double> values = RandomValues(static_cast<size_t>(rows * cols), 77, -4.0, 4.0);
    for (int64_t c = 0; c < cols; c += 3) values[static_cast<size_t>(c)] = -10000.0;  // row 0: a third masked
    values[static_cast<size_t>(cols - 1)] = -INFINITY;                                // and its last, in the tail
    values[static_cast<size_t>(cols + 5)] = NAN;                                      // row 1
    const RoundedTensor x = Rounded(dtype, {rows, cols}, values);
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    for (bool log : {false, true}) {
      auto out = SingleNode(log ? "LogSoftmax" : "Softmax", 13).Input(x.tensor).Run();
      ASSERT_TRUE(out.ok());
      const std::vector<double> got = ToDoubles((*out)[0]);
      const std::vector<double> ref = RefSoftmaxRows(x.values, rows, cols, log);
      const std::string label = std::string(DTypeName(dtype)) + (log ? " LogSoftmax" : " Softmax");
      for (int64_t c = 0; c < cols; ++c) EXPECT_TRUE(std::isnan(got[static_cast<size_t>(cols + c)])) << label << " NaN row";
      for (int64_t r : {int64_t{0}, int64_t{2}}) {
        std::vector<double> row_got, row_ref, bound;
        for (int64_t c = 0; c < cols; ++c) {
          const double want = ref[static_cast<size_t>(r * cols + c)];
          if (!log && x.values[static_cast<size_t>(r * cols + c)] <= -10000.0) {
            EXPECT_EQ(got[static_cast<size_t>(r * cols + c)], 0.0) << label << " masked entry";
            continue;
          }
          if (std::isinf(want)) {
            EXPECT_EQ(got[static_cast<size_t>(r * cols + c)], want) << label;
            continue;
          }
          const double range = log && x.values[static_cast<size_t>(r * cols + c)] <= -10000.0 ? 10008.0 : 8.0;
          const double f32_part = log ? 2 * (std::abs(want) + 2 * range + cols + 7) * kUnitF32
                                      : 2 * (2 * 8.0 + cols + 5) * kUnitF32 * std::abs(want);
          row_got.push_back(got[static_cast<size_t>(r * cols + c)]);
          row_ref.push_back(want);
          bound.push_back(u_low * std::abs(want) + (1 + u_low) * f32_part + AbsoluteFloor(dtype));
        }
        ExpectWithin(row_got, row_ref, bound, label + " row " + std::to_string(r));
      }
    }
  }
}

// float16/bfloat16 rows are widened several at a time (up to 4096 values) and run
// through the float32 row kernel: the float32 kernel's result on the same rounded inputs,
// rounded once, bit for bit. 600 rows of 32 (groups of 128 rows, the last one short, on
// both threads) and 3 rows of 5000 (one row a group).
TEST(SoftmaxTest, LowPrecisionRowsMatchTheFloat32KernelRoundedOnce) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const Shape& shape : {Shape{600, 32}, Shape{3, 5000}}) {
      const RoundedTensor x = Rounded(dtype, shape, RandomValues(static_cast<size_t>(NumElements(shape)), 91, -6.0, 6.0));
      for (bool log : {false, true}) {
        auto low = SingleNode(log ? "LogSoftmax" : "Softmax", 13).Input(x.tensor).Run();
        auto f32 = SingleNode(log ? "LogSoftmax" : "Softmax", 13).Input(MakeFloatTensor(DType::kFloat32, shape, x.values)).Run();
        ASSERT_TRUE(low.ok() && f32.ok());
        const std::vector<double> got = ToDoubles((*low)[0]);
        const std::vector<double> want = Rounded(dtype, shape, ToDoubles((*f32)[0])).values;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], want[i]) << DTypeName(dtype) << (log ? " LogSoftmax" : " Softmax") << " element " << i;
        }
      }
    }
  }
}

// Short rows run four at a time (interleaved for speed): each row of a group, and each
// row left after the groups, gives what it gives run alone, bit for bit. Rows of 32 (whole
// vectors, no padded tail), 24 and 5; row 1 holds a NaN (NaN throughout), row 2 is all
// -inf (NaN throughout: exp(-inf - -inf)), row 5 has masked entries and one +inf (NaN
// throughout: exp(inf - inf)).
TEST(SoftmaxTest, GroupedShortRowsMatchEachRowAlone) {
  const int64_t rows = 7;
  for (int64_t cols : {int64_t{32}, int64_t{24}, int64_t{5}}) {
    std::vector<double> values = RandomValues(static_cast<size_t>(rows * cols), 5, -6.0, 6.0);
    values[static_cast<size_t>(cols + 3)] = NAN;
    for (int64_t c = 0; c < cols; ++c) values[static_cast<size_t>(2 * cols + c)] = -INFINITY;
    for (int64_t c = 0; c < cols; c += 2) values[static_cast<size_t>(5 * cols + c)] = -10000.0;
    values[static_cast<size_t>(5 * cols + 1)] = INFINITY;
    const Tensor x = MakeFloatTensor(DType::kFloat32, {rows, cols}, values);
    for (bool log : {false, true}) {
      const char* op = log ? "LogSoftmax" : "Softmax";
      auto all = SingleNode(op, 13).Input(x).Run();
      ASSERT_TRUE(all.ok());
      const std::vector<double> got = ToDoubles((*all)[0]);
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<double> row(values.begin() + r * cols, values.begin() + (r + 1) * cols);
        auto alone = SingleNode(op, 13).Input(MakeFloatTensor(DType::kFloat32, {1, cols}, row)).Run();
        ASSERT_TRUE(alone.ok());
        const std::vector<double> want = ToDoubles((*alone)[0]);
        for (int64_t c = 0; c < cols; ++c) {
          const double g = got[static_cast<size_t>(r * cols + c)], w = want[static_cast<size_t>(c)];
          EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << op << " cols " << cols << " row " << r << " col " << c;
        }
        if (r == 1 || r == 2 || r == 5) {
          for (double v : want) EXPECT_TRUE(std::isnan(v)) << op << " cols " << cols << " row " << r;
        }
      }
      // The ordinary rows against the double reference (the bound of LowPrecisionRoundsOnce).
      const std::vector<double> ref = RefSoftmaxRows(values, rows, cols, log);
      for (int64_t r : {int64_t{0}, int64_t{3}, int64_t{4}, int64_t{6}}) {
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          const double f32_part = log ? 2 * (std::abs(ref[i]) + 2 * 12.0 + cols + 7) * kUnitF32
                                      : 2 * (2 * 12.0 + cols + 5) * kUnitF32 * std::abs(ref[i]);
          EXPECT_NEAR(got[i], ref[i], f32_part) << op << " cols " << cols << " row " << r << " col " << c;
        }
      }
    }
  }
}

// Softmax and LogSoftmax along axis 1 of [2, 7, 4, 5]: 20 columns per image, one whole
// block of 16 and a padded block of 4, each column with its own max and sum. A NaN makes
// its column NaN and leaves the others; a -inf gives 0 (Softmax).
TEST(SoftmaxTest, AlongAChannelAxis) {
  const int64_t count = 7, inner = 20;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    std::vector<double> values = RandomValues(static_cast<size_t>(2 * count * inner), 88, -4.0, 4.0);
    values[static_cast<size_t>(3 * inner + 2)] = NAN;        // image 0, column 2
    values[static_cast<size_t>(count * inner + 19)] = -INFINITY;  // image 1, column 19 (the padded block)
    const RoundedTensor x = Rounded(dtype, {2, count, 4, 5}, values);
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    for (bool log : {false, true}) {
      auto out = SingleNode(log ? "LogSoftmax" : "Softmax", 13).Attr("axis", int64_t{1}).Input(x.tensor).Run();
      ASSERT_TRUE(out.ok());
      const std::vector<double> got = ToDoubles((*out)[0]);
      const std::string label = std::string(DTypeName(dtype)) + (log ? " LogSoftmax" : " Softmax");
      std::vector<double> got_finite, want, bound;
      for (int64_t image = 0; image < 2; ++image) {
        for (int64_t column = 0; column < inner; ++column) {
          std::vector<double> line;
          for (int64_t k = 0; k < count; ++k) line.push_back(x.values[static_cast<size_t>((image * count + k) * inner + column)]);
          const std::vector<double> ref = RefSoftmaxRows(line, 1, count, log);
          for (int64_t k = 0; k < count; ++k) {
            const double value = got[static_cast<size_t>((image * count + k) * inner + column)];
            if (image == 0 && column == 2) {
              EXPECT_TRUE(std::isnan(value)) << label << " NaN column";
            } else if (std::isinf(ref[k]) || ref[k] == 0) {
              EXPECT_EQ(value, ref[k]) << label << " column " << column;
            } else {
              const double range = 8.0;
              const double f32_part = log ? 2 * (std::abs(ref[k]) + 2 * range + count + 7) * kUnitF32
                                          : 2 * (2 * range + count + 5) * kUnitF32 * std::abs(ref[k]);
              got_finite.push_back(value);
              want.push_back(ref[k]);
              bound.push_back(u_low * std::abs(ref[k]) + (1 + u_low) * f32_part + AbsoluteFloor(dtype));
            }
          }
        }
      }
      ExpectWithin(got_finite, want, bound, label);
    }
  }
}

// SoftmaxGrad (dX = Y (dY - sum(dY Y))) and LogSoftmaxGrad (dX = dY - exp(Y) sum(dY)) on
// rows of 40 (two 16-lane vectors and a tail of 8) against double formulas. Bounds: the
// sum of K products carries K u of sum |dY Y| (K + 2 with the product and the
// subtraction), exp 3u, the rest u per operation; doubled for second-order terms.
TEST(SoftmaxTest, GradientsAlongLongRows) {
  const int64_t rows = 3, cols = 40;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const RoundedTensor dy = RandomTensor(dtype, {rows, cols}, 501, -1.0, 1.0);
    const std::vector<double> logits = RandomValues(static_cast<size_t>(rows * cols), 502, -3.0, 3.0);
    const std::vector<double> probs = RefSoftmaxRows(logits, rows, cols, false);
    const std::vector<double> log_probs = RefSoftmaxRows(logits, rows, cols, true);
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    for (bool log : {false, true}) {
      const RoundedTensor y = Rounded(dtype, {rows, cols}, log ? log_probs : probs);
      auto out = SingleNode(log ? "LogSoftmaxGrad" : "SoftmaxGrad", 1, std::string(kOnnxAmpDomain))
                     .Input(dy.tensor)
                     .Input(y.tensor)
                     .Run();
      ASSERT_TRUE(out.ok()) << out.status().message();
      std::vector<double> ref(static_cast<size_t>(rows * cols)), bound(ref.size());
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0, magnitude = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          const double term = log ? dy.values[i] : dy.values[i] * y.values[i];
          sum += term;
          magnitude += std::abs(term);
        }
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          const double g = dy.values[i], v = y.values[i];
          ref[i] = log ? g - std::exp(v) * sum : v * (g - sum);
          const double f32_part = log ? std::abs(ref[i]) + std::exp(v) * (4 * std::abs(sum) + (cols + 2) * magnitude)
                                      : std::abs(ref[i]) + std::abs(v) * (std::abs(g) + (cols + 2) * magnitude);
          bound[i] = u_low * std::abs(ref[i]) + (1 + u_low) * 2 * kUnitF32 * f32_part + AbsoluteFloor(dtype);
        }
      }
      ExpectWithin(ToDoubles((*out)[0]), ref, bound, std::string(DTypeName(dtype)) + (log ? " LogSoftmaxGrad" : " SoftmaxGrad"));
    }
  }
}

TEST(SoftmaxTest, HardmaxPicksTheFirstMaximum) {
  const Tensor x = MakeFloatTensor(DType::kFloat32, {2, 4}, {1, 3, 3, 2, -1, -5, -0.5, -2});
  auto out = SingleNode("Hardmax", 13).Input(x).Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ToDoubles((*out)[0]), (std::vector<double>{0, 1, 0, 0, 0, 0, 1, 0}));
}

TEST(SoftmaxTest, LowPrecisionRoundsOnce) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    const int64_t rows = 7, cols = 50;
    const RoundedTensor x = RandomTensor(dtype, {rows, cols}, 42, -4.0, 4.0);
    const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
    for (bool log : {false, true}) {
      auto out = SingleNode(log ? "LogSoftmax" : "Softmax", 13).Input(x.tensor).Run();
      ASSERT_TRUE(out.ok());
      const std::vector<double> ref = RefSoftmaxRows(x.values, rows, cols, log);
      std::vector<double> bound(ref.size());
      const double range = 8.0;  // data in [-4, 4)
      for (size_t i = 0; i < ref.size(); ++i) {
        // LogSoftmax: absolute errors of (x - max) and log(sum) instead of relative ones.
        const double f32_part = log ? 2 * (std::abs(ref[i]) + 2 * range + cols + 7) * kUnitF32
                                    : 2 * (2 * range + cols + 5) * kUnitF32 * std::abs(ref[i]);
        bound[i] = u_low * std::abs(ref[i]) + (1 + u_low) * f32_part + AbsoluteFloor(dtype);
      }
      ExpectWithin(ToDoubles((*out)[0]), ref, bound, std::string(DTypeName(dtype)) + (log ? " LogSoftmax" : " Softmax"));
    }
  }
}

// LayerNorm reference over the last `cols` values of each row; also the bound.
struct NormRef {
  std::vector<double> y, bound, mean, inv_std;
};

NormRef RefLayerNorm(DType dtype, const std::vector<double>& x, int64_t rows, int64_t cols,
                     const std::vector<double>& scale, const std::vector<double>& bias, double eps) {
  NormRef ref;
  const double u_low = IsLowPrecision(dtype) ? UnitRoundoff(dtype) : 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0, max_abs = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c] / cols, max_abs = std::max(max_abs, std::abs(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean) / cols;
    const double std_dev = std::sqrt(var + eps);
    ref.mean.push_back(mean);
    ref.inv_std.push_back(1 / std_dev);
    for (int64_t c = 0; c < cols; ++c) {
      const double z = (x[r * cols + c] - mean) / std_dev, y = z * scale[c] + bias[c];
      ref.y.push_back(y);
      const double dz = 3 * (cols + 2) * kUnitF32 * max_abs / std_dev + 4 * kUnitF32 * std::abs(z);
      ref.bound.push_back(u_low * std::abs(y) +
                          (1 + u_low) * (std::abs(scale[c]) * dz + 2 * kUnitF32 * (std::abs(z * scale[c]) + std::abs(bias[c]))) +
                          AbsoluteFloor(dtype));
    }
  }
  return ref;
}

TEST(LayerNormTest, Float32MatchesHandValues) {
  // x = [1, 2, 3, 4]: mean 2.5, variance 1.25.
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 4}, {1, 2, 3, 4});
  const Tensor scale = MakeFloatTensor(DType::kFloat32, {4}, {0.5, 1, 2, -1});
  const Tensor bias = MakeFloatTensor(DType::kFloat32, {4}, {0, 0.5, 0, 1});
  auto out = SingleNode("LayerNormalization", 17).Attr("epsilon", 0.0f).Input(x).Input(scale).Input(bias).NumOutputs(3).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const double s = 1 / std::sqrt(1.25);
  const std::vector<double> want = {-1.5 * s * 0.5, -0.5 * s + 0.5, 0.5 * s * 2, -1.5 * s + 1};
  ExpectWithin(ToDoubles((*out)[0]), want, std::vector<double>(4, 16 * kUnitF32), "layer norm");
  EXPECT_EQ((*out)[1].shape(), (Shape{1, 1}));
  EXPECT_NEAR(ToDoubles((*out)[1])[0], 2.5, 4 * kUnitF32);
  EXPECT_NEAR(ToDoubles((*out)[2])[0], s, 16 * kUnitF32);
}

TEST(LayerNormTest, AllDtypesMatchRoundedReference) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // axis = 1 on [3, 4, 16]: rows of 64 values (four whole 16-lane vectors).
    const RoundedTensor x = RandomTensor(dtype, {3, 4, 16}, 77, -3.0, 5.0);
    const RoundedTensor scale = RandomTensor(dtype, {4, 16}, 78), bias = RandomTensor(dtype, {4, 16}, 79);
    auto out = SingleNode("LayerNormalization", 17)
                   .Attr("axis", int64_t{1})
                   .Input(x.tensor)
                   .Input(scale.tensor)
                   .Input(bias.tensor)
                   .NumOutputs(3)
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    const NormRef ref = RefLayerNorm(dtype, x.values, 3, 64, scale.values, bias.values, 1e-5);
    ExpectWithin(ToDoubles((*out)[0]), ref.y, ref.bound, std::string(DTypeName(dtype)) + " LayerNormalization");
    EXPECT_EQ((*out)[1].dtype(), DType::kFloat32);
    EXPECT_EQ((*out)[1].shape(), (Shape{3, 1, 1}));
    for (int r = 0; r < 3; ++r) {
      EXPECT_NEAR(ToDoubles((*out)[1])[r], ref.mean[r], 66 * kUnitF32 * 5);
      EXPECT_NEAR(ToDoubles((*out)[2])[r], ref.inv_std[r], 3 * 66 * kUnitF32 * 5 * ref.inv_std[r] * ref.inv_std[r]);
    }
  }
}

// float16/bfloat16 rows are widened several at a time (up to 4096 values) and run
// through the float32 row kernel: Y is the float32 kernel's result on the same rounded
// inputs, rounded once, and Mean and InvStdDev are its very values. 600 rows of 64
// (groups of 64 rows, a short one at the end of each thread's share) and 3 rows of 5000
// (one row a group).
TEST(LayerNormTest, LowPrecisionRowsMatchTheFloat32KernelRoundedOnce) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const int64_t cols : {int64_t{64}, int64_t{5000}}) {
      const int64_t rows = cols == 64 ? 600 : 3;
      const RoundedTensor x = RandomTensor(dtype, {rows, cols}, 92, -3.0, 5.0);
      const RoundedTensor scale = RandomTensor(dtype, {cols}, 93), bias = RandomTensor(dtype, {cols}, 94);
      const auto run = [&](DType type) {
        return SingleNode("LayerNormalization", 17)
            .Input(MakeFloatTensor(type, {rows, cols}, x.values))
            .Input(MakeFloatTensor(type, {cols}, scale.values))
            .Input(MakeFloatTensor(type, {cols}, bias.values))
            .NumOutputs(3)
            .Run();
      };
      auto low = run(dtype);
      auto f32 = run(DType::kFloat32);
      ASSERT_TRUE(low.ok() && f32.ok());
      const std::string label = std::string(DTypeName(dtype)) + " rows of " + std::to_string(cols);
      const std::vector<double> got = ToDoubles((*low)[0]);
      const std::vector<double> want = Rounded(dtype, {rows, cols}, ToDoubles((*f32)[0])).values;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << label << ", element " << i;
      for (int output : {1, 2}) {
        EXPECT_EQ(ToDoubles((*low)[output]), ToDoubles((*f32)[output])) << label << ", output " << output;
      }
    }
  }
}

// Rows of 37: two 16-lane vectors and a tail of 5, whose padding must stay out of the
// mean and the variance. No bias.
TEST(LayerNormTest, RowsWithATail) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const RoundedTensor x = RandomTensor(dtype, {5, 37}, 80, -3.0, 5.0);
    const RoundedTensor scale = RandomTensor(dtype, {37}, 81);
    auto out = SingleNode("LayerNormalization", 17).Input(x.tensor).Input(scale.tensor).Run();
    ASSERT_TRUE(out.ok()) << out.status().message();
    const NormRef ref = RefLayerNorm(dtype, x.values, 5, 37, scale.values, std::vector<double>(37, 0.0), 1e-5);
    ExpectWithin(ToDoubles((*out)[0]), ref.y, ref.bound, std::string(DTypeName(dtype)) + " LayerNormalization");
  }
}

TEST(LayerNormTest, ScaleAndBiasBroadcastToTheNormalisedDims) {
  // Normalising [2, 3] per row (axis 1 of [1, 2, 3]) with Scale [3] and B [2, 1].
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 2, 3}, {1, 2, 3, 2, 4, 6});
  const Tensor scale = MakeFloatTensor(DType::kFloat32, {3}, {1, 2, 3});
  const Tensor bias = MakeFloatTensor(DType::kFloat32, {2, 1}, {10, 20});
  auto out = SingleNode("LayerNormalization", 17).Attr("axis", int64_t{1}).Attr("epsilon", 0.0f)
                 .Input(x).Input(scale).Input(bias).Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  // Mean 3, variance (4+1+0+1+1+9)/6 = 8/3.
  const double s = 1 / std::sqrt(8.0 / 3.0);
  const std::vector<double> want = {-2 * s + 10, -1 * s * 2 + 10, 0 + 10, -1 * s + 20, 1 * s * 2 + 20, 3 * s * 3 + 20};
  ExpectWithin(ToDoubles((*out)[0]), want, std::vector<double>(6, 64 * 20 * kUnitF32), "broadcast layer norm");
}

TEST(BatchNormTest, InferenceMatchesHandValues) {
  // N = 1, C = 2, two values per channel: y = (x - mean) / sqrt(var + eps) * scale + B.
  const Tensor x = MakeFloatTensor(DType::kFloat32, {1, 2, 2}, {1, 3, -2, 6});
  const Tensor scale = MakeFloatTensor(DType::kFloat32, {2}, {2, 0.5});
  const Tensor bias = MakeFloatTensor(DType::kFloat32, {2}, {1, -1});
  const Tensor mean = MakeFloatTensor(DType::kFloat32, {2}, {1, 2});
  const Tensor var = MakeFloatTensor(DType::kFloat32, {2}, {4, 16});
  auto out = SingleNode("BatchNormalization", 15)
                 .Attr("epsilon", 0.0f)
                 .Input(x).Input(scale).Input(bias).Input(mean).Input(var)
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  // Channel 0: (1-1)/2*2+1 = 1, (3-1)/2*2+1 = 3. Channel 1: (-2-2)/4*0.5-1 = -1.5, (6-2)/4*0.5-1 = -0.5.
  EXPECT_EQ(ToDoubles((*out)[0]), (std::vector<double>{1, 3, -1.5, -0.5}));
}

TEST(BatchNormTest, TrainingModeUsesBatchStatisticsAndUpdatesRunningOnes) {
  // Channel 0 values {1, 3, 5, 7} over N = 2: mean 4, population variance 5.
  const Tensor x = MakeFloatTensor(DType::kFloat32, {2, 1, 2}, {1, 3, 5, 7});
  const Tensor one = MakeFloatTensor(DType::kFloat32, {1}, {1});
  const Tensor zero = MakeFloatTensor(DType::kFloat32, {1}, {0});
  auto out = SingleNode("BatchNormalization", 15)
                 .Attr("epsilon", 0.0f)
                 .Attr("momentum", 0.75f)
                 .Attr("training_mode", int64_t{1})
                 .Input(x).Input(one).Input(zero).Input(zero).Input(one)
                 .NumOutputs(3)
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  const double s = 1 / std::sqrt(5.0);
  ExpectWithin(ToDoubles((*out)[0]), {-3 * s, -s, s, 3 * s}, std::vector<double>(4, 16 * kUnitF32), "batch norm train");
  EXPECT_NEAR(ToDoubles((*out)[1])[0], 0.25 * 4, 4 * kUnitF32);        // 0 * 0.75 + 4 * 0.25
  EXPECT_NEAR(ToDoubles((*out)[2])[0], 0.75 + 0.25 * 5, 8 * kUnitF32);  // 1 * 0.75 + 5 * 0.25
}

TEST(BatchNormTest, LowPrecisionWithFloat32Statistics) {
  // Opset 15 lets scale/B and mean/var be float32 next to a float16 X.
  const RoundedTensor x = RandomTensor(DType::kFloat16, {2, 3, 4}, 90, -3, 3);
  const std::vector<double> scale = {0.5, -1.25, 2}, bias = {0.1, 0.2, -0.3}, mean = {0.5, -0.25, 0}, var = {1, 2.5, 0.75};
  auto out = SingleNode("BatchNormalization", 15)
                 .Input(x.tensor)
                 .Input(MakeFloatTensor(DType::kFloat32, {3}, scale))
                 .Input(MakeFloatTensor(DType::kFloat32, {3}, bias))
                 .Input(MakeFloatTensor(DType::kFloat32, {3}, mean))
                 .Input(MakeFloatTensor(DType::kFloat32, {3}, var))
                 .Run();
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<double> want, bound;
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 4; ++i) {
        const double y = (x.values[(n * 3 + c) * 4 + i] - mean[c]) / std::sqrt(var[c] + 1e-5) * scale[c] + bias[c];
        want.push_back(y);
        // Five float32 operations on values of magnitude <= 10.
        bound.push_back(UnitRoundoff(DType::kFloat16) * std::abs(y) + 8 * 10 * kUnitF32 + AbsoluteFloor(DType::kFloat16));
      }
    }
  }
  ExpectWithin(ToDoubles((*out)[0]), want, bound, "float16 batch norm");
}

TEST(InstanceGroupNormTest, MatchLayerNormOfEachBlock) {
  // InstanceNorm is LayerNorm over each (n, c) plane; GroupNorm over each (n, group).
  // Planes of 15 (a 16-lane tail only) and of 35 (two vectors and a tail of 3).
  for (const Shape& shape : {Shape{2, 4, 3, 5}, Shape{2, 4, 5, 7}}) {
    const int plane_size = static_cast<int>(shape[2] * shape[3]);
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const RoundedTensor x = RandomTensor(dtype, shape, 120, -2, 3);
      const RoundedTensor scale = RandomTensor(dtype, {4}, 121), bias = RandomTensor(dtype, {4}, 122);
      auto inst = SingleNode("InstanceNormalization", 6).Input(x.tensor).Input(scale.tensor).Input(bias.tensor).Run();
      ASSERT_TRUE(inst.ok()) << inst.status().message();
      std::vector<double> row_scale, row_bias;
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < plane_size; ++i) row_scale.push_back(scale.values[c]), row_bias.push_back(bias.values[c]);
      std::vector<double> want, bound;
      for (int n = 0; n < 2; ++n) {
        for (int c = 0; c < 4; ++c) {
          const auto first = x.values.begin() + (n * 4 + c) * plane_size;
          const std::vector<double> plane(first, first + plane_size);
          const NormRef ref = RefLayerNorm(dtype, plane, 1, plane_size, std::vector<double>(plane_size, scale.values[c]),
                                           std::vector<double>(plane_size, bias.values[c]), 1e-5);
          want.insert(want.end(), ref.y.begin(), ref.y.end());
          bound.insert(bound.end(), ref.bound.begin(), ref.bound.end());
        }
      }
      ExpectWithin(ToDoubles((*inst)[0]), want, bound, std::string(DTypeName(dtype)) + " InstanceNormalization");

      // GroupNormalization-21, 2 groups of 2 channels, per-channel scale and bias.
      auto group = SingleNode("GroupNormalization", 21)
                       .Attr("num_groups", int64_t{2})
                       .Input(x.tensor).Input(scale.tensor).Input(bias.tensor)
                       .Run();
      ASSERT_TRUE(group.ok()) << group.status().message();
      want.clear();
      bound.clear();
      for (int n = 0; n < 2; ++n) {
        for (int g = 0; g < 2; ++g) {
          const auto first = x.values.begin() + (n * 4 + 2 * g) * plane_size;
          const std::vector<double> block(first, first + 2 * plane_size);
          const std::vector<double> s(row_scale.begin() + g * 2 * plane_size, row_scale.begin() + (g + 1) * 2 * plane_size);
          const std::vector<double> b(row_bias.begin() + g * 2 * plane_size, row_bias.begin() + (g + 1) * 2 * plane_size);
          const NormRef ref = RefLayerNorm(dtype, block, 1, 2 * plane_size, s, b, 1e-5);
          want.insert(want.end(), ref.y.begin(), ref.y.end());
          bound.insert(bound.end(), ref.bound.begin(), ref.bound.end());
        }
      }
      ExpectWithin(ToDoubles((*group)[0]), want, bound, std::string(DTypeName(dtype)) + " GroupNormalization");
    }
  }
}

TEST(InstanceGroupNormTest, Opset18PerGroupScaleEqualsRepeatedPerChannelScale) {
  const RoundedTensor x = RandomTensor(DType::kFloat32, {1, 6, 4}, 130);
  const Tensor group_scale = MakeFloatTensor(DType::kFloat32, {3}, {0.5, -2, 1.5});
  const Tensor group_bias = MakeFloatTensor(DType::kFloat32, {3}, {1, 0, -1});
  const Tensor channel_scale = MakeFloatTensor(DType::kFloat32, {6}, {0.5, 0.5, -2, -2, 1.5, 1.5});
  const Tensor channel_bias = MakeFloatTensor(DType::kFloat32, {6}, {1, 1, 0, 0, -1, -1});
  auto v18 = SingleNode("GroupNormalization", 18).Attr("num_groups", int64_t{3})
                 .Input(x.tensor).Input(group_scale).Input(group_bias).Run();
  auto v21 = SingleNode("GroupNormalization", 21).Attr("num_groups", int64_t{3})
                 .Input(x.tensor).Input(channel_scale).Input(channel_bias).Run();
  ASSERT_TRUE(v18.ok() && v21.ok());
  EXPECT_EQ(ToDoubles((*v18)[0]), ToDoubles((*v21)[0]));
}

TEST(LpMvnTest, HandValues) {
  const Tensor x = MakeFloatTensor(DType::kFloat32, {2, 2}, {3, 4, -1, 1});
  auto l2 = SingleNode("LpNormalization", 1).Attr("axis", int64_t{1}).Input(x).Run();
  auto l1 = SingleNode("LpNormalization", 1).Attr("axis", int64_t{0}).Attr("p", int64_t{1}).Input(x).Run();
  ASSERT_TRUE(l2.ok() && l1.ok());
  const double r = 1 / std::sqrt(2.0);
  ExpectWithin(ToDoubles((*l2)[0]), {0.6, 0.8, -r, r}, std::vector<double>(4, 4 * kUnitF32), "L2");
  ExpectWithin(ToDoubles((*l1)[0]), {0.75, 0.8, -0.25, 0.2}, std::vector<double>(4, 4 * kUnitF32), "L1");
  // MVN over axes [0, 2, 3] of [1, 2, 1, 2]: channel 0 {3, 4}, channel 1 {-1, 1}; std 0.5 and 1.
  const Tensor y = MakeFloatTensor(DType::kFloat32, {1, 2, 1, 2}, {3, 4, -1, 1});
  auto mvn = SingleNode("MeanVarianceNormalization", 13).Input(y).Run();
  ASSERT_TRUE(mvn.ok());
  ExpectWithin(ToDoubles((*mvn)[0]), {-1, 1, -1, 1}, std::vector<double>(4, 16 * kUnitF32), "MVN");
}

}  // namespace
}  // namespace onnx_amp::testing
