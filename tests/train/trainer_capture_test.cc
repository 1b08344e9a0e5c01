// The trainer's captured step on a host-backed device that captures as the CUDA device
// does (tests/runtime/host_backed_device.h, kernel_tape.h: a capture records the
// kernels with their addresses and runs nothing, a replay runs them again on those
// addresses): a steady step is captured once and replayed with no new device memory;
// replayed steps are the eager steps bit for bit while the batch, the loss scale, the
// learning rate and the step count change from step to step, across a skipped step and a
// checkpoint's trip to the host; and every reason to stay eager is said once. The same
// comparison on a GPU: tests/cuda/cuda_graph_training_test.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "ops/cpu_kernels.h"
#include "runtime/train/trainer.h"
#include "tests/runtime/host_backed_device.h"
#include "tests/train/mlp_training_graph.h"

namespace onnx_amp {
namespace {

using testing::CapturableMirrorKernels;
using testing::HostBackedDevice;

// The CPU kernels as device kernels; like the CUDA ones, GlobalNormClip reads its
// micro-batch count on the host. `without`: an op left to the CPU.
HostBackedDevice CapturingDevice(bool capture, const std::string& without = "") {
  HostBackedDevice device(CapturableMirrorKernels(
      [without](const KernelDef& def) { return def.op_type != without; },
      [](KernelDef& def) {
        if (def.op_type == "GlobalNormClip") def.host_inputs = 1u << 0;
      }));
  device.capture = capture;
  return device;
}

std::unique_ptr<Trainer> MakeTrainer(Device* device, bool capture_steps = true) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(PolicyKind::kMixedFloat16);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.device = device;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.01f;
  // A learning rate, and with the step count Adam's step size, that change every step,
  // and a loss scale that grows every other finite step: stale values would show.
  config.schedule.kind = LrScheduleKind::kCosine;
  config.schedule.total_steps = 20;
  config.scaler.enabled = true;
  config.scaler.initial_scale = 1024.0f;
  config.scaler.growth_interval = 2;
  config.num_threads = 1;
  config.capture_steps = capture_steps;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return trainer.ok() ? std::move(*trainer) : nullptr;
}

// A batch whose first pixel is NaN: its step is skipped.
Batch NanBatch(int64_t n, uint64_t seed);

Batch RandomBatch(int64_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch batch;
  batch.data = Tensor::Empty(DType::kFloat32, {n, 784});
  batch.target = Tensor::Empty(DType::kInt64, {n, 1});
  for (int64_t i = 0; i < n * 784; ++i) batch.data.data<float>()[i] = pixel(generator);
  for (int64_t i = 0; i < n; ++i) batch.target.data<int64_t>()[i] = static_cast<int64_t>(generator() % 10);
  return batch;
}

Batch NanBatch(int64_t n, uint64_t seed) {
  Batch batch = RandomBatch(n, seed);
  batch.data.data<float>()[0] = std::nanf("");
  return batch;
}

void ExpectSameState(Trainer& a, Trainer& b) {
  ASSERT_TRUE(a.MoveStateToHost().ok());
  ASSERT_TRUE(b.MoveStateToHost().ok());
  EXPECT_EQ(a.optimizer().step_count(), b.optimizer().step_count());
  EXPECT_EQ(a.scaler().scale(), b.scaler().scale());
  for (size_t p = 0; p < a.weights().size(); ++p) {
    const Tensor& x = a.weights()[p].tensor;
    const Tensor& y = b.weights()[p].tensor;
    ASSERT_EQ(x.bytes(), y.bytes());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.bytes()), 0) << a.weights()[p].name;
    for (int k = 0; k < a.optimizer().num_slots(); ++k) {
      EXPECT_EQ(std::memcmp(a.optimizer().slots(k)[p].raw_data(), b.optimizer().slots(k)[p].raw_data(), x.bytes()), 0)
          << a.weights()[p].name << " slot " << k;
    }
  }
}

StepResult Step(Trainer& trainer, const Batch& batch) {
  Expected<StepResult> result = trainer.Step({&batch, 1});
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? *result : StepResult{};
}

TEST(TrainerCaptureTest, ASteadyStepIsCapturedOnceThenReplayedOnFixedMemory) {
  HostBackedDevice device = CapturingDevice(true);
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  EXPECT_EQ(Step(*trainer, RandomBatch(32, 1)).note, "");
  EXPECT_EQ(device.captures, 0) << "the first step of a shape is the warm-up";
  const StepResult captured = Step(*trainer, RandomBatch(32, 2));
  EXPECT_NE(captured.note.find("captured"), std::string::npos) << captured.note;
  EXPECT_EQ(device.captures, 1);
  EXPECT_EQ(device.replays, 1) << "a capture runs nothing: the step is replayed at once";
  std::vector<const void*> addresses;
  for (const NamedTensor& weight : trainer->weights()) addresses.push_back(weight.tensor.raw_data());
  const CachingAllocatorStats before = device.memory_stats();
  const int reads_before = device.copies_to_host;
  for (int step = 3; step <= 5; ++step) {
    const StepResult replayed = Step(*trainer, RandomBatch(32, step));
    EXPECT_EQ(replayed.note, "");
  }
  EXPECT_EQ(device.captures, 1);
  EXPECT_EQ(device.replays, 4);
  EXPECT_EQ(device.memory_stats().raw_allocations, before.raw_allocations) << "a replay allocates nothing";
  EXPECT_GT(device.memory_stats().private_bytes, 0u) << "the graph's blocks are its own";
  EXPECT_EQ(device.copies_to_host - reads_before, 3 * 3) << "per replay: the loss, the skip flag, the first non-finite";
  for (size_t p = 0; p < addresses.size(); ++p) {
    EXPECT_EQ(trainer->weights()[p].tensor.raw_data(), addresses[p]) << "updated in place: " << trainer->weights()[p].name;
  }
}

// Replays read the batch, the scale, the learning rate and the step count from the
// captured step's own buffers and update the weights in place: every replayed step is
// the eager step, bit for bit, a skipped one included.
TEST(TrainerCaptureTest, ReplayedStepsAreTheEagerStepsBitForBit) {
  HostBackedDevice capturing = CapturingDevice(true);
  HostBackedDevice eager_device = CapturingDevice(false);
  std::unique_ptr<Trainer> captured = MakeTrainer(&capturing);
  std::unique_ptr<Trainer> eager = MakeTrainer(&eager_device, false);
  ASSERT_NE(captured, nullptr);
  ASSERT_NE(eager, nullptr);
  std::vector<float> scales;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Batch batch = seed == 5 ? NanBatch(32, seed) : RandomBatch(32, seed);
    const StepResult a = Step(*captured, batch);
    const StepResult b = Step(*eager, batch);
    if (seed == 5) {
      EXPECT_TRUE(std::isnan(a.loss) && std::isnan(b.loss));
    } else {
      EXPECT_EQ(a.loss, b.loss) << "step " << seed;
    }
    EXPECT_EQ(a.skipped, b.skipped) << "step " << seed;
    EXPECT_EQ(a.skipped, seed == 5);
    EXPECT_EQ(a.scale, b.scale);
    scales.push_back(a.scale);
  }
  EXPECT_EQ(capturing.captures, 1);
  EXPECT_EQ(capturing.replays, 7);
  EXPECT_NE(scales.front(), scales.back()) << "the scale changed between replays";
  ExpectSameState(*captured, *eager);
}

TEST(TrainerCaptureTest, AFailedCaptureRunsNothingAndTheStepRunsEagerly) {
  HostBackedDevice failing = CapturingDevice(true);
  failing.fail_capture = true;
  HostBackedDevice eager_device = CapturingDevice(false);
  std::unique_ptr<Trainer> captured = MakeTrainer(&failing);
  std::unique_ptr<Trainer> eager = MakeTrainer(&eager_device, false);
  ASSERT_NE(captured, nullptr);
  ASSERT_NE(eager, nullptr);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const StepResult a = Step(*captured, RandomBatch(32, seed));
    const StepResult b = Step(*eager, RandomBatch(32, seed));
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.note.find("the capture failed: capture refused by the test") != std::string::npos, seed == 2) << a.note;
  }
  EXPECT_EQ(failing.captures, 1);
  EXPECT_EQ(failing.replays, 0);
  EXPECT_EQ(failing.memory_stats().private_bytes, 0u) << "the failed capture's blocks are shared again";
  ExpectSameState(*captured, *eager);
}

TEST(TrainerCaptureTest, StateMovedToTheHostAndBackIsCopiedToTheCapturedAddresses) {
  HostBackedDevice capturing = CapturingDevice(true);
  HostBackedDevice eager_device = CapturingDevice(false);
  std::unique_ptr<Trainer> captured = MakeTrainer(&capturing);
  std::unique_ptr<Trainer> eager = MakeTrainer(&eager_device, false);
  ASSERT_NE(captured, nullptr);
  ASSERT_NE(eager, nullptr);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    if (seed == 4) {  // a checkpoint: the state goes to the host and comes back as new device tensors
      ASSERT_TRUE(captured->MoveStateToHost().ok());
      ASSERT_TRUE(eager->MoveStateToHost().ok());
    }
    EXPECT_EQ(Step(*captured, RandomBatch(32, seed)).loss, Step(*eager, RandomBatch(32, seed)).loss) << seed;
  }
  EXPECT_EQ(capturing.captures, 1);
  EXPECT_EQ(capturing.replays, 5);
  ExpectSameState(*captured, *eager);
}

TEST(TrainerCaptureTest, APartialBatchRunsEagerlyAndTheNextFullOneReplays) {
  HostBackedDevice device = CapturingDevice(true);
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  Step(*trainer, RandomBatch(32, 1));
  Step(*trainer, RandomBatch(32, 2));
  const StepResult partial = Step(*trainer, RandomBatch(20, 3));
  EXPECT_NE(partial.note.find("[20,784] differs from the captured [32,784]"), std::string::npos) << partial.note;
  EXPECT_EQ(device.replays, 1);
  Step(*trainer, RandomBatch(32, 4));
  EXPECT_EQ(device.captures, 1);
  EXPECT_EQ(device.replays, 2);
}

TEST(TrainerCaptureTest, AccumulationRunsEagerlyAndSaysWhy) {
  HostBackedDevice device = CapturingDevice(true);
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  const Batch micro[2] = {RandomBatch(16, 1), RandomBatch(16, 2)};
  for (int step = 0; step < 3; ++step) {
    Expected<StepResult> result = trainer->Step(micro);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_EQ(result->note.find("accumulate micro-batches") != std::string::npos, step == 0) << result->note;
  }
  EXPECT_EQ(device.captures, 0);
}

TEST(TrainerCaptureTest, ANodeLeftToTheCpuKeepsStepsEagerAndIsNamed) {
  HostBackedDevice device = CapturingDevice(true, "Cast");
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  const StepResult first = Step(*trainer, RandomBatch(32, 1));
  EXPECT_NE(first.note.find("the training graph moves a value"), std::string::npos) << first.note;
  Step(*trainer, RandomBatch(32, 2));
  EXPECT_EQ(device.captures, 0);
}

TEST(TrainerCaptureTest, NoCaptureWhenTurnedOffOrTheDeviceCannot) {
  HostBackedDevice off_device = CapturingDevice(true);
  std::unique_ptr<Trainer> off = MakeTrainer(&off_device, false);
  HostBackedDevice plain_device = CapturingDevice(false);
  std::unique_ptr<Trainer> plain = MakeTrainer(&plain_device);
  ASSERT_NE(off, nullptr);
  ASSERT_NE(plain, nullptr);
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(Step(*off, RandomBatch(32, step)).note, "") << "--no-cuda-graph asks for it: nothing to say";
    const StepResult result = Step(*plain, RandomBatch(32, step));
    EXPECT_EQ(result.note.find("cannot capture") != std::string::npos, step == 0) << result.note;
  }
  EXPECT_EQ(off_device.captures, 0);
  EXPECT_EQ(plain_device.captures, 0);
}

}  // namespace
}  // namespace onnx_amp
