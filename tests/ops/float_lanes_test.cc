// The 16-lane float32 helpers of ops/common/float_lanes.h: exp against the double
// exponential over its whole normal range, its special values, and the lane folds.
#include "ops/common/float_lanes.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace onnx_amp::testing {
namespace {

constexpr double kUnitF32 = 0x1p-24;

std::vector<float> ExpOf(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i + kLanes <= x.size(); i += kLanes) StoreLanes(ExpLanes(LoadLanes(x.data() + i)), y.data() + i);
  return y;
}

// Every 1024th float32 between ln(FLT_MIN) and ln(FLT_MAX) by bit pattern (about 2
// million values, each binade as densely), and random ones: |exp - e^x| <= 3 u e^x.
TEST(FloatLanesTest, ExpIsWithinThreeUnitsOfRoundoff) {
  std::vector<float> x;
  const auto bits_of = [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return bits;
  };
  const auto float_of = [](uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  };
  for (uint32_t bits = 0; bits < bits_of(88.72f); bits += 1024) x.push_back(float_of(bits));
  for (uint32_t bits = bits_of(-0.0f); bits < bits_of(-87.33f); bits += 1024) x.push_back(float_of(bits));
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-87.33f, 88.72f);
  for (int i = 0; i < 1 << 16; ++i) x.push_back(dist(gen));
  x.resize(x.size() - x.size() % kLanes);
  const std::vector<float> y = ExpOf(x);
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(static_cast<double>(x[i]));
    const double error = std::abs(y[i] - ref) / ref / kUnitF32;
    if (error > worst) worst = error, worst_at = i;
  }
  EXPECT_LE(worst, 3.0) << "exp(" << x[worst_at] << ") = " << y[worst_at] << ", " << worst << " u off";
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

}  // namespace
}  // namespace onnx_amp::testing
