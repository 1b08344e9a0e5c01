// Multidirectional (NumPy) broadcasting: the output shape of several operands and an
// iteration plan over the output in runs along the innermost dimension, where each
// operand advances by stride 1 or 0 (broadcast).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

inline constexpr int kMaxBroadcastOperands = 3;
using OperandOffsets = std::array<int64_t, kMaxBroadcastOperands>;

struct BroadcastPlan {
  Shape output_shape;
  int64_t total = 0;  // output elements
  // Dimensions after dropping size-1 dims and merging contiguous ones; never empty.
  std::vector<int64_t> dims;
  std::vector<OperandOffsets> strides;  // per dim, the element stride of each operand
  OperandOffsets inner_strides{};       // strides of the last dim: 0 or 1
};

// The broadcast shape, or an InvalidArgument naming both incompatible shapes.
Expected<Shape> BroadcastShapes(std::span<const Shape> shapes);
// Plans iteration of up to kMaxBroadcastOperands operands over their broadcast shape.
Expected<BroadcastPlan> MakeBroadcastPlan(std::span<const Shape> shapes);

// Calls run(offsets, output_offset, length) for each run of consecutive output elements
// in [begin, end) that stays inside one innermost row; offsets[k] is the element
// offset of operand k at the run's start.
template <typename Run>
void ForEachRun(const BroadcastPlan& plan, int64_t begin, int64_t end, Run&& run) {
  if (begin >= end) return;
  const int rank = static_cast<int>(plan.dims.size());
  std::vector<int64_t> index(rank);
  OperandOffsets offsets{};
  int64_t rest = begin;
  for (int d = rank - 1; d >= 0; --d) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (int k = 0; k < kMaxBroadcastOperands; ++k) offsets[k] += index[d] * plan.strides[d][k];
  }
  const int last = rank - 1;
  for (int64_t pos = begin; pos < end;) {
    const int64_t length = std::min(plan.dims[last] - index[last], end - pos);
    run(offsets, pos, length);
    pos += length;
    index[last] += length;
    for (int k = 0; k < kMaxBroadcastOperands; ++k) offsets[k] += length * plan.strides[last][k];
    for (int d = last; d > 0 && index[d] == plan.dims[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
      for (int k = 0; k < kMaxBroadcastOperands; ++k) {
        offsets[k] += plan.strides[d - 1][k] - plan.dims[d] * plan.strides[d][k];
      }
    }
  }
}

}  // namespace onnx_amp
