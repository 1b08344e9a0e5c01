// The KernelContext side of the normalisation-family CUDA kernels: axes, attributes and
// shape checks as in the CPU kernels, parameters widened to float32 on the device, and
// the registration.
#include <string>

#include "ops/cuda_kernels.h"
#include "ops/common/cuda_cast.h"
#include "ops/kernel_registry.h"
#include "ops/normalization/normalization_cuda.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

Expected<const Tensor*> FloatTensor(const KernelContext& context, int index) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " is missing");
  if (tensor->dtype() != DType::kFloat32 && tensor->dtype() != DType::kFloat16 && tensor->dtype() != DType::kBFloat16) {
    return context.UnsupportedDType(tensor->dtype());
  }
  return tensor;
}

// Float32 device memory of `count` values.
Expected<Tensor> Float32Scratch(const KernelContext& context, int64_t count) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, CudaOf(context).Allocate(count * sizeof(float)));
  return Tensor(DType::kFloat32, {count}, std::move(buffer));
}

// `tensor` as float32 on the device (itself when it is float32).
Expected<Tensor> AsFloat32(const KernelContext& context, const Tensor& tensor) {
  if (tensor.dtype() == DType::kFloat32) return tensor;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor wide, Float32Scratch(context, tensor.num_elements()));
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaCast(tensor.dtype(), DType::kFloat32, tensor.raw_data(), wide.raw_data(),
                                          tensor.num_elements(), LaunchEnvOf(context)));
  return wide.Reshaped(tensor.shape());
}

// Output `index` (when used) with `dtype` and `shape`, holding the float32 `values`.
Status StoreOutput(KernelContext& context, int index, DType dtype, const Shape& shape, const Tensor& values) {
  if (index >= context.num_outputs() || !context.output_used(index)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, dtype, shape));
  return LaunchCudaCast(DType::kFloat32, dtype, values.raw_data(), out->raw_data(), out->num_elements(),
                        LaunchEnvOf(context));
}

bool Wanted(const KernelContext& context, int index) {
  return index < context.num_outputs() && context.output_used(index);
}

// ---- Softmax / LogSoftmax ----

Status Softmax(KernelContext& context, CudaSoftmax kind) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatTensor(context, 0));
  const int64_t rank = x->rank();
  const bool single_axis = context.opset() >= 13;
  int64_t axis = context.attr_int("axis", single_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank || (single_axis && axis == rank)) {
    return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  }
  CudaAxisView view;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) view.outer *= x->dim(i);
    else if (single_axis && i > axis) view.inner *= x->dim(i);
    else view.extent *= x->dim(i);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  return LaunchCudaSoftmax(kind, x->dtype(), x->raw_data(), y->raw_data(), view, LaunchEnvOf(context));
}

Status SoftmaxGrad(KernelContext& context, CudaSoftmax kind) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatTensor(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, FloatTensor(context, 1));
  if (dy->shape() != y->shape() || dy->dtype() != y->dtype()) {
    return context.Error(ErrorCode::kInvalidModel, "dY and Y differ in shape or dtype");
  }
  const int64_t rank = y->rank();
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  }
  const bool coerced = context.attr_int("coerced", 0) != 0;
  CudaAxisView view;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) view.outer *= y->dim(i);
    else if (i == axis || coerced) view.extent *= y->dim(i);
    else view.inner *= y->dim(i);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy->dtype(), dy->shape()));
  return LaunchCudaSoftmaxGrad(kind, dy->dtype(), dy->raw_data(), y->raw_data(), dx->raw_data(), view,
                               LaunchEnvOf(context));
}

// ---- LayerNormalization ----

// A Scale or B that spans the normalised dims exactly (`cols` values, x's dtype).
Status CheckRowParameter(const KernelContext& context, const Tensor* parameter, const Tensor& x, int64_t cols,
                         const char* name) {
  if (parameter == nullptr) return Status::Ok();
  if (parameter->dtype() != x.dtype() || parameter->num_elements() != cols) {
    return context.Error(ErrorCode::kUnsupported, std::string(name) + " " + ShapeToString(parameter->shape()) +
                                                      ": the CUDA kernel takes one value per normalised element");
  }
  return Status::Ok();
}

Status LayerNorm(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatTensor(context, 0));
  const int64_t rank = x->rank();
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  if (context.attr_int("stash_type", 1) != 1) return context.Error(ErrorCode::kUnsupported, "stash_type other than float");
  int64_t rows = 1;
  Shape stat_shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) rows *= x->dim(i);
    stat_shape.push_back(i < axis ? x->dim(i) : 1);
  }
  const int64_t cols = rows == 0 ? 0 : x->num_elements() / rows;
  const Tensor* scale = context.input(1);
  if (scale == nullptr) return context.Error(ErrorCode::kInvalidModel, "Scale is required");
  ONNX_AMP_RETURN_IF_ERROR(CheckRowParameter(context, scale, *x, cols, "Scale"));
  ONNX_AMP_RETURN_IF_ERROR(CheckRowParameter(context, context.input(2), *x, cols, "B"));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  float* mean = nullptr;
  float* inv_std = nullptr;
  if (Wanted(context, 1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(1, DType::kFloat32, stat_shape));
    mean = out->data<float>();
  }
  if (Wanted(context, 2)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(2, DType::kFloat32, stat_shape));
    inv_std = out->data<float>();
  }
  const Tensor* bias = context.input(2);
  return LaunchCudaLayerNorm(x->dtype(), x->raw_data(), scale->raw_data(), bias ? bias->raw_data() : nullptr,
                             y->raw_data(), mean, inv_std, rows, cols, context.attr_float("epsilon", 1e-5f),
                             LaunchEnvOf(context));
}

Status LayerNormGrad(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatTensor(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatTensor(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale, FloatTensor(context, 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* mean, FloatTensor(context, 3));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* inv_std, FloatTensor(context, 4));
  const int64_t rank = x->rank();
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return context.Error(ErrorCode::kInvalidModel, "axis out of range");
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows *= x->dim(i);
  const int64_t cols = rows == 0 ? 0 : x->num_elements() / rows;
  if (dy->shape() != x->shape() || dy->dtype() != x->dtype() || scale->num_elements() != cols ||
      mean->num_elements() != rows || inv_std->num_elements() != rows) {
    return context.Error(ErrorCode::kInvalidModel, "inconsistent shapes for X " + ShapeToString(x->shape()));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor scale32, AsFloat32(context, *scale));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor mean32, AsFloat32(context, *mean));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor inv_std32, AsFloat32(context, *inv_std));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy->dtype(), x->shape()));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor dscale, Float32Scratch(context, cols));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor dbias, Float32Scratch(context, cols));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Float32Scratch(context, CudaLayerNormGradScratch(rows, cols)));
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaLayerNormGrad(
      x->dtype(), dy->raw_data(), x->raw_data(), scale32.data<float>(), mean32.data<float>(), inv_std32.data<float>(),
      dx->raw_data(), dscale.data<float>(), dbias.data<float>(), rows, cols, scratch.data<float>(),
      LaunchEnvOf(context)));
  ONNX_AMP_RETURN_IF_ERROR(StoreOutput(context, 1, scale->dtype(), scale->shape(), dscale));
  return StoreOutput(context, 2, scale->dtype(), scale->shape(), dbias);
}

// ---- BatchNormalization ----

Expected<CudaChannelShape> BatchNormShape(const KernelContext& context, const Tensor& x) {
  if (x.rank() < 2) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...]");
  CudaChannelShape shape{x.dim(0), x.dim(1), 1};
  for (int64_t i = 2; i < x.rank(); ++i) shape.spatial *= x.dim(i);
  return shape;
}

// Input `index` as float32 [C].
Expected<Tensor> ChannelParameter(const KernelContext& context, int index, int64_t channels) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* tensor, FloatTensor(context, index));
  if (tensor->num_elements() != channels) {
    return context.Error(ErrorCode::kInvalidModel,
                         "input " + std::to_string(index) + " must have " + std::to_string(channels) + " values");
  }
  return AsFloat32(context, *tensor);
}

Status BatchNorm(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatTensor(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaChannelShape shape, BatchNormShape(context, *x));
  // Before opset 14 there is no training_mode; extra outputs then meant training.
  const bool training = context.opset() >= 14 ? context.attr_int("training_mode", 0) != 0 : context.num_outputs() > 1;
  const CudaLaunchEnv env = LaunchEnvOf(context);
  const int64_t c = shape.channels;
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor scale, ChannelParameter(context, 1, c));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor bias, ChannelParameter(context, 2, c));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor mean, ChannelParameter(context, 3, c));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor var, ChannelParameter(context, 4, c));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  if (!training) {
    return LaunchCudaBatchNormApply(x->dtype(), x->raw_data(), y->raw_data(), shape, scale.data<float>(),
                                    bias.data<float>(), mean.data<float>(), var.data<float>(),
                                    context.attr_float("epsilon", 1e-5f), env);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor batch_mean, Float32Scratch(context, c));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor batch_var, Float32Scratch(context, c));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Float32Scratch(context, CudaBatchNormScratch(shape)));
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaChannelStatistics(x->dtype(), x->raw_data(), shape, batch_mean.data<float>(),
                                                       batch_var.data<float>(), scratch.data<float>(), env));
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaBatchNormApply(x->dtype(), x->raw_data(), y->raw_data(), shape,
                                                    scale.data<float>(), bias.data<float>(), batch_mean.data<float>(),
                                                    batch_var.data<float>(), context.attr_float("epsilon", 1e-5f), env));
  const float momentum = context.attr_float("momentum", 0.9f);
  for (int index = 1; index <= 2; ++index) {
    if (!Wanted(context, index)) continue;
    const Tensor& running = index == 1 ? mean : var;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor updated, Float32Scratch(context, c));
    ONNX_AMP_RETURN_IF_ERROR(LaunchCudaRunningUpdate(running.data<float>(),
                                                     (index == 1 ? batch_mean : batch_var).data<float>(),
                                                     updated.data<float>(), c, momentum, env));
    const Tensor* given = context.input(index + 2);
    ONNX_AMP_RETURN_IF_ERROR(StoreOutput(context, index, given->dtype(), given->shape(), updated));
  }
  return Status::Ok();
}

Status BatchNormGrad(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatTensor(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatTensor(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale_in, FloatTensor(context, 2));
  if (dy->shape() != x->shape() || dy->dtype() != x->dtype()) {
    return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...] with dY of the same shape");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaChannelShape shape, BatchNormShape(context, *x));
  const int64_t c = shape.channels;
  const bool training = context.attr_int("training_mode", 0) != 0;
  const float epsilon = context.attr_float("epsilon", 1e-5f);
  const CudaLaunchEnv env = LaunchEnvOf(context);
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor scale, ChannelParameter(context, 2, c));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Float32Scratch(context, CudaBatchNormScratch(shape)));
  Tensor mean, var;
  if (training) {
    ONNX_AMP_ASSIGN_OR_RETURN(mean, Float32Scratch(context, c));
    ONNX_AMP_ASSIGN_OR_RETURN(var, Float32Scratch(context, c));
    ONNX_AMP_RETURN_IF_ERROR(LaunchCudaChannelStatistics(x->dtype(), x->raw_data(), shape, mean.data<float>(),
                                                         var.data<float>(), scratch.data<float>(), env));
  } else {
    ONNX_AMP_ASSIGN_OR_RETURN(mean, ChannelParameter(context, 3, c));
    ONNX_AMP_ASSIGN_OR_RETURN(var, ChannelParameter(context, 4, c));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor dscale, Float32Scratch(context, c));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor dbias, Float32Scratch(context, c));
  void* dx = nullptr;
  if (Wanted(context, 0)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dy->dtype(), x->shape()));
    dx = out->raw_data();
  }
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaBatchNormGrad(x->dtype(), dy->raw_data(), x->raw_data(), scale.data<float>(),
                                                   mean.data<float>(), var.data<float>(), dx, dscale.data<float>(),
                                                   dbias.data<float>(), shape, epsilon, training,
                                                   scratch.data<float>(), env));
  ONNX_AMP_RETURN_IF_ERROR(StoreOutput(context, 1, scale_in->dtype(), scale_in->shape(), dscale));
  return StoreOutput(context, 2, scale_in->dtype(), scale_in->shape(), dbias);
}

}  // namespace

void RegisterNormalizationCudaKernels(KernelRegistry& registry) {
  const auto add = [&](std::string_view domain, std::string_view op, KernelFn compute) {
    KernelDef def{domain, op, DeviceKind::kCuda, compute};
    def.dtypes = kCudaFloatDTypes;
    registry.Register(def);
  };
  add("", "Softmax", [](KernelContext& c) { return Softmax(c, CudaSoftmax::kSoftmax); });
  add("", "LogSoftmax", [](KernelContext& c) { return Softmax(c, CudaSoftmax::kLogSoftmax); });
  add("", "LayerNormalization", LayerNorm);
  add("", "BatchNormalization", BatchNorm);
  add(kOnnxAmpDomain, "SoftmaxGrad", [](KernelContext& c) { return SoftmaxGrad(c, CudaSoftmax::kSoftmax); });
  add(kOnnxAmpDomain, "LogSoftmaxGrad", [](KernelContext& c) { return SoftmaxGrad(c, CudaSoftmax::kLogSoftmax); });
  add(kOnnxAmpDomain, "LayerNormalizationGrad", LayerNormGrad);
  add(kOnnxAmpDomain, "BatchNormalizationGrad", BatchNormGrad);
  RegisterLossCudaKernels(registry);
}

}  // namespace onnx_amp
