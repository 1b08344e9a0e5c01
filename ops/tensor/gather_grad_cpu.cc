// GatherGrad: the adjoint of Gather. Y[outer, j, inner] = X[outer, idx[j], inner], so
// dX[outer, idx[j], inner] += dY[outer, j, inner]; repeated indices accumulate.
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/tensor/tensor_kernels.h"

namespace onnx_amp {

Status GatherGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  const Tensor* indices = context.input(1);
  const Tensor* shape_t = context.input(2);
  if (indices == nullptr || (indices->dtype() != DType::kInt64 && indices->dtype() != DType::kInt32)) {
    return context.Error(ErrorCode::kInvalidModel, "indices must be int32 or int64");
  }
  if (shape_t == nullptr || shape_t->dtype() != DType::kInt64 || shape_t->rank() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "shape must be a 1-D int64 tensor");
  }
  const Shape shape(shape_t->data<int64_t>(), shape_t->data<int64_t>() + shape_t->num_elements());
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = context.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return context.Error(ErrorCode::kInvalidModel, "axis out of range");
  int64_t outer = 1;
  int64_t inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= shape[i];
  const int64_t extent = shape[axis];
  const int64_t count = indices->num_elements();
  if (dy->num_elements() != outer * count * inner) {
    return context.Error(ErrorCode::kInvalidModel, "dY " + ShapeToString(dy->shape()) + " does not match the gather");
  }
  const std::vector<float> g = ToFloat32(*dy);
  std::vector<float> dx(static_cast<size_t>(NumElements(shape)), 0.0f);
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = indices->dtype() == DType::kInt64 ? indices->data<int64_t>()[j] : indices->data<int32_t>()[j];
    if (index < 0) index += extent;
    if (index < 0 || index >= extent) {
      return context.Error(ErrorCode::kInvalidArgument, "index " + std::to_string(index) + " out of range");
    }
    for (int64_t o = 0; o < outer; ++o) {
      const float* src = g.data() + (o * count + j) * inner;
      float* dst = dx.data() + (o * extent + index) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
    }
  }
  return WriteOutput(context, 0, dy->dtype(), shape, dx);
}

}  // namespace onnx_amp
