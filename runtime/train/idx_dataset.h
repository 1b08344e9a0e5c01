// Reads the IDX format of MNIST / Fashion-MNIST (plain or gzip-compressed): images
// become float32 scaled to [0, 1] (divided by 255, as the Keras guide does), labels
// become int64.
#pragma once

#include <filesystem>
#include <optional>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

struct LabeledData {
  Tensor features;  // float32 [N, rows, cols] for IDX images
  Tensor labels;    // int64 [N]
};

// One images file and one labels file; errors name the file (bad magic, truncated,
// counts that disagree).
Expected<LabeledData> LoadIdxPair(const std::filesystem::path& images, const std::filesystem::path& labels);

struct TrainEvalData {
  LabeledData train;
  std::optional<LabeledData> eval;
};

// A folder holding the usual four files (train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each optionally .gz); the t10k pair,
// when present, is the evaluation set.
Expected<TrainEvalData> LoadIdxFolder(const std::filesystem::path& folder);

}  // namespace onnx_amp
