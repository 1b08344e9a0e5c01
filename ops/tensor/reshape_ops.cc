// Reshape, Flatten, Squeeze and Unsqueeze (views that share the input's buffer), and
// Shape and Size (which read only the input's shape).
#include <algorithm>
#include <string>

#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

// Axes from the attribute (before `input_from_opset`) or from input 1 (since).
Expected<std::vector<int64_t>> AxesFromAttrOrInput(KernelContext& context, int input_from_opset) {
  if (context.opset() < input_from_opset) return context.attr_ints("axes");
  const Tensor* axes = context.input(1);
  if (axes == nullptr) return std::vector<int64_t>{};
  return ReadInt64List(context, *axes, "axes");
}

}  // namespace

Status ReshapeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  std::vector<int64_t> requested;
  if (context.opset() < 5) {
    requested = context.attr_ints("shape");
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* shape, RequiredInput(context, 1));
    ONNX_AMP_ASSIGN_OR_RETURN(requested, ReadInt64List(context, *shape, "shape"));
  }
  const bool allow_zero = context.opset() >= 14 && context.attr_int("allowzero", 0) != 0;
  Shape out(requested.size());
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    const int64_t d = requested[i];
    if (d == -1) {
      if (inferred >= 0) return context.Error(ErrorCode::kInvalidModel, "shape has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) return context.Error(ErrorCode::kInvalidModel, "shape has a negative dimension " + std::to_string(d));
    if (d == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= data->rank()) {
        return context.Error(ErrorCode::kInvalidModel, "shape copies dimension " + std::to_string(i) +
                                                           " (0) but the input has rank " +
                                                           std::to_string(data->rank()));
      }
      out[i] = data->dim(static_cast<int64_t>(i));
    } else {
      out[i] = d;
    }
    known *= out[i];
  }
  if (inferred >= 0) {
    if (known == 0 || data->num_elements() % known != 0) {
      return context.Error(ErrorCode::kInvalidModel, "cannot reshape " + ShapeToString(data->shape()) + " to " +
                                                         ShapeToString(requested) + ": -1 has no integer solution");
    }
    out[inferred] = data->num_elements() / known;
  }
  if (NumElements(out) != data->num_elements()) {
    return context.Error(ErrorCode::kInvalidModel, "cannot reshape " + ShapeToString(data->shape()) + " (" +
                                                       std::to_string(data->num_elements()) + " elements) to " +
                                                       ShapeToString(out));
  }
  context.SetOutput(0, data->Reshaped(std::move(out)));
  return Status::Ok();
}

Status FlattenKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  int64_t axis = context.attr_int("axis", 1);
  if (axis < -data->rank() || axis > data->rank()) {
    return context.Error(ErrorCode::kInvalidModel,
                         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(data->rank()));
  }
  if (axis < 0) axis += data->rank();
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data->dim(k);
  int64_t inner = 1;
  for (int64_t k = axis; k < data->rank(); ++k) inner *= data->dim(k);
  context.SetOutput(0, data->Reshaped({outer, inner}));
  return Status::Ok();
}

Status SqueezeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesFromAttrOrInput(context, 13));
  ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, axes, data->rank()));
  std::vector<bool> drop(data->rank(), false);
  if (axes.empty()) {
    for (int64_t k = 0; k < data->rank(); ++k) drop[k] = data->dim(k) == 1;
  }
  for (int64_t axis : axes) {
    if (data->dim(axis) != 1) {
      return context.Error(ErrorCode::kInvalidModel, "cannot squeeze axis " + std::to_string(axis) + " of shape " +
                                                         ShapeToString(data->shape()) + ": its size is not 1");
    }
    drop[axis] = true;
  }
  Shape out;
  for (int64_t k = 0; k < data->rank(); ++k) {
    if (!drop[k]) out.push_back(data->dim(k));
  }
  context.SetOutput(0, data->Reshaped(std::move(out)));
  return Status::Ok();
}

Status UnsqueezeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesFromAttrOrInput(context, 13));
  const int64_t out_rank = data->rank() + static_cast<int64_t>(axes.size());
  ONNX_AMP_ASSIGN_OR_RETURN(axes, NormalizeAxes(context, axes, out_rank));
  std::vector<bool> inserted(out_rank, false);
  for (int64_t axis : axes) inserted[axis] = true;
  Shape out(out_rank);
  int64_t next = 0;
  for (int64_t k = 0; k < out_rank; ++k) out[k] = inserted[k] ? 1 : data->dim(next++);
  context.SetOutput(0, data->Reshaped(std::move(out)));
  return Status::Ok();
}

Status ShapeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  const int64_t rank = data->rank();
  auto clamp = [rank](int64_t axis) { return std::clamp(axis < 0 ? axis + rank : axis, int64_t{0}, rank); };
  const int64_t start = clamp(context.attr_int("start", 0));
  const int64_t end = std::max(start, clamp(context.attr_int("end", rank)));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kInt64, {end - start}));
  for (int64_t k = start; k < end; ++k) out->data<int64_t>()[k - start] = data->dim(k);
  return Status::Ok();
}

Status SizeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kInt64, {}));
  out->data<int64_t>()[0] = data->num_elements();
  return Status::Ok();
}

}  // namespace onnx_amp
