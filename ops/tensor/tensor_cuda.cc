// The shape and data-movement family on the GPU. Reshape, Flatten, Squeeze, Unsqueeze
// and Identity are views: the CPU kernels of the first four read only shapes (the shape
// and axes inputs stay on the host) and hand the input's device buffer on, so they serve
// as the CUDA kernels too. Transpose, Concat and Expand are strided copies
// (ops/common/cuda_copy.h), with the CPU kernels' shape rules.
#include <string>
#include <vector>

#include "ops/common/cuda_copy.h"
#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "ops/op_def.h"
#include "ops/tensor/copy_layouts.h"
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
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> perm, TransposePerm(context, *data));
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
    ONNX_AMP_RETURN_IF_ERROR(LaunchCudaStridedCopy(width, t->shape(), t->raw_data(), ContiguousStrides(t->shape()),
                                                   static_cast<char*>(out->raw_data()) + offset * out_strides[axis] * width,
                                                   out_strides, LaunchEnvOf(context)));
    offset += t->dim(axis);
  }
  return Status::Ok();
}

Status Expand(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const ExpandLayout layout, PlanExpand(context));
  const Tensor* data = layout.data;
  const Shape& out_shape = layout.out_shape;
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));
  return LaunchCudaStridedCopy(DTypeSize(data->dtype()), out_shape, data->raw_data(), layout.src_strides,
                               out->raw_data(), ContiguousStrides(out_shape), LaunchEnvOf(context));
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
