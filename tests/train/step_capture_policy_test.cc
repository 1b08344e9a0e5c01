// When the trainer captures its step in a graph and when it runs it eagerly, and that
// it says why once per reason.
#include "runtime/train/step_capture_policy.h"

#include <gtest/gtest.h>

namespace onnx_amp {
namespace {

StepConditions Steady(int64_t batch = 64) { return {1, false, {batch, 784}, {batch, 1}}; }

TEST(StepCapturePolicyTest, WarmsUpThenCapturesThenReplays) {
  StepCapturePolicy policy("");
  StepDecision first = policy.Decide(Steady());
  EXPECT_EQ(first.mode, StepMode::kEager) << "the warm-up step makes every algorithm and buffer";
  EXPECT_EQ(first.note, "");
  EXPECT_EQ(policy.Decide(Steady()).mode, StepMode::kCapture);
  EXPECT_NE(policy.Captured(Steady()).find("captured"), std::string::npos);
  for (int step = 0; step < 3; ++step) {
    StepDecision replay = policy.Decide(Steady());
    EXPECT_EQ(replay.mode, StepMode::kReplay);
    EXPECT_EQ(replay.note, "");
  }
}

TEST(StepCapturePolicyTest, APartialBatchRunsEagerlyAndTheGraphStays) {
  StepCapturePolicy policy("");
  policy.Decide(Steady());
  ASSERT_EQ(policy.Decide(Steady()).mode, StepMode::kCapture);
  policy.Captured(Steady());
  StepDecision partial = policy.Decide(Steady(40));
  EXPECT_EQ(partial.mode, StepMode::kEager);
  EXPECT_NE(partial.note.find("[40,784] differs from the captured [64,784]"), std::string::npos) << partial.note;
  EXPECT_EQ(policy.Decide(Steady()).mode, StepMode::kReplay) << "the next epoch replays the same graph";
  EXPECT_EQ(policy.Decide(Steady(40)).note, "") << "said once";
}

TEST(StepCapturePolicyTest, AShapeThatChangesBeforeTheCaptureWarmsUpAgain) {
  StepCapturePolicy policy("");
  policy.Decide(Steady(64));
  EXPECT_EQ(policy.Decide(Steady(32)).mode, StepMode::kEager);
  EXPECT_EQ(policy.Decide(Steady(32)).mode, StepMode::kCapture);
}

TEST(StepCapturePolicyTest, AccumulationAndDataParallelismRunEagerlyWithTheirReasons) {
  StepCapturePolicy policy("");
  StepConditions accumulate = Steady();
  accumulate.micro_batches = 4;
  for (int step = 0; step < 3; ++step) {
    StepDecision decision = policy.Decide(accumulate);
    EXPECT_EQ(decision.mode, StepMode::kEager);
    EXPECT_EQ(decision.note.find("accumulate micro-batches") != std::string::npos, step == 0) << decision.note;
  }
  StepConditions parallel = Steady();
  parallel.data_parallel = true;
  StepDecision decision = policy.Decide(parallel);
  EXPECT_EQ(decision.mode, StepMode::kEager);
  EXPECT_NE(decision.note.find("data parallelism"), std::string::npos);
  EXPECT_EQ(policy.Decide(parallel).mode, StepMode::kEager);
}

TEST(StepCapturePolicyTest, AnUnavailableCaptureIsSaidOnTheFirstStep) {
  StepCapturePolicy policy("the training graph moves a value 'x' to the host for node 'n' (TopK)");
  StepDecision first = policy.Decide(Steady());
  EXPECT_EQ(first.mode, StepMode::kEager);
  EXPECT_NE(first.note.find("value 'x' to the host"), std::string::npos);
  for (int step = 0; step < 3; ++step) {
    StepDecision later = policy.Decide(Steady());
    EXPECT_EQ(later.mode, StepMode::kEager);
    EXPECT_EQ(later.note, "");
  }
}

TEST(StepCapturePolicyTest, AFailedCaptureTurnsCaptureOffForGood) {
  StepCapturePolicy policy("");
  policy.Decide(Steady());
  ASSERT_EQ(policy.Decide(Steady()).mode, StepMode::kCapture);
  EXPECT_NE(policy.CaptureFailed("operation not permitted when stream is capturing").find("not permitted"),
            std::string::npos);
  for (int step = 0; step < 3; ++step) EXPECT_EQ(policy.Decide(Steady()).mode, StepMode::kEager);
}

TEST(StepCapturePolicyTest, TheDefaultPolicyNeverCapturesAndSaysNothing) {
  StepCapturePolicy policy;
  for (int step = 0; step < 3; ++step) {
    StepDecision decision = policy.Decide(Steady());
    EXPECT_EQ(decision.mode, StepMode::kEager);
    EXPECT_EQ(decision.note, "");
  }
}

}  // namespace
}  // namespace onnx_amp
