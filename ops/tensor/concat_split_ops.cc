// Concat and Split: block copies along one axis.
#include <algorithm>
#include <string>

#include "ops/tensor/copy_layouts.h"
#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Status ConcatKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const ConcatLayout layout, PlanConcat(context));
  const Tensor& first = *layout.inputs[0];
  const int64_t axis = layout.axis;
  const Shape& out_shape = layout.out_shape;
  if (!IsMovableDType(first.dtype())) return context.UnsupportedDType(first.dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, first.dtype(), out_shape));
  const size_t width = DTypeSize(first.dtype());
  const std::vector<int64_t> out_strides = ContiguousStrides(out_shape);
  int64_t offset = 0;
  for (const Tensor* t : layout.inputs) {
    StridedCopy(context.threads(), width, t->shape(), t->raw_data(), ContiguousStrides(t->shape()),
                static_cast<char*>(out->raw_data()) + offset * out_strides[axis] * width, out_strides);
    offset += t->dim(axis);
  }
  return Status::Ok();
}

Status SplitKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  if (data->rank() == 0) return context.Error(ErrorCode::kInvalidModel, "cannot split a scalar");
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(context, context.attr_int("axis", 0), data->rank()));
  const int64_t dim = data->dim(axis);
  std::vector<int64_t> sizes;
  if (context.opset() < 13) {
    sizes = context.attr_ints("split");
  } else if (const Tensor* split = context.input(1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(sizes, ReadInt64List(context, *split, "split"));
  }
  if (sizes.empty()) {
    const int64_t parts = context.opset() >= 18 && context.has_attribute("num_outputs")
                              ? context.attr_int("num_outputs", 0)
                              : context.num_outputs();
    if (parts <= 0) return context.Error(ErrorCode::kInvalidModel, "number of outputs must be positive");
    if (context.opset() < 18 && dim % parts != 0) {
      return context.Error(ErrorCode::kInvalidModel, "axis of size " + std::to_string(dim) +
                                                         " does not split evenly into " + std::to_string(parts));
    }
    // Since opset 18 the last chunk may be smaller: ceil(dim / parts) each.
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk) sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return context.Error(ErrorCode::kInvalidModel, "split sizes must be non-negative");
    total += s;
  }
  if (total != dim || static_cast<int>(sizes.size()) != context.num_outputs()) {
    return context.Error(ErrorCode::kInvalidModel, "split " + ShapeToString(sizes) + " does not cover axis " +
                                                       std::to_string(axis) + " of size " + std::to_string(dim) +
                                                       " with " + std::to_string(context.num_outputs()) + " outputs");
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  const size_t width = DTypeSize(data->dtype());
  const std::vector<int64_t> in_strides = ContiguousStrides(data->shape());
  int64_t offset = 0;
  for (int i = 0; i < context.num_outputs(); ++i) {
    Shape shape = data->shape();
    shape[axis] = sizes[i];
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(i, data->dtype(), shape));
    StridedCopy(context.threads(), width, shape,
                static_cast<const char*>(data->raw_data()) + offset * in_strides[axis] * width, in_strides,
                out->raw_data(), ContiguousStrides(shape));
    offset += sizes[i];
  }
  return Status::Ok();
}

}  // namespace onnx_amp
