// The trainer the data-parallel tests join over in-process ranks: the bundled MLP
// (models/mlp_u64.onnx: 784-64-64-10) converted to mixed_float16, Adam, one thread, on the
// CPU or on a device, and random batches of 16 samples.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "runtime/train/trainer.h"
#include "tests/train/mlp_training_graph.h"

namespace onnx_amp::testing {

inline std::unique_ptr<Trainer> MixedFloat16Trainer(Device* device = nullptr) {
  Expected<TrainingGraph> graph = MlpTrainingGraph(PolicyKind::kMixedFloat16);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.num_threads = 1;
  config.device = device;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return std::move(*trainer);
}

// 16 samples in [0, 1).
inline Batch MakeBatch(uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch batch{Tensor::Empty(DType::kFloat32, {16, 784}), Tensor::Empty(DType::kInt64, {16, 1})};
  for (int64_t i = 0; i < 16 * 784; ++i) batch.data.data<float>()[i] = pixel(generator);
  for (int64_t i = 0; i < 16; ++i) batch.target.data<int64_t>()[i] = static_cast<int64_t>(generator() % 10);
  return batch;
}

}  // namespace onnx_amp::testing
