// The statistics LayerNormalization, InstanceNormalization and GroupNormalization
// normalise a block of values with: its mean and 1 / sqrt(variance + epsilon), in two
// passes (mean, then squared deviations) in the compute type, float32 or float64 for
// float64 values.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/common/float_compute.h"

namespace onnx_amp {

template <typename T>
struct BlockStatistics {
  ComputeType<T> mean;
  ComputeType<T> inv_std;
};

template <typename T>
BlockStatistics<T> MeanAndInvStd(const T* values, int64_t count, ComputeType<T> epsilon) {
  using Acc = ComputeType<T>;
  Acc sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += LoadValue(values[i]);
  const Acc mean = sum / static_cast<Acc>(count);
  Acc squares = 0;
  for (int64_t i = 0; i < count; ++i) {
    const Acc d = LoadValue(values[i]) - mean;
    squares += d * d;
  }
  return {mean, Acc(1) / std::sqrt(squares / static_cast<Acc>(count) + epsilon)};
}

}  // namespace onnx_amp
