// Expand (broadcast to a shape) and Tile (repeat along each axis): both are strided
// copies in which the repeated axes read with stride 0.
#include <string>

#include "ops/tensor/copy_layouts.h"
#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {

Status ExpandKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const ExpandLayout layout, PlanExpand(context));
  const Tensor* data = layout.data;
  const Shape& out_shape = layout.out_shape;
  const std::vector<int64_t>& src_strides = layout.src_strides;
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  StridedCopy(context.threads(), DTypeSize(data->dtype()), out_shape, data->raw_data(), src_strides, out->raw_data(),
              ContiguousStrides(out_shape));
  return Status::Ok();
}

Status TileKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* repeats_tensor, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> repeats, ReadInt64List(context, *repeats_tensor, "repeats"));
  const int64_t rank = data->rank();
  if (static_cast<int64_t>(repeats.size()) != rank) {
    return context.Error(ErrorCode::kInvalidModel, "repeats has " + std::to_string(repeats.size()) +
                                                       " entries for a rank-" + std::to_string(rank) + " input");
  }
  // Output axis k, viewed as (repeat, element): element strides from the input, 0 for repeat.
  const std::vector<int64_t> in_strides = ContiguousStrides(data->shape());
  Shape out_shape(rank);
  Shape view_shape;
  std::vector<int64_t> src_strides;
  for (int64_t k = 0; k < rank; ++k) {
    if (repeats[k] < 0) return context.Error(ErrorCode::kInvalidModel, "repeats must be non-negative");
    out_shape[k] = data->dim(k) * repeats[k];
    view_shape.insert(view_shape.end(), {repeats[k], data->dim(k)});
    src_strides.insert(src_strides.end(), {0, in_strides[k]});
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  StridedCopy(context.threads(), DTypeSize(data->dtype()), view_shape, data->raw_data(), src_strides, out->raw_data(),
              ContiguousStrides(view_shape));
  return Status::Ok();
}

}  // namespace onnx_amp
