// The trainer's captured step on a host-backed device that takes part in capture as the
// CUDA device does (tests/runtime/host_backed_device.h): a steady step is captured once
// and replayed, on fixed addresses and with no new device memory; the step captured
// computes what the eager step computes; and every reason to stay eager is said once.
// The device runs captured work at once and a replay runs nothing, so replays' numbers
// are the GPU test's to check (tests/cuda/cuda_graph_training_test.py).
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

using testing::HostBackedDevice;
using testing::MirrorKernels;

// The CPU kernels as device kernels; like the CUDA ones, GlobalNormClip reads its
// micro-batch count on the host. `without`: an op left to the CPU.
HostBackedDevice CapturingDevice(bool capture, const std::string& without = "") {
  HostBackedDevice device(MirrorKernels(
      CpuKernelRegistry(), [without](const KernelDef& def) { return def.op_type != without; },
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
  config.scaler.enabled = true;
  config.num_threads = 1;
  config.capture_steps = capture_steps;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return trainer.ok() ? std::move(*trainer) : nullptr;
}

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

// The captured runs read the batch, the scale, the learning rate and the step count from
// the captured step's own buffers: the step they compute is the eager step, bit for bit.
TEST(TrainerCaptureTest, TheCapturedStepComputesTheEagerStep) {
  HostBackedDevice capturing = CapturingDevice(true);
  HostBackedDevice eager_device = CapturingDevice(false);
  std::unique_ptr<Trainer> captured = MakeTrainer(&capturing);
  std::unique_ptr<Trainer> eager = MakeTrainer(&eager_device, false);
  ASSERT_NE(captured, nullptr);
  ASSERT_NE(eager, nullptr);
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    const StepResult a = Step(*captured, RandomBatch(32, seed));
    const StepResult b = Step(*eager, RandomBatch(32, seed));
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.skipped, b.skipped);
  }
  ASSERT_EQ(capturing.captures, 1);
  ASSERT_TRUE(captured->MoveStateToHost().ok());
  ASSERT_TRUE(eager->MoveStateToHost().ok());
  EXPECT_EQ(captured->optimizer().step_count(), eager->optimizer().step_count());
  for (size_t p = 0; p < captured->weights().size(); ++p) {
    const Tensor& x = captured->weights()[p].tensor;
    const Tensor& y = eager->weights()[p].tensor;
    ASSERT_EQ(x.bytes(), y.bytes());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.bytes()), 0) << captured->weights()[p].name;
  }
}

TEST(TrainerCaptureTest, StateMovedToTheHostAndBackIsCopiedToTheCapturedAddresses) {
  HostBackedDevice device = CapturingDevice(true);
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  Step(*trainer, RandomBatch(32, 1));
  Step(*trainer, RandomBatch(32, 2));
  ASSERT_EQ(device.captures, 1);
  const void* captured_address = trainer->weights()[0].tensor.raw_data();
  ASSERT_TRUE(trainer->MoveStateToHost().ok());  // a checkpoint
  const std::vector<float> saved(trainer->weights()[0].tensor.data<float>(),
                                 trainer->weights()[0].tensor.data<float>() + trainer->weights()[0].tensor.num_elements());
  Step(*trainer, RandomBatch(32, 3));
  EXPECT_EQ(device.replays, 2);
  EXPECT_EQ(trainer->weights()[0].tensor.raw_data(), captured_address);
  // The replay runs nothing here, so the captured buffer holds what the host had.
  EXPECT_EQ(std::memcmp(captured_address, saved.data(), saved.size() * sizeof(float)), 0);
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

TEST(TrainerCaptureTest, AFailedCaptureFallsBackToEagerStepsAndSaysWhy) {
  HostBackedDevice device = CapturingDevice(true);
  device.fail_capture = true;
  std::unique_ptr<Trainer> trainer = MakeTrainer(&device);
  ASSERT_NE(trainer, nullptr);
  Step(*trainer, RandomBatch(32, 1));
  const StepResult failed = Step(*trainer, RandomBatch(32, 2));
  EXPECT_NE(failed.note.find("the capture failed: capture refused by the test"), std::string::npos) << failed.note;
  EXPECT_TRUE(std::isfinite(failed.loss));
  EXPECT_EQ(Step(*trainer, RandomBatch(32, 3)).note, "");
  EXPECT_EQ(device.captures, 1);
  EXPECT_EQ(device.replays, 0);
  EXPECT_EQ(device.memory_stats().private_bytes, 0u) << "the failed capture's blocks are shared again";
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
