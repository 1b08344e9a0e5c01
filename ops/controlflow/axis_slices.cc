#include "ops/controlflow/axis_slices.h"

#include <cstring>

#include "runtime/core/status.h"

namespace onnx_amp {
namespace {

int64_t Product(const Shape& shape, int64_t begin, int64_t end) {
  int64_t product = 1;
  for (int64_t i = begin; i < end; ++i) product *= shape[i];
  return product;
}

}  // namespace

Tensor SliceAlongAxis(const Tensor& tensor, int64_t axis, int64_t index) {
  const Shape& shape = tensor.shape();
  ONNX_AMP_ASSERT(axis >= 0 && axis < tensor.rank() && index >= 0 && index < shape[axis], "slice out of range");
  Shape slice_shape = shape;
  slice_shape.erase(slice_shape.begin() + axis);
  Tensor slice = Tensor::Empty(tensor.dtype(), slice_shape);
  const int64_t outer = Product(shape, 0, axis);
  const size_t inner = static_cast<size_t>(Product(shape, axis + 1, tensor.rank())) * DTypeSize(tensor.dtype());
  const char* src = static_cast<const char*>(tensor.raw_data());
  char* dst = static_cast<char*>(slice.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * inner, src + (o * shape[axis] + index) * inner, inner);
  }
  return slice;
}

Shape StackedShape(const Shape& part_shape, int64_t axis, int64_t count) {
  Shape shape = part_shape;
  shape.insert(shape.begin() + axis, count);
  return shape;
}

void CopyIntoStack(const Tensor& part, int64_t axis, int64_t position, Tensor& stacked) {
  ONNX_AMP_ASSERT(part.dtype() == stacked.dtype() && stacked.rank() == part.rank() + 1, "stack shape mismatch");
  const int64_t outer = Product(part.shape(), 0, axis);
  const size_t inner = static_cast<size_t>(Product(part.shape(), axis, part.rank())) * DTypeSize(part.dtype());
  const int64_t count = stacked.dim(axis);
  const char* src = static_cast<const char*>(part.raw_data());
  char* dst = static_cast<char*>(stacked.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + (o * count + position) * inner, src + o * inner, inner);
  }
}

}  // namespace onnx_amp
