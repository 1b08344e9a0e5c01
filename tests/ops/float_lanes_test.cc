// The 16-lane float32 helpers of ops/common/float_lanes.h: exp, erf, tanh and sigmoid
// against the double functions over their whole float32 ranges, their special values,
// and the lane folds.
#include "ops/common/float_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace onnx_amp::testing {
namespace {

constexpr double kUnitF32 = 0x1p-24;

// f applied to x (a multiple of 16 values) through the lanes.
template <typename Fn>
std::vector<float> LanesOf(const Fn& f, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i + kLanes <= x.size(); i += kLanes) StoreLanes(f(LoadLanes(x.data() + i)), y.data() + i);
  return y;
}

std::vector<float> ExpOf(const std::vector<float>& x) { return LanesOf([](Lanes v) { return ExpLanes(v); }, x); }
std::vector<float> LogOf(const std::vector<float>& x) { return LanesOf([](Lanes v) { return LogLanes(v); }, x); }
std::vector<float> ErfOf(const std::vector<float>& x) { return LanesOf([](Lanes v) { return ErfLanes(v); }, x); }
std::vector<float> TanhOf(const std::vector<float>& x) { return LanesOf([](Lanes v) { return TanhLanes(v); }, x); }
std::vector<float> SigmoidOf(const std::vector<float>& x) {
  return LanesOf([](Lanes v) { return SigmoidLanes(v); }, x);
}

uint32_t BitsOfFloat(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

float FloatOfBits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

// x with `steps` neighbours on either side of each edge, padded with ones to a multiple of
// 16 values.
std::vector<float> WithEdges(std::vector<float> x, std::initializer_list<float> edges, int steps = 64) {
  for (float edge : edges) {
    for (float v = edge, i = 0; i < steps; ++i, v = std::nextafter(v, -INFINITY)) x.push_back(v);
    for (float v = edge, i = 0; i < steps; ++i, v = std::nextafter(v, INFINITY)) x.push_back(v);
  }
  x.resize(x.size() + (kLanes - x.size() % kLanes) % kLanes, 1.0f);
  return x;
}

// Expects |y - ref(x)| <= units u |ref| + floor for every value, where ref (double) is at
// least `smallest` in magnitude, and |y - ref| <= smallest below; reports the worst.
template <typename Ref>
void ExpectWithinUnits(const std::string& name, const std::vector<float>& x, const std::vector<float>& y,
                       const Ref& ref_of, double units, double floor = 0x1p-150, double smallest = 0.0) {
  size_t failures = 0, worst_at = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = ref_of(static_cast<double>(x[i]));
    const double error = std::abs(y[i] - ref);
    const bool tiny = std::abs(ref) < smallest;
    if (!(error <= (tiny ? smallest : units * kUnitF32 * std::abs(ref) + floor))) ++failures;
    const double in_units = error / (std::abs(ref) * kUnitF32);
    if (ref != 0 && !tiny && in_units > worst) worst = in_units, worst_at = i;
  }
  EXPECT_EQ(failures, 0u) << "worst: " << name << "(" << x[worst_at] << ") = " << y[worst_at] << ", " << worst
                          << " u off";
}

// Every 1024th float32 between ln(FLT_MIN) and ln(FLT_MAX) by bit pattern (about 2
// million values, each binade as densely), and random ones: |exp - e^x| <= 3 u e^x.
TEST(FloatLanesTest, ExpIsWithinThreeUnitsOfRoundoff) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < BitsOfFloat(88.72f); bits += 1024) x.push_back(FloatOfBits(bits));
  for (uint32_t bits = BitsOfFloat(-0.0f); bits < BitsOfFloat(-87.33f); bits += 1024) x.push_back(FloatOfBits(bits));
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-87.33f, 88.72f);
  for (int i = 0; i < 1 << 16; ++i) x.push_back(dist(gen));
  x = WithEdges(x, {});
  ExpectWithinUnits("exp", x, ExpOf(x), [](double v) { return std::exp(v); }, 3.0, 0.0);
}

TEST(FloatLanesTest, ExpSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, -inf, inf, 88.8f, 1000.0f, -87.4f, -1e4f, -87.3f, 88.7f,
                          std::numeric_limits<float>::quiet_NaN(), -104.0f, 0x1p-30f, -0x1p-30f};
  const std::vector<float> y = ExpOf(x);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_NEAR(y[2], std::exp(1.0), 3 * kUnitF32 * std::exp(1.0));
  EXPECT_NEAR(y[3], std::exp(-1.0), 3 * kUnitF32 * std::exp(-1.0));
  EXPECT_EQ(y[4], 0.0f) << "exp(-inf)";
  EXPECT_EQ(y[5], inf) << "exp(+inf)";
  EXPECT_EQ(y[6], inf) << "exp(88.8) overflows";
  EXPECT_EQ(y[7], inf);
  EXPECT_EQ(y[8], 0.0f) << "below FLT_MIN: flushed";
  EXPECT_EQ(y[9], 0.0f) << "an attention mask's -10000";
  EXPECT_GE(y[10], std::numeric_limits<float>::min()) << "exp(-87.3) is normal";
  EXPECT_NEAR(y[11], std::exp(double{88.7f}), 3 * kUnitF32 * std::exp(double{88.7f}));
  EXPECT_TRUE(std::isnan(y[12]));
  EXPECT_EQ(y[13], 0.0f);
  EXPECT_EQ(y[14], 1.0f);
  EXPECT_EQ(y[15], 1.0f);
}

// ExpNonPositiveLanes is ExpLanes bit for bit wherever it applies: every 257th float32
// at or below -0 by bit pattern (-0 to -inf, about 8 million values, every exponent), the
// floats around the flush to zero near -87.34 and where n = floor(x log2 e + 1/2) steps,
// and NaN.
TEST(FloatLanesTest, ExpOfNonPositiveValuesIsExpBitForBit) {
  std::vector<float> x;
  for (uint32_t bits = BitsOfFloat(-0.0f); bits <= BitsOfFloat(-std::numeric_limits<float>::infinity()); bits += 257) {
    x.push_back(FloatOfBits(bits));
  }
  for (float edge : {-87.3365447f, -87.0f, -0.5f * 0.693147181f, -1.5f * 0.693147181f, -125.5f * 0.693147181f}) {
    float v = edge;
    for (int i = 0; i < 64; ++i) v = std::nextafter(v, 0.0f);
    for (int i = 0; i < 128; ++i, v = std::nextafter(v, -1000.0f)) x.push_back(v);
  }
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::quiet_NaN());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  while (x.size() % kLanes != 0) x.push_back(-1.0f);
  const std::vector<float> general = ExpOf(x);
  const std::vector<float> non_positive = LanesOf([](Lanes v) { return ExpNonPositiveLanes(v); }, x);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(BitsOfFloat(non_positive[i]), BitsOfFloat(general[i])) << "exp(" << x[i] << ")";
  }
}

// Every 1024th positive float32 by bit pattern (subnormals to the largest; about 2 million
// values) and every float32 within 64 steps of 1, where log is near 0: |log - ref| <= 3 u
// |ref|, plus half the smallest subnormal. And the special values.
TEST(FloatLanesTest, LogIsWithinThreeUnitsOfRoundoff) {
  std::vector<float> x;
  for (uint32_t bits = 1; bits < 0x7F800000u; bits += 1024) x.push_back(FloatOfBits(bits));
  x = WithEdges(x, {1.0f});
  ExpectWithinUnits("log", x, LogOf(x), [](double v) { return std::log(v); }, 3.0);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special =
      LogOf({0.0f, -0.0f, -1.0f, inf, -inf, std::nanf(""), 1.0f, 0x1p-149f, 2.0f, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(special[0], -inf);
  EXPECT_EQ(special[1], -inf);
  EXPECT_TRUE(std::isnan(special[2]));
  EXPECT_EQ(special[3], inf);
  EXPECT_TRUE(std::isnan(special[4]));
  EXPECT_TRUE(std::isnan(special[5]));
  EXPECT_EQ(special[6], 0.0f);
  EXPECT_NEAR(special[7], -149 * std::log(2.0), 3 * kUnitF32 * 149 * std::log(2.0));
  EXPECT_NEAR(special[8], std::log(2.0), 3 * kUnitF32 * std::log(2.0));
}

// Every 256th positive float32 below 4.5 by bit pattern (subnormals to where erf rounds
// to 1; about 4 million values), their negatives, and both ends of the two polynomials:
// |erf - ref| <= 3 u |ref|, plus half the smallest subnormal where the result is one.
TEST(FloatLanesTest, ErfIsWithinThreeUnitsOfRoundoff) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < BitsOfFloat(4.5f); bits += 256) {
    x.push_back(FloatOfBits(bits));
    x.push_back(-FloatOfBits(bits));
  }
  x = WithEdges(x, {0.875f, 3.95f});
  ExpectWithinUnits("erf", x, ErfOf(x), [](double v) { return std::erf(v); }, 3.0);
}

TEST(FloatLanesTest, ErfSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 10.0f, -10.0f, 3.95f,
                          1e-30f, -1e-30f, 0.5f, -0.5f, 2.0f, -2.0f, 1e30f, -1e30f};
  const std::vector<float> y = ErfOf(x);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(y[1] == 0.0f && std::signbit(y[1])) << "erf(-0) = -0";
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_EQ(y[6], -1.0f);
  EXPECT_EQ(y[7], 1.0f);
  EXPECT_NEAR(y[8], 1.1283791670955126e-30, 3 * kUnitF32 * 1.13e-30);
  EXPECT_EQ(y[9], -y[8]);
  EXPECT_EQ(y[11], -y[10]);
  EXPECT_EQ(y[13], -y[12]);
  EXPECT_EQ(y[14], 1.0f);
  EXPECT_EQ(y[15], -1.0f);
}

// Every 256th float32 of either sign below 12 by bit pattern (tanh rounds to +-1 from
// 9.01), and both sides of the switch at 0.7: |tanh - ref| <= 4 u |ref|, plus half the
// smallest subnormal.
TEST(FloatLanesTest, TanhIsWithinFourUnitsOfRoundoff) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < BitsOfFloat(12.0f); bits += 256) {
    x.push_back(FloatOfBits(bits));
    x.push_back(-FloatOfBits(bits));
  }
  x = WithEdges(x, {0.7f});
  ExpectWithinUnits("tanh", x, TanhOf(x), [](double v) { return std::tanh(v); }, 4.0);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special =
      TanhOf({0.0f, -0.0f, inf, -inf, std::nanf(""), 50.0f, -50.0f, 1e-30f, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_TRUE(special[0] == 0.0f && !std::signbit(special[0]));
  EXPECT_TRUE(special[1] == 0.0f && std::signbit(special[1]));
  EXPECT_EQ(special[2], 1.0f);
  EXPECT_EQ(special[3], -1.0f);
  EXPECT_TRUE(std::isnan(special[4]));
  EXPECT_EQ(special[5], 1.0f);
  EXPECT_EQ(special[6], -1.0f);
  EXPECT_EQ(special[7], 1e-30f);
}

// Every 256th float32 of either sign below 90 by bit pattern: |sigmoid - ref| <= 5 u |ref|
// where the result is at least FLT_MIN; below, at most FLT_MIN (exp's flush).
TEST(FloatLanesTest, SigmoidIsWithinFiveUnitsOfRoundoff) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < BitsOfFloat(90.0f); bits += 256) {
    x.push_back(FloatOfBits(bits));
    x.push_back(-FloatOfBits(bits));
  }
  x = WithEdges(x, {});
  ExpectWithinUnits("sigmoid", x, SigmoidOf(x), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 5.0, 0.0,
                    std::numeric_limits<float>::min());
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special =
      SigmoidOf({0.0f, -0.0f, inf, -inf, std::nanf(""), 100.0f, -100.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(special[0], 0.5f);
  EXPECT_EQ(special[1], 0.5f);
  EXPECT_EQ(special[2], 1.0f);
  EXPECT_EQ(special[3], 0.0f);
  EXPECT_TRUE(std::isnan(special[4]));
  EXPECT_EQ(special[5], 1.0f);
  EXPECT_EQ(special[6], 0.0f);
}

// Floor of negative non-integers, integers and halves; the folds.
TEST(FloatLanesTest, FloorAndFolds) {
  float values[kLanes];
  for (int l = 0; l < kLanes; ++l) values[l] = -4.0f + 0.5f * static_cast<float>(l);  // -4, -3.5, ..., 3.5
  float floors[kLanes];
  StoreLanes(FloorLanes(LoadLanes(values)), floors);
  for (int l = 0; l < kLanes; ++l) EXPECT_EQ(floors[l], std::floor(values[l])) << values[l];
  EXPECT_EQ(FoldMax(LoadLanes(values)), 3.5f);
  EXPECT_EQ(FoldSum(LoadLanes(values)), -4.0f);  // -4 + -3.5 + ... + 3.5, exact
  values[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FoldMax(LoadLanes(values)), 3.5f) << "a NaN lane is skipped";
}

// The folds' order: the halves, lane l with lane l + width. Lanes 0 and 8 cancel first, so
// none of the ones is lost to 2^25 (whose unit is 4), and the sum is exact; summed left
// to right, the ones of lanes 1-7 vanish into 2^25 and it gives 7.
TEST(FloatLanesTest, FoldsGoByHalves) {
  float values[kLanes];
  std::fill_n(values, kLanes, 1.0f);
  values[0] = 0x1p25f;
  values[8] = -0x1p25f;
  EXPECT_EQ(FoldSum(LoadLanes(values)), 14.0f);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill_n(values, kLanes, nan);
  EXPECT_TRUE(std::isnan(FoldMax(LoadLanes(values)))) << "all lanes NaN";
  for (int lane : {0, 7, 8, 12, 15}) {
    std::fill_n(values, kLanes, nan);
    values[lane] = -7.0f;
    EXPECT_EQ(FoldMax(LoadLanes(values)), -7.0f) << "the one number, in lane " << lane;
  }
  for (int l = 0; l < kLanes; ++l) values[l] = static_cast<float>((l * 5) % 16);  // 15 in lane 3
  EXPECT_EQ(FoldMax(LoadLanes(values)), 15.0f);
}

}  // namespace
}  // namespace onnx_amp::testing
