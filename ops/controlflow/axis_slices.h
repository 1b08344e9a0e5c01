// Slicing a tensor along one axis and stacking per-iteration tensors along a new axis:
// the data movement of Scan and Loop (scan outputs).
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace onnx_amp {

// The `index`-th slice along `axis`, with that axis removed (a copy).
Tensor SliceAlongAxis(const Tensor& tensor, int64_t axis, int64_t index);

// Shape of `count` tensors of `part_shape` stacked along the new axis `axis`.
Shape StackedShape(const Shape& part_shape, int64_t axis, int64_t count);

// Copies `part` into position `position` of the new axis `axis` of `stacked`.
void CopyIntoStack(const Tensor& part, int64_t axis, int64_t position, Tensor& stacked);

}  // namespace onnx_amp
