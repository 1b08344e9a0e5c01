// The largest or smallest of a float32 row in 16 lanes (ops/common/float_lanes.h), built
// per instruction set: for ReduceMax and ReduceMin over contiguous rows, whose scalar fold
// is a compare and a branch per value.
#pragma once

#include <cstdint>

namespace onnx_amp {

// max (or min) of values[0, count) and `start`. Where the answer is +-0 or a NaN the lanes
// cannot tell which of the equal values, or which NaN, came first, so the caller folds the
// row in order instead (`exact` false).
struct LaneExtremum {
  float value;
  bool exact;
};
LaneExtremum LaneMaxOrMin(bool max, const float* values, int64_t count, float start);

}  // namespace onnx_amp
