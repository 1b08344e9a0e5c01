#include "ops/tensor/copy_layouts.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Expected<std::vector<int64_t>> TransposePerm(const KernelContext& context, const Tensor& data) {
  const int64_t rank = data.rank();
  std::vector<int64_t> perm = context.attr_ints("perm");
  if (!context.has_attribute("perm")) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return context.Error(ErrorCode::kInvalidModel, "perm has " + std::to_string(perm.size()) +
                                                       " entries for a rank-" + std::to_string(rank) + " input");
  }
  return NormalizeAxes(context, perm, rank);
}

Expected<ExpandLayout> PlanExpand(const KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* shape_tensor, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> requested, ReadInt64List(context, *shape_tensor, "shape"));
  const int64_t rank = std::max<int64_t>(data->rank(), static_cast<int64_t>(requested.size()));
  ExpandLayout layout{data, Shape(rank), std::vector<int64_t>(rank, 0)};
  const std::vector<int64_t> in_strides = ContiguousStrides(data->shape());
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t in_axis = k - (rank - data->rank());
    const int64_t req_axis = k - (rank - static_cast<int64_t>(requested.size()));
    const int64_t a = in_axis >= 0 ? data->dim(in_axis) : 1;
    const int64_t b = req_axis >= 0 ? requested[req_axis] : 1;
    if (a != b && a != 1 && b != 1) {
      return context.Error(ErrorCode::kInvalidModel, "cannot expand " + ShapeToString(data->shape()) + " to " +
                                                         ShapeToString(requested));
    }
    if (b < 0) return context.Error(ErrorCode::kInvalidModel, "shape has a negative dimension");
    layout.out_shape[k] = a == 1 ? b : a;
    if (in_axis >= 0 && a != 1) layout.src_strides[k] = in_strides[in_axis];
  }
  return layout;
}

Expected<ConcatLayout> PlanConcat(const KernelContext& context) {
  ConcatLayout layout;
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (const Tensor* t = context.input(i)) layout.inputs.push_back(t);
  }
  if (layout.inputs.empty()) return context.Error(ErrorCode::kInvalidModel, "Concat needs at least one input");
  const Tensor& first = *layout.inputs[0];
  if (first.rank() == 0) return context.Error(ErrorCode::kInvalidModel, "cannot concatenate scalars");
  ONNX_AMP_ASSIGN_OR_RETURN(layout.axis,
                            NormalizeAxis(context, context.attr_int("axis", context.opset() < 4 ? 1 : 0), first.rank()));
  const int64_t axis = layout.axis;
  layout.out_shape = first.shape();
  layout.out_shape[axis] = 0;
  for (const Tensor* t : layout.inputs) {
    bool compatible = t->dtype() == first.dtype() && t->rank() == first.rank();
    for (int64_t k = 0; compatible && k < first.rank(); ++k) compatible = k == axis || t->dim(k) == first.dim(k);
    if (!compatible) {
      return context.Error(ErrorCode::kInvalidModel, "cannot concatenate " + std::string(DTypeName(t->dtype())) +
                                                         ShapeToString(t->shape()) + " with " +
                                                         std::string(DTypeName(first.dtype())) +
                                                         ShapeToString(first.shape()) + " on axis " +
                                                         std::to_string(axis));
    }
    layout.out_shape[axis] += t->dim(axis);
  }
  return layout;
}

}  // namespace onnx_amp
