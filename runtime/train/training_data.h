// Training data: an IDX folder (idx_dataset.h; t10k is the evaluation set) or an .npz
// with arrays x, y (and optionally x_test, y_test). uint8 features are scaled by 1/255.
// Batches are reshaped to the model's input shape; the order of each epoch is a seeded
// shuffle, so (seed, epoch, batch) says where the stream stands.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/train/trainer.h"

namespace onnx_amp {

struct Dataset {
  Tensor features;  // float32 [N, ...]
  Tensor labels;    // int64 [N] or float32 [N, ...]
  int64_t size() const { return features.defined() ? features.dim(0) : 0; }
};

struct TrainingData {
  Dataset train;
  std::optional<Dataset> eval;
};

// Errors name the path and the array.
Expected<TrainingData> LoadTrainingData(const std::filesystem::path& path);

// Keeps the first `count` samples (all when count <= 0 or larger than the set).
Dataset TakeFirst(const Dataset& data, int64_t count);

// A permutation of [0, n) for `epoch`, the same on every run with the same seed.
std::vector<int64_t> EpochOrder(int64_t n, uint64_t seed, int64_t epoch);

// The batch of `indices`: data reshaped to [B] + sample_shape; targets int64 [B, 1] for
// sparse losses, float32 [B, classes] for MSE (int labels are one-hot encoded).
Expected<Batch> MakeBatch(const Dataset& data, std::span<const int64_t> indices, const Shape& sample_shape,
                          LossKind loss, int64_t classes);

}  // namespace onnx_amp
