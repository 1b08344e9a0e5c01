// The conv family on the GPU: Conv (cuDNN, then the bias and a fused activation in one
// pass), ConvGrad (cuDNN backward-data and backward-filter, the bias gradient as
// per-channel sums), the pools, their gradients and the global pools (conv_cuda.cu).
#include <string>
#include <vector>

#include "ops/common/cuda_cast.h"
#include "ops/conv/conv_cuda.h"
#include "ops/conv/cudnn_conv.h"
#include "ops/conv/window_geometry.h"
#include "ops/cuda_kernels.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/cuda/cuda_kernel_support.h"

namespace onnx_amp {
namespace {

bool IsFloat(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

Shape SpatialDims(const Shape& shape) { return Shape(shape.begin() + 2, shape.end()); }

Expected<Tensor> Float32Scratch(const KernelContext& context, int64_t count) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, CudaOf(context).Allocate(count * sizeof(float)));
  return Tensor(DType::kFloat32, {count}, std::move(buffer));
}

Expected<CudaWindow> ToCudaWindow(const KernelContext& context, const WindowGeometry& g, int64_t planes) {
  if (g.rank() == 0 || g.rank() > static_cast<size_t>(kCudaMaxWindowRank)) {
    return context.Error(ErrorCode::kUnsupported, "CUDA windows span 1 to 3 spatial dims");
  }
  CudaWindow w;
  w.rank = static_cast<int>(g.rank());
  w.planes = planes;
  for (size_t d = 0; d < g.rank(); ++d) {
    w.in[d] = g.in[d];
    w.out[d] = g.out[d];
    w.kernel[d] = g.kernel[d];
    w.strides[d] = g.strides[d];
    w.dilations[d] = g.dilations[d];
    w.pads_begin[d] = g.pads_begin[d];
    w.pads_end[d] = g.pads_end[d];
  }
  return w;
}

// X [N, C, spatial...] and W [M, C / group, kernel...] checked; the key of the forward problem.
Expected<ConvKey> ConvProblem(const KernelContext& context, const Tensor& x, const Tensor& w, WindowGeometry& g) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return context.Error(ErrorCode::kInvalidModel, "X and W must be [N, C, spatial...] and [M, C/group, k...]");
  }
  if (!IsFloat(x.dtype()) || w.dtype() != x.dtype()) return context.UnsupportedDType(x.dtype());
  const int64_t group = context.attr_int("group", 1);
  if (group < 1 || x.dim(1) != w.dim(1) * group || w.dim(0) % group != 0) {
    return context.Error(ErrorCode::kInvalidModel, "channels do not match group " + std::to_string(group));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(g, ForwardWindow(context, SpatialDims(x.shape()), SpatialDims(w.shape()), false));
  ConvKey key;
  key.dtype = x.dtype();
  key.x_dims = x.shape();
  key.w_dims = w.shape();
  key.y_dims = {x.dim(0), w.dim(0)};
  key.y_dims.insert(key.y_dims.end(), g.out.begin(), g.out.end());
  key.pads_begin = g.pads_begin;
  key.pads_end = g.pads_end;
  key.strides = g.strides;
  key.dilations = g.dilations;
  return key;
}

int ActivationCode(FusedActivationKind kind) {
  switch (kind) {
    case FusedActivationKind::kNone: return 0;
    case FusedActivationKind::kRelu: return 1;
    case FusedActivationKind::kLeakyRelu: return 2;
    case FusedActivationKind::kClip: return 3;
  }
  return 0;
}

Status Conv(KernelContext& context) {
  const Tensor* x = context.input(0);
  const Tensor* w = context.input(1);
  const Tensor* b = context.input(2);
  if (x == nullptr || w == nullptr) return context.Error(ErrorCode::kInvalidModel, "Conv needs X and W");
  WindowGeometry g;
  ONNX_AMP_ASSIGN_OR_RETURN(ConvKey key, ConvProblem(context, *x, *w, g));
  if (b != nullptr && (b->dtype() != x->dtype() || b->num_elements() != w->dim(0))) {
    return context.Error(ErrorCode::kInvalidModel, "B must hold M values of X's dtype");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), key.y_dims));
  if (y->num_elements() == 0) return Status::Ok();
  key.direction = ConvDirection::kForward;
  ONNX_AMP_RETURN_IF_ERROR(RunCudnnConv(CudaOf(context), key, const_cast<void*>(x->raw_data()),
                                        const_cast<void*>(w->raw_data()), y->raw_data()));
  const FusedActivation activation = context.fused_activation();
  const int64_t spatial = y->num_elements() / (y->dim(0) * y->dim(1));
  return LaunchCudaBiasActivation(y->dtype(), y->raw_data(), b ? b->raw_data() : nullptr, y->dim(1), spatial,
                                  y->num_elements(), ActivationCode(activation.kind), activation.alpha,
                                  activation.beta, LaunchEnvOf(context));
}

bool Wanted(const KernelContext& context, int index) {
  return index < context.num_outputs() && context.output_used(index);
}

Status ConvGrad(KernelContext& context) {
  const Tensor* dy = context.input(0);
  const Tensor* x = context.input(1);
  const Tensor* w = context.input(2);
  if (dy == nullptr || x == nullptr || w == nullptr) return context.Error(ErrorCode::kInvalidModel, "needs dY, X and W");
  WindowGeometry g;
  ONNX_AMP_ASSIGN_OR_RETURN(ConvKey key, ConvProblem(context, *x, *w, g));
  if (dy->shape() != Shape(key.y_dims) || dy->dtype() != x->dtype()) {
    return context.Error(ErrorCode::kInvalidModel,
                         "dY is " + ShapeToString(dy->shape()) + ", the forward output is " + ShapeToString(key.y_dims));
  }
  CudaDevice& device = CudaOf(context);
  void* dy_data = const_cast<void*>(dy->raw_data());
  if (Wanted(context, 0)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, x->dtype(), x->shape()));
    key.direction = ConvDirection::kBackwardData;
    if (dx->num_elements() > 0) {
      ONNX_AMP_RETURN_IF_ERROR(RunCudnnConv(device, key, dx->raw_data(), const_cast<void*>(w->raw_data()), dy_data));
    }
  }
  if (Wanted(context, 1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dw, context.AllocateOutput(1, x->dtype(), w->shape()));
    key.direction = ConvDirection::kBackwardFilter;
    if (dw->num_elements() > 0) {
      ONNX_AMP_RETURN_IF_ERROR(RunCudnnConv(device, key, const_cast<void*>(x->raw_data()), dw->raw_data(), dy_data));
    }
  }
  if (!Wanted(context, 2)) return Status::Ok();
  const int64_t planes = dy->dim(0) * dy->dim(1);
  const CudaChannelShape shape{dy->dim(0), dy->dim(1), planes == 0 ? 0 : dy->num_elements() / planes};
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor sums, Float32Scratch(context, shape.channels));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor scratch, Float32Scratch(context, CudaConvBiasGradScratch(shape)));
  const CudaLaunchEnv env = LaunchEnvOf(context);
  ONNX_AMP_RETURN_IF_ERROR(
      LaunchCudaConvBiasGrad(dy->dtype(), dy->raw_data(), shape, sums.data<float>(), scratch.data<float>(), env));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * db, context.AllocateOutput(2, dy->dtype(), {shape.channels}));
  return LaunchCudaCast(DType::kFloat32, dy->dtype(), sums.raw_data(), db->raw_data(), shape.channels, env);
}

Expected<WindowGeometry> PoolWindow(const KernelContext& context, const Tensor& x) {
  if (x.rank() < 3 || x.rank() > 5) {
    return context.Error(ErrorCode::kUnsupported, "pools take 1-D to 3-D inputs, X is " + ShapeToString(x.shape()));
  }
  if (!context.has_attribute("kernel_shape")) return context.Error(ErrorCode::kInvalidModel, "kernel_shape is required");
  return ForwardWindow(context, SpatialDims(x.shape()), {}, context.attr_int("ceil_mode", 0) != 0);
}

Status Pool(KernelContext& context, CudaPool kind) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "the pool needs input X");
  if (!IsFloat(x->dtype())) return context.UnsupportedDType(x->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const WindowGeometry g, PoolWindow(context, *x));
  Shape y_shape{x->dim(0), x->dim(1)};
  y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  int64_t* indices = nullptr;
  if (kind == CudaPool::kMax && Wanted(context, 1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(1, DType::kInt64, y_shape));
    indices = out->data<int64_t>();
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaWindow window, ToCudaWindow(context, g, x->dim(0) * x->dim(1)));
  return LaunchCudaPool(kind, x->dtype(), x->raw_data(), y->raw_data(), indices,
                        context.attr_int("storage_order", 0) != 0, context.attr_int("count_include_pad", 0) != 0,
                        window, LaunchEnvOf(context));
}

Status PoolGrad(KernelContext& context, CudaPool kind) {
  const Tensor* dy = context.input(0);
  const Tensor* x = context.input(1);
  if (dy == nullptr || x == nullptr) return context.Error(ErrorCode::kInvalidModel, "needs dY and X");
  if (!IsFloat(x->dtype()) || dy->dtype() != x->dtype()) return context.UnsupportedDType(dy->dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(const WindowGeometry g, PoolWindow(context, *x));
  Shape expected{x->dim(0), x->dim(1)};
  expected.insert(expected.end(), g.out.begin(), g.out.end());
  if (dy->shape() != expected) {
    return context.Error(ErrorCode::kInvalidModel,
                         "dY is " + ShapeToString(dy->shape()) + ", the forward output is " + ShapeToString(expected));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const CudaWindow window, ToCudaWindow(context, g, x->dim(0) * x->dim(1)));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor sums, Float32Scratch(context, x->num_elements()));
  const CudaLaunchEnv env = LaunchEnvOf(context);
  ONNX_AMP_RETURN_IF_ERROR(LaunchCudaPoolGrad(kind, x->dtype(), dy->raw_data(), x->raw_data(), sums.data<float>(),
                                              context.attr_int("count_include_pad", 0) != 0, window, env));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy->dtype(), x->shape()));
  return LaunchCudaCast(DType::kFloat32, dx->dtype(), sums.raw_data(), dx->raw_data(), dx->num_elements(), env);
}

// GlobalAveragePool / GlobalMaxPool: one value per (n, c) plane.
Status GlobalPool(KernelContext& context, CudaPool kind) {
  const Tensor* x = context.input(0);
  if (x == nullptr || x->rank() < 3) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, spatial...]");
  if (!IsFloat(x->dtype())) return context.UnsupportedDType(x->dtype());
  Shape y_shape(x->shape().size(), 1);
  y_shape[0] = x->dim(0);
  y_shape[1] = x->dim(1);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  const int64_t planes = x->dim(0) * x->dim(1);
  return LaunchCudaGlobalPool(kind, x->dtype(), x->raw_data(), y->raw_data(), planes,
                              planes == 0 ? 0 : x->num_elements() / planes, LaunchEnvOf(context));
}

}  // namespace

void RegisterConvCudaKernels(KernelRegistry& registry) {
  const auto add = [&](std::string_view domain, std::string_view op, KernelFn compute, bool fuses) {
    KernelDef def{domain, op, DeviceKind::kCuda, compute};
    def.fuses_activation = fuses;
    def.dtypes = kCudaFloatDTypes;
    registry.Register(def);
  };
  add("", "Conv", Conv, true);
  add("", "MaxPool", [](KernelContext& c) { return Pool(c, CudaPool::kMax); }, false);
  add("", "AveragePool", [](KernelContext& c) { return Pool(c, CudaPool::kAverage); }, false);
  add("", "GlobalAveragePool", [](KernelContext& c) { return GlobalPool(c, CudaPool::kAverage); }, false);
  add("", "GlobalMaxPool", [](KernelContext& c) { return GlobalPool(c, CudaPool::kMax); }, false);
  add(kOnnxAmpDomain, "ConvGrad", ConvGrad, false);
  add(kOnnxAmpDomain, "MaxPoolGrad", [](KernelContext& c) { return PoolGrad(c, CudaPool::kMax); }, false);
  add(kOnnxAmpDomain, "AveragePoolGrad", [](KernelContext& c) { return PoolGrad(c, CudaPool::kAverage); }, false);
}

}  // namespace onnx_amp
