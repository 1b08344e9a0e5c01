// Float32/float64/integer kernel results against hand-derived values, for the cases the
// ONNX backend node tests do not pin down: rounding of Cast, integer Mod/Div signs,
// tie-breaking in TopK/ArgMax, stable ReduceLogSumExp, non-adjacent reduce axes.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/float16.h"
#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {
namespace {

std::vector<Tensor> RunOk(const SingleNode& node) {
  Expected<std::vector<Tensor>> out = node.Run();
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : std::vector<Tensor>{};
}

TEST(KernelReference, AddBroadcastsRowVector) {
  const auto out = RunOk(SingleNode("Add", 14)
                             .Input(MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}))
                             .Input(MakeTensor<float>({3}, {10, 20, 30})));
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(ToVector<float>(out[0]), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(KernelReference, IntegerDivTruncatesAndModFollowsDivisorSign) {
  const Tensor a = MakeTensor<int32_t>({4}, {-7, 7, -7, 7});
  const Tensor b = MakeTensor<int32_t>({4}, {2, -2, 3, -3});
  EXPECT_EQ(ToVector<int32_t>(RunOk(SingleNode("Div", 14).Input(a).Input(b))[0]), (std::vector<int32_t>{-3, -3, -2, -2}));
  // Python's %: the result takes the divisor's sign.
  EXPECT_EQ(ToVector<int32_t>(RunOk(SingleNode("Mod", 13).Input(a).Input(b))[0]), (std::vector<int32_t>{1, -1, 2, -2}));
  // C fmod: the dividend's sign.
  EXPECT_EQ(ToVector<int32_t>(RunOk(SingleNode("Mod", 13).Attr("fmod", int64_t{1}).Input(a).Input(b))[0]),
            (std::vector<int32_t>{-1, 1, -1, 1}));
}

// Pow with a one-element exponent of 2 squares (x * x, which the kernel takes instead of
// the library's pow): the same bits as pow for every value, the overflows, underflows,
// NaN and signed zero among them, whatever the exponent's dtype and rank.
TEST(KernelReference, PowByTwoGivesPowsBits) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> base = {3.0f, -1.5f, 0.1f, inf, -inf, std::nanf(""), -0.0f, 1e20f, 1e-23f, -7.25e-3f};
  std::vector<float> want;
  for (float v : base) want.push_back(std::pow(v, 2.0f));
  const Tensor x = MakeTensor<float>({2, 5}, base);
  for (const Tensor& exponent : {MakeTensor<float>({}, {2.0f}), MakeTensor<int64_t>({1}, {2}),
                                 MakeTensor<double>({1, 1, 1}, {2.0})}) {
    const auto out = RunOk(SingleNode("Pow", 15).Input(x).Input(exponent));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].num_elements(), 10);
    const std::vector<float> got = ToVector<float>(out[0]);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(std::memcmp(&got[i], &want[i], sizeof(float)) == 0 || (std::isnan(got[i]) && std::isnan(want[i])))
          << base[i] << "^2: " << got[i] << " against " << want[i];
    }
  }
  EXPECT_EQ(RunOk(SingleNode("Pow", 15).Input(x).Input(MakeTensor<double>({1, 1, 1}, {2.0})))[0].shape(),
            (Shape{1, 2, 5}));
  // float16: the float32 square rounded once.
  const Tensor half = MakeTensor<Float16>({3}, {Float16::FromFloat(300.0f), Float16::FromFloat(-0.3f),
                                                  Float16::FromFloat(1e-4f)});
  const Tensor two = MakeTensor<Float16>({}, {Float16::FromFloat(2.0f)});
  const auto squared = ToVector<Float16>(RunOk(SingleNode("Pow", 15).Input(half).Input(two))[0]);
  for (int i = 0; i < 3; ++i) {
    const float v = ToVector<Float16>(half)[i].ToFloat();
    EXPECT_EQ(squared[i].bits, Float16::FromFloat(v * v).bits) << v;
  }
}

// Where moves stored bits: a float16 NaN payload and -0 come through unchanged, along a
// contiguous run and with a broadcast condition and a broadcast scalar.
TEST(KernelReference, WhereMovesStoredBits) {
  const std::vector<uint16_t> x_bits = {0x7E01, 0x8000, 0x3C00, 0xFC00, 0x0001, 0x4500};
  std::vector<Float16> x_values;
  for (uint16_t b : x_bits) x_values.push_back(Float16::FromBits(b));
  const Tensor x = MakeTensor<Float16>({2, 3}, x_values);
  const Tensor y = MakeTensor<Float16>({2, 3}, std::vector<Float16>(6, Float16::FromBits(0x5555)));
  const Tensor condition = MakeTensor<bool>({2, 3}, {true, true, false, true, false, true});
  const auto same_shape = ToVector<Float16>(RunOk(SingleNode("Where", 16).Input(condition).Input(x).Input(y))[0]);
  const std::vector<uint16_t> want = {0x7E01, 0x8000, 0x5555, 0xFC00, 0x5555, 0x4500};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(same_shape[i].bits, want[i]) << i;
  const Tensor row = MakeTensor<bool>({3}, {false, true, true});
  const Tensor scalar = MakeTensor<Float16>({}, {Float16::FromBits(0x8000)});
  const auto broadcast = ToVector<Float16>(RunOk(SingleNode("Where", 16).Input(row).Input(x).Input(scalar))[0]);
  const std::vector<uint16_t> want_broadcast = {0x8000, 0x8000, 0x3C00, 0x8000, 0x0001, 0x4500};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(broadcast[i].bits, want_broadcast[i]) << i;
}

// ReduceMax and ReduceMin over rows of 100 (six 16-lane vectors and a tail of 4) give the
// in-order fold's bits (a value replaces the running one when it is more extreme or a
// NaN): the extreme value; of +0 and -0 the one met first; the last NaN's payload; an
// infinity. float16 alike.
TEST(KernelReference, ReduceMaxAndMinOverRowsKeepTheInOrderBits) {
  const int64_t cols = 100;
  std::vector<float> values(7 * cols);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (float& v : values) v = dist(gen);
  for (int64_t c = 0; c < cols; ++c) values[cols + c] = -std::abs(values[cols + c]) - 1;  // row 1: all below 0...
  values[cols + 70] = -0.0f;                                                             // ...but a -0
  values[cols + 97] = 0.0f;                                                              // then a +0 (tail)
  for (int64_t c = 0; c < cols; ++c) values[2 * cols + c] = std::abs(values[2 * cols + c]) + 1;  // row 2: above 0...
  values[2 * cols + 3] = 0.0f;                                                                 // ...a +0 first
  values[2 * cols + 40] = -0.0f;                                                               // then a -0
  values[3 * cols + 10] = std::bit_cast<float>(0x7FC00001u);  // row 3: two NaNs, the last wins
  values[3 * cols + 90] = std::bit_cast<float>(0x7FC00002u);
  values[4 * cols + 50] = std::numeric_limits<float>::infinity();   // row 4: +inf
  values[5 * cols + 98] = -std::numeric_limits<float>::infinity();  // row 5: -inf, in the tail
  // Row 6: random values only.
  const Tensor x = MakeTensor<float>({7, cols}, values);
  for (const bool max : {true, false}) {
    const auto out = RunOk(SingleNode(max ? "ReduceMax" : "ReduceMin", 18)
                               .Attr("keepdims", int64_t{0})
                               .Input(x)
                               .Input(MakeTensor<int64_t>({1}, {1})));
    const std::vector<float> got = ToVector<float>(out[0]);
    ASSERT_EQ(got.size(), 7u);
    for (int64_t r = 0; r < 7; ++r) {
      float want = max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < cols; ++c) {
        const float v = values[r * cols + c];
        if (std::isnan(v) || (max ? v > want : v < want)) want = v;
      }
      EXPECT_EQ(std::bit_cast<uint32_t>(got[r]), std::bit_cast<uint32_t>(want))
          << (max ? "ReduceMax" : "ReduceMin") << " row " << r << ": " << got[r] << " against " << want;
    }
  }
  // float16: the same rows rounded, against the float32 result of the rounded values.
  std::vector<Float16> half;
  for (float v : values) half.push_back(Float16::FromFloat(v));
  const auto half_max = ToVector<Float16>(RunOk(SingleNode("ReduceMax", 18)
                                                    .Attr("keepdims", int64_t{0})
                                                    .Input(MakeTensor<Float16>({7, cols}, half))
                                                    .Input(MakeTensor<int64_t>({1}, {1})))[0]);
  for (int64_t r : {int64_t{0}, int64_t{6}}) {
    float want = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) want = std::max(want, half[r * cols + c].ToFloat());
    EXPECT_EQ(half_max[r].ToFloat(), want) << "float16 row " << r;
  }
}

// Integer Pow is computed in double; a result beyond int64 saturates as Cast does (a plain
// conversion of 3^80 or of inf would be undefined behaviour; run fuzz target).
TEST(KernelReference, IntegerPowSaturatesBeyondTheRange) {
  const Tensor base = MakeTensor<int64_t>({4}, {3, -3, 2, 7});
  const Tensor exponent = MakeTensor<int64_t>({4}, {80, 81, 10, 0});
  EXPECT_EQ(ToVector<int64_t>(RunOk(SingleNode("Pow", 15).Input(base).Input(exponent))[0]),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 1024, 1}));
  const Tensor int32_base = MakeTensor<int32_t>({2}, {10, -10});
  const Tensor int32_exponent = MakeTensor<int32_t>({2}, {400, 401});
  EXPECT_EQ(ToVector<int32_t>(RunOk(SingleNode("Pow", 15).Input(int32_base).Input(int32_exponent))[0]),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}));
}

TEST(KernelReference, RoundIsHalfToEven) {
  const auto out = RunOk(SingleNode("Round", 11).Input(MakeTensor<float>({5}, {0.5f, 1.5f, 2.5f, -2.5f, 2.6f})));
  EXPECT_EQ(ToVector<float>(out[0]), (std::vector<float>{0, 2, 2, -2, 3}));
}

TEST(KernelReference, GeluExactAndTanh) {
  // x * Phi(x) at x = 1; the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  const Tensor x = MakeTensor<double>({1}, {1.0});
  EXPECT_NEAR(ToVector<double>(RunOk(SingleNode("Gelu", 20).Input(x))[0])[0], 0.8413447460685429, 1e-15);
  EXPECT_NEAR(ToVector<double>(RunOk(SingleNode("Gelu", 20).Attr("approximate", std::string("tanh")).Input(x))[0])[0],
              0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * 1.044715)), 1e-15);
}

TEST(KernelReference, CastDoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of 1 and 1 + 2^-10: rounding to
  // float first lands exactly on the midpoint (and then to 1.0, 0x3C00); a single
  // rounding gives 1 + 2^-10 (0x3C01). The exact midpoint itself goes to even.
  const Tensor x = MakeTensor<double>({2}, {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11});
  const auto out = RunOk(SingleNode("Cast", 19).Attr("to", int64_t{10}).Input(x));
  ASSERT_EQ(out[0].dtype(), DType::kFloat16);
  EXPECT_EQ(out[0].data<Float16>()[0].bits, 0x3C01);
  EXPECT_EQ(out[0].data<Float16>()[1].bits, 0x3C00);
}

TEST(KernelReference, CastDoubleToBFloat16RoundsOnce) {
  const Tensor x = MakeTensor<double>({1}, {1.0 + 0x1p-8 + 0x1p-30});
  const auto out = RunOk(SingleNode("Cast", 19).Attr("to", int64_t{16}).Input(x));
  EXPECT_EQ(out[0].data<BFloat16>()[0].bits, 0x3F81);  // 1 + 2^-7
}

TEST(KernelReference, CastFloat16ToBFloat16AndOverflow) {
  // 65504 needs 11 significand bits; bfloat16 keeps 8 and rounds it up to 2^16.
  const Tensor x = MakeFloatTensor(DType::kFloat16, {2}, {65504.0, -0.0});
  const auto out = RunOk(SingleNode("Cast", 19).Attr("to", int64_t{16}).Input(x));
  EXPECT_EQ(out[0].data<BFloat16>()[0].bits, 0x4780);
  EXPECT_EQ(out[0].data<BFloat16>()[1].bits, 0x8000);
  // float32 beyond the float16 range overflows to inf, as hardware does.
  const auto big = RunOk(SingleNode("Cast", 19).Attr("to", int64_t{10}).Input(MakeTensor<float>({1}, {70000.0f})));
  EXPECT_EQ(big[0].data<Float16>()[0].bits, 0x7C00);
}

TEST(KernelReference, CastFloatToIntTruncatesAndSaturates) {
  const Tensor x = MakeTensor<float>({4}, {-3.7f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN()});
  const auto out = RunOk(SingleNode("Cast", 19).Attr("to", int64_t{6}).Input(x));
  EXPECT_EQ(ToVector<int32_t>(out[0]), (std::vector<int32_t>{-3, std::numeric_limits<int32_t>::max(),
                                                              std::numeric_limits<int32_t>::min(), 0}));
}

TEST(KernelReference, TopKTiesTakeLowerIndex) {
  const Tensor x = MakeTensor<float>({4}, {3, 1, 3, 2});
  const Tensor k = MakeTensor<int64_t>({1}, {2});
  const auto largest = RunOk(SingleNode("TopK", 11).NumOutputs(2).Input(x).Input(k));
  EXPECT_EQ(ToVector<float>(largest[0]), (std::vector<float>{3, 3}));
  EXPECT_EQ(ToVector<int64_t>(largest[1]), (std::vector<int64_t>{0, 2}));
  const auto smallest = RunOk(SingleNode("TopK", 11).Attr("largest", int64_t{0}).NumOutputs(2).Input(x).Input(k));
  EXPECT_EQ(ToVector<float>(smallest[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(ToVector<int64_t>(smallest[1]), (std::vector<int64_t>{1, 3}));
}

TEST(KernelReference, ArgMaxSelectLastIndex) {
  const Tensor x = MakeTensor<float>({2, 3}, {5, 1, 5, 0, 0, -1});
  EXPECT_EQ(ToVector<int64_t>(RunOk(SingleNode("ArgMax", 13).Attr("axis", int64_t{1}).Input(x))[0]),
            (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ToVector<int64_t>(RunOk(SingleNode("ArgMax", 13)
                                        .Attr("axis", int64_t{1})
                                        .Attr("select_last_index", int64_t{1})
                                        .Input(x))[0]),
            (std::vector<int64_t>{2, 1}));
}

TEST(KernelReference, CumSumReverseExclusive) {
  const auto out = RunOk(SingleNode("CumSum", 14)
                             .Attr("reverse", int64_t{1})
                             .Attr("exclusive", int64_t{1})
                             .Input(MakeTensor<float>({3}, {1, 2, 3}))
                             .Input(MakeTensor<int32_t>({}, {0})));
  EXPECT_EQ(ToVector<float>(out[0]), (std::vector<float>{5, 3, 0}));
}

// Along the last axis of several rows (each row converted whole), every direction, in
// float32 and float16 (all sums exact in both).
TEST(KernelReference, CumSumAlongTheLastAxisOfRows) {
  const std::vector<float> values = {1, 2, 3, 4, 10, 20, 30, 40};
  struct Case {
    int64_t reverse, exclusive;
    std::vector<float> want;
  };
  const Case cases[] = {{0, 0, {1, 3, 6, 10, 10, 30, 60, 100}},
                        {0, 1, {0, 1, 3, 6, 0, 10, 30, 60}},
                        {1, 0, {10, 9, 7, 4, 100, 90, 70, 40}},
                        {1, 1, {9, 7, 4, 0, 90, 70, 40, 0}}};
  std::vector<Float16> half;
  for (float v : values) half.push_back(Float16::FromFloat(v));
  for (const Case& c : cases) {
    const auto node = [&](const Tensor& x) {
      return SingleNode("CumSum", 14)
          .Attr("reverse", c.reverse)
          .Attr("exclusive", c.exclusive)
          .Input(x)
          .Input(MakeTensor<int64_t>({}, {1}));
    };
    EXPECT_EQ(ToVector<float>(RunOk(node(MakeTensor<float>({2, 4}, values)))[0]), c.want)
        << "reverse " << c.reverse << " exclusive " << c.exclusive;
    const auto got = ToVector<Float16>(RunOk(node(MakeTensor<Float16>({2, 4}, half)))[0]);
    for (size_t i = 0; i < c.want.size(); ++i) EXPECT_EQ(got[i].ToFloat(), c.want[i]) << "float16 element " << i;
  }
}

TEST(KernelReference, ReduceSumOverNonAdjacentAxes) {
  // x[i][j][k] = 6i + 2j + k over shape [2, 3, 2]; summing axes {0, 2} leaves j:
  // sum_i sum_k (6i + 2j + k) = 4 * 2j + (0 + 6) * 2 + (0 + 1) * 2 = 8j + 14.
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
  const auto out = RunOk(SingleNode("ReduceSum", 13)
                             .Attr("keepdims", int64_t{0})
                             .Input(MakeTensor<float>({2, 3, 2}, values))
                             .Input(MakeTensor<int64_t>({2}, {0, -1})));
  EXPECT_EQ(out[0].shape(), (Shape{3}));
  EXPECT_EQ(ToVector<float>(out[0]), (std::vector<float>{14, 22, 30}));
}

TEST(KernelReference, ReduceLogSumExpDoesNotOverflow) {
  // log(e^1000 + e^1000) = 1000 + log 2, while exp(1000) alone overflows float32.
  const auto out = RunOk(SingleNode("ReduceLogSumExp", 13).Attr("keepdims", int64_t{0}).Input(MakeTensor<float>({2}, {1000, 1000})));
  EXPECT_FLOAT_EQ(ToVector<float>(out[0])[0], 1000.0f + std::log(2.0f));
}

TEST(KernelReference, ReduceEmptyAxesNoopKeepsData) {
  const Tensor x = MakeTensor<float>({2}, {-3, 4});
  const auto out = RunOk(SingleNode("ReduceL2", 18).Attr("noop_with_empty_axes", int64_t{1}).Input(x));
  EXPECT_EQ(ToVector<float>(out[0]), (std::vector<float>{-3, 4}));
}

TEST(KernelReference, ShapeMismatchIsAnError) {
  Expected<std::vector<Tensor>> out =
      SingleNode("Add", 14).Input(MakeTensor<float>({2}, {1, 2})).Input(MakeTensor<float>({3}, {1, 2, 3})).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("test_node"), std::string::npos);
}

TEST(KernelReference, StringCastIsUnsupported) {
  Expected<std::vector<Tensor>> out =
      SingleNode("Cast", 19).Attr("to", int64_t{8}).Input(MakeTensor<float>({1}, {1})).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace onnx_amp::testing
