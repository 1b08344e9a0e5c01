// Slice: starts/ends/axes as attributes before opset 10, as inputs (with steps) since.
#include <algorithm>
#include <string>

#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Status SliceKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  const int64_t rank = data->rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (context.opset() < 10) {
    starts = context.attr_ints("starts");
    ends = context.attr_ints("ends");
    axes = context.attr_ints("axes");
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* starts_tensor, RequiredInput(context, 1));
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* ends_tensor, RequiredInput(context, 2));
    ONNX_AMP_ASSIGN_OR_RETURN(starts, ReadInt64List(context, *starts_tensor, "starts"));
    ONNX_AMP_ASSIGN_OR_RETURN(ends, ReadInt64List(context, *ends_tensor, "ends"));
    if (const Tensor* t = context.input(3)) {
      ONNX_AMP_ASSIGN_OR_RETURN(axes, ReadInt64List(context, *t, "axes"));
    }
    if (const Tensor* t = context.input(4)) {
      ONNX_AMP_ASSIGN_OR_RETURN(steps, ReadInt64List(context, *t, "steps"));
    }
  }
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return context.Error(ErrorCode::kInvalidModel, "starts, ends, axes and steps differ in length");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, axes, rank));

  Shape out_shape = data->shape();
  const std::vector<int64_t> in_strides = ContiguousStrides(data->shape());
  std::vector<int64_t> src_strides = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i];
    const int64_t dim = data->dim(axis);
    const int64_t step = steps[i];
    if (step == 0) return context.Error(ErrorCode::kInvalidModel, "step on axis " + std::to_string(axis) + " is 0");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) count = (end - start + step - 1) / step;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      if (start > end) count = (start - end - step - 1) / -step;
    }
    out_shape[axis] = count;
    src_strides[axis] = in_strides[axis] * step;
    if (count > 0) offset += start * in_strides[axis];
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  if (out->num_elements() == 0) return Status::Ok();
  const size_t width = DTypeSize(data->dtype());
  StridedCopy(context.threads(), width, out_shape, static_cast<const char*>(data->raw_data()) + offset * width,
              src_strides, out->raw_data(), ContiguousStrides(out_shape));
  return Status::Ok();
}

}  // namespace onnx_amp
