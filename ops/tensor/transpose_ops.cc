// Transpose, and DepthToSpace / SpaceToDepth, which are a reshape and a transpose.
#include <string>

#include "ops/tensor/copy_layouts.h"
#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

// Writes transpose(reshape(data, view_shape), perm) into output 0 of shape out_shape.
Status PermuteInto(KernelContext& context, const Tensor& data, const Shape& view_shape,
                   const std::vector<int64_t>& perm, const Shape& out_shape) {
  if (!IsMovableDType(data.dtype())) return context.UnsupportedDType(data.dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data.dtype(), out_shape));
  const std::vector<int64_t> view_strides = ContiguousStrides(view_shape);
  Shape permuted_shape(perm.size());
  std::vector<int64_t> src_strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    permuted_shape[k] = view_shape[perm[k]];
    src_strides[k] = view_strides[perm[k]];
  }
  StridedCopy(context.threads(), DTypeSize(data.dtype()), permuted_shape, data.raw_data(), src_strides,
              out->raw_data(), ContiguousStrides(permuted_shape));
  return Status::Ok();
}

struct BlockedNchw {
  int64_t n, c, h, w, block;
};

Expected<BlockedNchw> ReadBlockedInput(KernelContext& context, const Tensor& data) {
  if (data.rank() != 4) {
    return context.Error(ErrorCode::kInvalidModel, "input must be 4-D (NCHW), got " + ShapeToString(data.shape()));
  }
  const int64_t block = context.attr_int("blocksize", 0);
  if (block <= 0) return context.Error(ErrorCode::kInvalidModel, "blocksize must be positive");
  return BlockedNchw{data.dim(0), data.dim(1), data.dim(2), data.dim(3), block};
}

}  // namespace

Status TransposeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  const int64_t rank = data->rank();
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> perm, TransposePerm(context, *data));
  Shape out_shape(rank);
  for (int64_t k = 0; k < rank; ++k) out_shape[k] = data->dim(perm[k]);
  return PermuteInto(context, *data, data->shape(), perm, out_shape);
}

Status DepthToSpaceKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(BlockedNchw x, ReadBlockedInput(context, *data));
  if (x.c % (x.block * x.block) != 0) {
    return context.Error(ErrorCode::kInvalidModel, "channels " + std::to_string(x.c) +
                                                       " are not a multiple of blocksize^2");
  }
  const int64_t c_out = x.c / (x.block * x.block);
  const Shape out_shape = {x.n, c_out, x.h * x.block, x.w * x.block};
  const std::string mode = context.attr_string("mode", "DCR");
  if (mode == "DCR") {
    return PermuteInto(context, *data, {x.n, x.block, x.block, c_out, x.h, x.w}, {0, 3, 4, 1, 5, 2}, out_shape);
  }
  if (mode == "CRD") {
    return PermuteInto(context, *data, {x.n, c_out, x.block, x.block, x.h, x.w}, {0, 1, 4, 2, 5, 3}, out_shape);
  }
  return context.Error(ErrorCode::kInvalidModel, "unknown mode '" + mode + "'");
}

Status SpaceToDepthKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(BlockedNchw x, ReadBlockedInput(context, *data));
  if (x.h % x.block != 0 || x.w % x.block != 0) {
    return context.Error(ErrorCode::kInvalidModel, "spatial size " + ShapeToString({x.h, x.w}) +
                                                       " is not a multiple of blocksize");
  }
  const int64_t h = x.h / x.block;
  const int64_t w = x.w / x.block;
  return PermuteInto(context, *data, {x.n, x.c, h, x.block, w, x.block}, {0, 3, 5, 1, 2, 4},
                     {x.n, x.c * x.block * x.block, h, w});
}

}  // namespace onnx_amp
