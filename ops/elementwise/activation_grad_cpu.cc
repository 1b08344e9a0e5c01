// The fused activation gradients of domain ai.onnx_amp (ReluGrad, SigmoidGrad, TanhGrad,
// GeluGrad): dX = dY * f'(.) with f' read from X or Y.
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/elementwise/activation_grad_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/kernel_registry.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// dX[i] = dY[i] * slope(V[i]) for the forward value V (input 1).
template <typename Slope>
Status PointwiseGrad(KernelContext& context, Slope&& slope) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* v, FloatInput(context, 1));
  if (dy->shape() != v->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "dY " + ShapeToString(dy->shape()) + " and the forward value " +
                                                       ShapeToString(v->shape()) + " differ in shape");
  }
  std::vector<float> dx = ToFloat32(*dy);
  const std::vector<float> values = ToFloat32(*v);
  for (size_t i = 0; i < dx.size(); ++i) dx[i] *= slope(values[i]);
  return WriteOutput(context, 0, dy->dtype(), dy->shape(), dx);
}

// The slopes are activation_grad_math.h, shared with the CUDA kernels.
Status ReluGradKernel(KernelContext& context) { return PointwiseGrad(context, ReluSlope{}); }
Status SigmoidGradKernel(KernelContext& context) { return PointwiseGrad(context, SigmoidSlope{}); }
Status TanhGradKernel(KernelContext& context) { return PointwiseGrad(context, TanhSlope{}); }

Status GeluGradKernel(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate == "tanh") return PointwiseGrad(context, GeluTanhSlope{});
  if (approximate != "none") {
    return context.Error(ErrorCode::kInvalidModel, "unknown approximate '" + approximate + "'");
  }
  return PointwiseGrad(context, GeluSlope{});
}

}  // namespace

void RegisterActivationGradCpuKernels(KernelRegistry& registry) {
  registry.Register({kOnnxAmpDomain, "ReluGrad", DeviceKind::kCpu, &ReluGradKernel});
  registry.Register({kOnnxAmpDomain, "SigmoidGrad", DeviceKind::kCpu, &SigmoidGradKernel});
  registry.Register({kOnnxAmpDomain, "TanhGrad", DeviceKind::kCpu, &TanhGradKernel});
  registry.Register({kOnnxAmpDomain, "GeluGrad", DeviceKind::kCpu, &GeluGradKernel});
}

}  // namespace onnx_amp
