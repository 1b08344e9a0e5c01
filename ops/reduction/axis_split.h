// A tensor seen as [outer, axis_dim, inner] around one axis, for the single-axis ops
// (ArgMax/ArgMin, CumSum, TopK, Hardmax).
#pragma once

#include <string>

#include "runtime/exec/kernel.h"

namespace onnx_amp {

struct AxisSplit {
  int64_t axis = 0;  // normalised
  int64_t outer = 1;
  int64_t dim = 1;
  int64_t inner = 1;
};

inline Expected<AxisSplit> SplitAtAxis(const KernelContext& context, const Shape& shape, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    return context.Error(ErrorCode::kInvalidModel,
                         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  AxisSplit split;
  split.axis = axis < 0 ? axis + rank : axis;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < split.axis) split.outer *= shape[d];
    else if (d == split.axis) split.dim = shape[d];
    else split.inner *= shape[d];
  }
  return split;
}

}  // namespace onnx_amp
