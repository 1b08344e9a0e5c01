#include "ops/reduction/lane_extremum.h"

#include <cmath>

#include "ops/common/cpu_clones.h"
#include "ops/common/float_lanes.h"

namespace onnx_amp {

ONNX_AMP_CPU_CLONES LaneExtremum LaneMaxOrMin(bool max, const float* values, int64_t count, float start) {
  // Minima as maxima of the negated values.
  const float sign = max ? 1.0f : -1.0f;
  Lanes best = SplatLanes(sign * start);
  // v - v is 0, or NaN for a NaN or an infinity: their sum flags both (an infinity only
  // costs the in-order fold), without a compare per value.
  Lanes check = SplatLanes(0.0f);
  const int64_t body = count - count % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    const Lanes v = LoadLanes(values + i) * sign;
    check += v - v;
    best = MaxLanes(best, v);
  }
  float result = FoldMax(best);
  bool any_nan = std::isnan(FoldSum(check));
  for (int64_t i = body; i < count; ++i) {
    const float v = values[i] * sign;
    any_nan |= std::isnan(v);
    result = v > result ? v : result;
  }
  result *= sign;
  return {result, !any_nan && !std::isnan(result) && result != 0.0f};
}

}  // namespace onnx_amp
