// Optimizer updates against values derived by hand from the Keras formulas.
#include "ops/training/optimizer_math.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onnx_amp {
namespace {

TEST(OptimizerMathTest, PlainSgdStepsAgainstTheGradient) {
  float w = 1.0f, velocity = 0.0f;
  SgdUpdate(w, velocity, 0.5f, 0.1f, 0.0f, false);
  EXPECT_FLOAT_EQ(w, 0.95f);
  EXPECT_EQ(velocity, 0.0f);
}

TEST(OptimizerMathTest, MomentumAndNesterov) {
  // Two steps with g = 1, lr = 0.1, momentum 0.9:
  // v1 = -0.1, w1 = 0.9; v2 = 0.9*-0.1 - 0.1 = -0.19, w2 = 0.71.
  float w = 1.0f, v = 0.0f;
  SgdUpdate(w, v, 1.0f, 0.1f, 0.9f, false);
  SgdUpdate(w, v, 1.0f, 0.1f, 0.9f, false);
  EXPECT_FLOAT_EQ(v, -0.19f);
  EXPECT_FLOAT_EQ(w, 0.71f);
  // Nesterov: w1 = 1 + 0.9*-0.1 - 0.1 = 0.81; w2 = 0.81 + 0.9*-0.19 - 0.1 = 0.539.
  float wn = 1.0f, vn = 0.0f;
  SgdUpdate(wn, vn, 1.0f, 0.1f, 0.9f, true);
  EXPECT_FLOAT_EQ(wn, 0.81f);
  SgdUpdate(wn, vn, 1.0f, 0.1f, 0.9f, true);
  EXPECT_FLOAT_EQ(wn, 0.539f);
}

TEST(OptimizerMathTest, AdamFirstStepIsLearningRateTimesSign) {
  // Step 1: m = 0.1 g, v = 0.001 g^2, alpha = lr*sqrt(0.001)/0.1, so the update is
  // lr * sqrt(0.001)|g| / (sqrt(0.001)|g| + eps) * sign(g) ~ lr * sign(g).
  const float lr = 0.001f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f;
  const float alpha = lr * std::sqrt(1.0f - beta2) / (1.0f - beta1);
  float w = 0.5f, m = 0.0f, v = 0.0f;
  AdamUpdate(w, m, v, -2.0f, alpha, beta1, beta2, eps, 0.0f);
  EXPECT_FLOAT_EQ(m, -0.2f);
  EXPECT_FLOAT_EQ(v, 4.0f * (1.0f - beta2));  // 1 - 0.999f is 0.00099999 in float
  const double expected = 0.5 + 0.001 * std::sqrt(0.001) * 2.0 / (std::sqrt(0.001) * 2.0 + 1e-7);
  EXPECT_NEAR(w, expected, 1e-7);
}

TEST(OptimizerMathTest, AdamWDecaysTheWeightFirst) {
  // Zero gradient: only the decay acts, w *= 1 - lr*wd.
  float w = 2.0f, m = 0.0f, v = 0.0f;
  AdamUpdate(w, m, v, 0.0f, 0.001f, 0.9f, 0.999f, 1e-7f, 0.001f * 0.004f);
  EXPECT_FLOAT_EQ(w, 2.0f * (1.0f - 0.001f * 0.004f));
}

TEST(OptimizerMathTest, RmspropKerasForm) {
  // v = 0.1 * 9 = 0.9; w -= 0.001 * 3 / sqrt(0.9 + 1e-7).
  float w = 1.0f, v = 0.0f;
  RmspropUpdate(w, v, 3.0f, 0.001f, 0.9f, 1e-7f);
  EXPECT_FLOAT_EQ(v, 0.9f);
  EXPECT_NEAR(w, 1.0 - 0.003 / std::sqrt(0.9 + 1e-7), 1e-7);
}

}  // namespace
}  // namespace onnx_amp
