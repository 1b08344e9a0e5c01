#include "ops/normalization/lane_statistics.h"

#include <cmath>

#include "ops/common/cpu_clones.h"
#include "ops/common/float_lanes.h"

namespace onnx_amp {
namespace {

// The lanes below `count` as all-ones masks (the values of a padded tail).
ONNX_AMP_LANES_INLINE LaneInts LanesBelow(int64_t count) {
  LaneInts index;
  for (int l = 0; l < kLanes; ++l) index[l] = l;
  return index < static_cast<int32_t>(count);
}

}  // namespace

ONNX_AMP_CPU_CLONES LaneStatistics LaneMeanAndInvStd(const float* values, int64_t count, float epsilon) {
  const int64_t body = count - count % kLanes;
  const Lanes tail = LoadPadded(values, body, count);
  Lanes sums = tail;
  for (int64_t i = 0; i < body; i += kLanes) sums += LoadLanes(values + i);
  const float mean = FoldSum(sums) / static_cast<float>(count);
  const Lanes mean_lanes = SplatLanes(mean);
  const Lanes tail_deviation = LanesBelow(count - body) ? tail - mean_lanes : SplatLanes(0.0f);
  Lanes squares = tail_deviation * tail_deviation;
  for (int64_t i = 0; i < body; i += kLanes) {
    const Lanes deviation = LoadLanes(values + i) - mean_lanes;
    squares += deviation * deviation;
  }
  return {mean, 1.0f / std::sqrt(FoldSum(squares) / static_cast<float>(count) + epsilon)};
}

ONNX_AMP_CPU_CLONES void LaneNormalize(const float* x, int64_t count, LaneStatistics statistics, const float* scale,
                                       const float* bias, float* y) {
  const Lanes mean = SplatLanes(statistics.mean), inv_std = SplatLanes(statistics.inv_std);
  MapLanes(x, count, y, [&](Lanes v, int64_t i) ONNX_AMP_LANES_LAMBDA {
    const Lanes shift = bias != nullptr ? LoadPadded(bias, i, count) : SplatLanes(0.0f);
    return (v - mean) * inv_std * LoadPadded(scale, i, count) + shift;
  });
}

ONNX_AMP_CPU_CLONES void LaneNormalizeUniform(const float* x, int64_t count, LaneStatistics statistics, float scale,
                                              float bias, float* y) {
  const Lanes mean = SplatLanes(statistics.mean), inv_std = SplatLanes(statistics.inv_std);
  const Lanes scale_lanes = SplatLanes(scale), bias_lanes = SplatLanes(bias);
  MapLanes(x, count, y, [&](Lanes v, int64_t) ONNX_AMP_LANES_LAMBDA { return (v - mean) * inv_std * scale_lanes + bias_lanes; });
}

}  // namespace onnx_amp
