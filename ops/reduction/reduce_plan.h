// Where each output of a reduction reads its inputs. Reduced axes that form one block
// (after dropping size-1 dims) give the (outer, K, inner) form, walked with unit
// strides; other axis sets fall back to per-output and per-step offset tables.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

struct ReducePlan {
  Shape output_shape;
  int64_t outputs = 0;  // M
  int64_t reduced = 0;  // K, inputs folded into each output
  bool blocked = false;
  int64_t outer = 1;  // blocked form: input index = (o * K + k) * inner + i
  int64_t inner = 1;
  std::vector<int64_t> output_offsets;  // general form: input index = output_offsets[m] + step_offsets[k]
  std::vector<int64_t> step_offsets;
};

// `reduce[d]` tells whether axis d is reduced.
ReducePlan MakeReducePlan(const Shape& input, const std::vector<bool>& reduce, bool keepdims);

// Normalises axes against `rank` (negative axes count from the end) into a per-axis
// mask; out-of-range axes are an InvalidModel error naming the node.
Expected<std::vector<bool>> AxesMask(const KernelContext& context, const std::vector<int64_t>& axes, int64_t rank);

// The reduce axes of a Reduce* node: the `axes` input when the op's opset takes it
// (`axes_input_since`), else the attribute. Empty means all axes, unless
// noop_with_empty_axes is set, which returns an all-false mask (identity).
Expected<std::vector<bool>> ReduceAxesMask(const KernelContext& context, int64_t rank, int axes_input_since);

}  // namespace onnx_amp
