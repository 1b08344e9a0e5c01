// The shape and data-movement family on the GPU. Reshape, Flatten, Squeeze, Unsqueeze
// and Identity are views: the CPU kernels of the first four read only shapes (the shape
// and axes inputs stay on the host) and hand the input's device buffer on, so they serve
// as the CUDA kernels too. Transpose, Concat and Expand are strided copies
// (ops/common/cuda_copy.h), with the CPU kernels' shape rules.
#include <numeric>
#include <string>
#include <vector>

#include "ops/common/cuda_copy.h"
#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/op_def.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

// The output is the input (a view, as the CPU's Identity).
Status Identity(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, RequiredInput(context, 0));
  context.SetOutput(0, *input);
  return Status::Ok();
}

Status Transpose(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  const int64_t rank = data->rank();
  std::vector<int64_t> perm = context.attr_ints("perm");
  if (!context.has_attribute("perm")) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return context.Error(ErrorCode::kInvalidModel, "perm has " + std::to_string(perm.size()) +
                                                       " entries for a rank-" + std::to_string(rank) + " input");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(perm, NormalizeAxes(context, perm, rank));
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  Shape out_shape(rank);
  std::vector<int64_t> src_strides(rank);
  const std::vector<int64_t> in_strides = ContiguousStrides(data->shape());
  for (int64_t k = 0; k < rank; ++k) {
    out_shape[k] = data->dim(perm[k]);
    src_strides[k] = in_strides[perm[k]];
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  return LaunchCudaStridedCopy(DTypeSize(data->dtype()), out_shape, data->raw_data(), src_strides, out->raw_data(),
                               ContiguousStrides(out_shape), LaunchEnvOf(context));
}

Status Concat(KernelContext& context) {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (const Tensor* t = context.input(i)) inputs.push_back(t);
  }
  if (inputs.empty()) return context.Error(ErrorCode::kInvalidModel, "Concat needs at least one input");
  const Tensor& first = *inputs[0];
  if (first.rank() == 0) return context.Error(ErrorCode::kInvalidModel, "cannot concatenate scalars");
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis,
                            NormalizeAxis(context, context.attr_int("axis", context.opset() < 4 ? 1 : 0), first.rank()));
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (const Tensor* t : inputs) {
    bool compatible = t->dtype() == first.dtype() && t->rank() == first.rank();
    for (int64_t k = 0; compatible && k < first.rank(); ++k) compatible = k == axis || t->dim(k) == first.dim(k);
    if (!compatible) {
      return context.Error(ErrorCode::kInvalidModel, "cannot concatenate " + ShapeToString(t->shape()) + " with " +
                                                         ShapeToString(first.shape()) + " on axis " +
                                                         std::to_string(axis));
    }
    out_shape[axis] += t->dim(axis);
  }
  if (!IsMovableDType(first.dtype())) return context.UnsupportedDType(first.dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, first.dtype(), out_shape));
  const size_t width = DTypeSize(first.dtype());
  const std::vector<int64_t> out_strides = ContiguousStrides(out_shape);
  int64_t offset = 0;
  for (const Tensor* t : inputs) {
    ONNX_AMP_RETURN_IF_ERROR(LaunchCudaStridedCopy(width, t->shape(), t->raw_data(), ContiguousStrides(t->shape()),
                                                   static_cast<char*>(out->raw_data()) + offset * out_strides[axis] * width,
                                                   out_strides, LaunchEnvOf(context)));
    offset += t->dim(axis);
  }
  return Status::Ok();
}

Status Expand(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* shape_tensor, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> requested, ReadInt64List(context, *shape_tensor, "shape"));
  const int64_t rank = std::max<int64_t>(data->rank(), static_cast<int64_t>(requested.size()));
  Shape out_shape(rank);
  std::vector<int64_t> src_strides(rank, 0);
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
    out_shape[k] = a == 1 ? b : a;
    if (in_axis >= 0 && a != 1) src_strides[k] = in_strides[in_axis];
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  return LaunchCudaStridedCopy(DTypeSize(data->dtype()), out_shape, data->raw_data(), src_strides, out->raw_data(),
                               ContiguousStrides(out_shape), LaunchEnvOf(context));
}

}  // namespace

void RegisterTensorCudaKernels(KernelRegistry& registry) {
  struct Entry {
    std::string_view op_type;
    KernelFn compute;
    uint32_t host_inputs;
  };
  const Entry entries[] = {
      {"Reshape", ReshapeKernel, InputBit(1)},
      {"Flatten", FlattenKernel, 0},
      {"Squeeze", SqueezeKernel, InputBit(1)},
      {"Unsqueeze", UnsqueezeKernel, InputBit(1)},
      {"Identity", Identity, 0},
      {"Transpose", Transpose, 0},
      {"Concat", Concat, 0},
      {"Expand", Expand, InputBit(1)},
  };
  for (const Entry& entry : entries) {
    KernelDef def{"", entry.op_type, DeviceKind::kCuda, entry.compute};
    def.host_inputs = entry.host_inputs;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
