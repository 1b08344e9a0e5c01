// The trainer on a device, checked on a host-backed device whose kernels are the CPU
// kernels (tests/runtime/host_backed_device.h): weights and optimizer slots live on the
// device between steps, every step is bit-identical to the CPU trainer's, a checkpoint
// and an export read them back to the host, and per step only the batch goes to the
// device and only the loss and the skip flag come back.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "ops/cpu_kernels.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "tests/train/mlp_training_graph.h"
#include "tests/runtime/host_backed_device.h"

namespace onnx_amp {
namespace {

using testing::HostBackedDevice;
using testing::MirrorKernels;

std::unique_ptr<Trainer> MakeTrainer(Device* device) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(PolicyKind::kMixedFloat16);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.device = device;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.scaler.enabled = true;
  config.num_threads = 1;
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

// Every CPU kernel, also as a kernel of the device; GlobalNormClip reads its micro-batch
// count on the host, as the CUDA kernel does (the other per-step scalars are read on the
// device).
HostBackedDevice MirrorDevice() {
  return HostBackedDevice(MirrorKernels(
      CpuKernelRegistry(), [](const KernelDef&) { return true; },
      [](KernelDef& def) {
        if (def.op_type == "GlobalNormClip") def.host_inputs = 1u << 0;
      }));
}

void ExpectSameState(Trainer& a, Trainer& b) {
  ASSERT_TRUE(a.MoveStateToHost().ok());
  ASSERT_TRUE(b.MoveStateToHost().ok());
  ASSERT_EQ(a.weights().size(), b.weights().size());
  for (size_t p = 0; p < a.weights().size(); ++p) {
    const Tensor& x = a.weights()[p].tensor;
    const Tensor& y = b.weights()[p].tensor;
    EXPECT_EQ(y.device(), DeviceKind::kCpu);
    ASSERT_EQ(x.bytes(), y.bytes());
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.bytes()), 0) << a.weights()[p].name;
    for (int k = 0; k < a.optimizer().num_slots(); ++k) {
      EXPECT_EQ(std::memcmp(a.optimizer().slots(k)[p].raw_data(), b.optimizer().slots(k)[p].raw_data(), x.bytes()), 0);
    }
  }
}

TEST(TrainerDeviceTest, StepsOnADeviceMatchTheCpuBitForBit) {
  HostBackedDevice device = MirrorDevice();
  std::unique_ptr<Trainer> cpu = MakeTrainer(nullptr);
  std::unique_ptr<Trainer> on_device = MakeTrainer(&device);
  ASSERT_TRUE(cpu && on_device);
  EXPECT_EQ(on_device->weights()[0].tensor.device(), DeviceKind::kCuda) << "the state lives on the device";
  for (uint64_t step = 0; step < 3; ++step) {
    const Batch batch = RandomBatch(16, step);
    Expected<StepResult> a = cpu->Step({&batch, 1});
    device.copies_to_device = device.copies_to_host = 0;
    Expected<StepResult> b = on_device->Step({&batch, 1});
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
    EXPECT_EQ(a->loss, b->loss);
    EXPECT_EQ(a->skipped, b->skipped);
    EXPECT_EQ(on_device->weights()[0].tensor.device(), DeviceKind::kCuda) << "no state round trip per step";
    // In: data, target, the seed, and the update's scale, learning rate and step (the
    // loss goes from graph to graph on the device); out: the skip flag, the first
    // non-finite gradient and the loss.
    EXPECT_EQ(device.copies_to_device, 6);
    EXPECT_EQ(device.copies_to_host, 3);
  }
  ExpectSameState(*cpu, *on_device);
}

TEST(TrainerDeviceTest, CheckpointRoundTripContinuesAsOnTheCpu) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("onnx_amp_device_checkpoint_" + std::to_string(::getpid()) + ".npz");
  HostBackedDevice device = MirrorDevice();
  std::unique_ptr<Trainer> cpu = MakeTrainer(nullptr);
  std::unique_ptr<Trainer> first = MakeTrainer(&device);
  const Batch one = RandomBatch(8, 11), two = RandomBatch(8, 12);
  ASSERT_TRUE(cpu->Step({&one, 1}).ok());
  ASSERT_TRUE(first->Step({&one, 1}).ok());
  ASSERT_TRUE(SaveCheckpoint(path, *first, DataPosition{}).ok());
  std::unique_ptr<Trainer> resumed = MakeTrainer(&device);
  DataPosition position;
  ASSERT_TRUE(LoadCheckpoint(path, *resumed, position).ok());
  std::filesystem::remove(path);
  ASSERT_TRUE(cpu->Step({&two, 1}).ok());
  ASSERT_TRUE(resumed->Step({&two, 1}).ok());
  ExpectSameState(*cpu, *resumed);
}

}  // namespace
}  // namespace onnx_amp
