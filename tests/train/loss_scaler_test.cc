// The loss-scaler test sequences of the training spec (growth interval 3; F = finite
// step, I = inf step), plus the failure modes users hit with other scalers.
#include "runtime/train/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace onnx_amp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

LossScalerConfig IntervalThree() {
  LossScalerConfig config;
  config.initial_scale = 1024.0f;
  config.growth_interval = 3;
  return config;
}

// Runs one iteration whose only gradient holds `value` (scaled), then Update().
Status Step(LossScaler& scaler, float value, const std::string& name = "w.grad") {
  std::vector<float> gradient = {value, 1.0f};
  const GradientView view{name, gradient};
  ONNX_AMP_RETURN_IF_ERROR(scaler.Unscale({&view, 1}));
  return scaler.Update();
}

void RunSequence(LossScaler& scaler, const std::string& steps) {
  for (char step : steps) ASSERT_TRUE(Step(scaler, step == 'I' ? kInf : 3.0f).ok());
}

TEST(LossScalerTest, ThreeFiniteStepsGrowAndResetTheTracker) {
  LossScaler scaler(IntervalThree());
  RunSequence(scaler, "FF");
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 2);
  RunSequence(scaler, "F");
  EXPECT_EQ(scaler.scale(), 2048.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
}

TEST(LossScalerTest, InfBacksOffAndRestartsTheCount) {
  LossScaler scaler(IntervalThree());
  RunSequence(scaler, "FFIF");
  EXPECT_EQ(scaler.scale(), 512.0f);
  EXPECT_EQ(scaler.state().growth_tracker, 1);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  EXPECT_EQ(scaler.state().consecutive_skips, 0);
}

TEST(LossScalerTest, HysteresisTwoToleratesOneOverflow) {
  LossScalerConfig config = IntervalThree();
  config.hysteresis = 2;
  LossScaler scaler(config);
  RunSequence(scaler, "I");
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  RunSequence(scaler, "I");
  EXPECT_EQ(scaler.scale(), 512.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 2);
  // A finite step restores the tolerance.
  RunSequence(scaler, "FI");
  EXPECT_EQ(scaler.scale(), 512.0f);
}

TEST(LossScalerTest, GrowthNeverOverflowsToInfinity) {
  LossScalerConfig config;
  config.initial_scale = 0x1p100f;
  config.growth_factor = 0x1p10f;
  config.growth_interval = 1;
  LossScaler scaler(config);
  // 2^100 -> 2^110 -> 2^120; 2^130 would overflow float32, so growth stops there.
  RunSequence(scaler, "FFFFFFFF");
  EXPECT_EQ(scaler.scale(), 0x1p120f);

  config.initial_scale = 1.0f;
  config.max_scale = 0x1p24f;
  LossScaler capped(config);
  RunSequence(capped, "FFFFFFFF");
  EXPECT_EQ(capped.scale(), 0x1p24f);
}

TEST(LossScalerTest, FortyOverflowsStopAtTheFloorAndCountSkips) {
  LossScalerConfig config = IntervalThree();
  config.min_scale = 1.0f;
  LossScaler scaler(config);
  RunSequence(scaler, std::string(40, 'I'));
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.state().consecutive_skips, 40);
  EXPECT_EQ(scaler.state().skipped_steps, 40);
}

TEST(LossScalerTest, AllNanGradientsNeverDriveTheScaleToZero) {
  LossScaler scaler(IntervalThree());
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(Step(scaler, std::nanf("")).ok());
  EXPECT_GT(scaler.scale(), 0.0f);
  EXPECT_TRUE(std::isnormal(scaler.scale()));
}

TEST(LossScalerTest, TooManySkipsStopTheRunNamingTheTensor) {
  LossScalerConfig config = IntervalThree();
  config.max_consecutive_skips = 5;
  LossScaler scaler(config);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Step(scaler, kInf, "dense2.kernel.grad").ok());
  const Status status = Step(scaler, kInf, "dense2.kernel.grad");
  ASSERT_EQ(status.code(), ErrorCode::kNumeric);
  EXPECT_NE(status.message().find("5 optimizer steps in a row"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("dense2.kernel.grad"), std::string::npos) << status.message();
}

TEST(LossScalerTest, RaisePolicyFailsAtTheFloor) {
  LossScalerConfig config = IntervalThree();
  config.initial_scale = 2.0f;
  config.min_scale = 1.0f;
  config.floor_policy = LossScaleFloorPolicy::kRaise;
  LossScaler scaler(config);
  ASSERT_TRUE(Step(scaler, kInf).ok());
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(Step(scaler, kInf).code(), ErrorCode::kNumeric);
}

TEST(LossScalerTest, DisabledScalerKeepsScaleOneButStillChecks) {
  LossScalerConfig config = IntervalThree();
  config.enabled = false;  // bfloat16
  LossScaler scaler(config);
  RunSequence(scaler, "FFFFFFF");
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 0);
  RunSequence(scaler, "I");
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
}

TEST(LossScalerTest, FixedScaleNeverChanges) {
  LossScalerConfig config = IntervalThree();
  config.dynamic = false;
  config.initial_scale = 128.0f;
  LossScaler scaler(config);
  RunSequence(scaler, "FFFFIIF");
  EXPECT_EQ(scaler.scale(), 128.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 2);
}

TEST(LossScalerTest, UnscaleIsExactAndTheGrowthStepAppliesTheTrueGradient) {
  LossScaler scaler(IntervalThree());
  RunSequence(scaler, "FF");  // the next finite step grows the scale
  const std::vector<float> true_gradient = {0.1f, -3.75f, 1e-6f, 65504.0f};
  std::vector<float> scaled;
  for (float g : true_gradient) scaled.push_back(g * scaler.scale());
  const GradientView view{"g", scaled};
  ASSERT_TRUE(scaler.Unscale({&view, 1}).ok());
  ASSERT_TRUE(scaler.Update().ok());
  EXPECT_EQ(scaler.scale(), 2048.0f);
  EXPECT_EQ(scaled, true_gradient);  // unscaled with the old scale, before growth
}

TEST(LossScalerTest, CheckpointedStateReproducesTheTrajectory) {
  const std::string steps = "FFIFFFFIIFFFFFFIF";
  LossScaler straight(IntervalThree());
  RunSequence(straight, steps);

  LossScaler first_half(IntervalThree());
  RunSequence(first_half, steps.substr(0, 8));
  LossScaler resumed(IntervalThree());
  ASSERT_TRUE(resumed.Restore(first_half.state()).ok());
  RunSequence(resumed, steps.substr(8));

  EXPECT_EQ(resumed.scale(), straight.scale());
  EXPECT_EQ(resumed.state().growth_tracker, straight.state().growth_tracker);
  EXPECT_EQ(resumed.state().skipped_steps, straight.state().skipped_steps);
  EXPECT_EQ(resumed.state().steps, straight.state().steps);
}

TEST(LossScalerTest, MisuseIsAnError) {
  LossScaler scaler(IntervalThree());
  EXPECT_EQ(scaler.Update().code(), ErrorCode::kInvalidArgument);  // no unscale yet
  EXPECT_EQ(scaler.Unscale({}).code(), ErrorCode::kInvalidArgument);
  std::vector<float> gradient = {1.0f};
  const GradientView view{"g", gradient};
  ASSERT_TRUE(scaler.Unscale({&view, 1}).ok());
  EXPECT_EQ(scaler.Unscale({&view, 1}).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(scaler.Update().ok());

  LossScalerConfig bad;
  bad.backoff_factor = 1.5f;
  EXPECT_EQ(bad.Validate().code(), ErrorCode::kInvalidArgument);
}

TEST(LossScalerTest, NonFiniteLossSkipsTheStep) {
  LossScaler scaler(IntervalThree());
  scaler.MarkNonFinite("loss");
  ASSERT_TRUE(scaler.Update().ok());
  EXPECT_EQ(scaler.scale(), 512.0f);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
}

}  // namespace
}  // namespace onnx_amp
