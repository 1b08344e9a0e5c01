// The fused activation gradients of domain ai.onnx_amp (ReluGrad, SigmoidGrad, TanhGrad,
// GeluGrad): dX = dY * f'(.) with f' read from X or Y.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/elementwise/activation_grad_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/kernel_registry.h"
#include "runtime/core/convert.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// Elements per block: converted into float32 on the stack, small enough to stay in L1.
constexpr int64_t kGradBlock = 2048;
// Elements per parallel chunk.
constexpr int64_t kGradChunk = 1 << 16;

// values[0, n) = tensor[begin, begin + n) as float32 (float32, float16 or bfloat16).
void LoadFloat32(const Tensor& tensor, int64_t begin, int64_t n, float* values) {
  const size_t count = static_cast<size_t>(n);
  if (tensor.dtype() == DType::kFloat32) {
    std::memcpy(values, tensor.data<float>() + begin, count * sizeof(float));
  } else if (tensor.dtype() == DType::kFloat16) {
    ConvertHalfToFloat(tensor.data<uint16_t>() + begin, values, count);
  } else {
    ConvertBFloat16ToFloat(tensor.data<uint16_t>() + begin, values, count);
  }
}

// out[begin, begin + n) = values rounded once to out's dtype.
void StoreFloat32(const float* values, int64_t begin, int64_t n, Tensor& out) {
  const size_t count = static_cast<size_t>(n);
  if (out.dtype() == DType::kFloat32) {
    std::memcpy(out.data<float>() + begin, values, count * sizeof(float));
  } else if (out.dtype() == DType::kFloat16) {
    ConvertFloatToHalf(values, out.data<uint16_t>() + begin, count);
  } else {
    ConvertFloatToBFloat16(values, out.data<uint16_t>() + begin, count);
  }
}

// dX[i] = dY[i] * slope(V[i]) for the forward value V (input 1), block by block over
// the pool's threads (each element is independent, so the split changes no bit).
template <typename Slope>
Status PointwiseGrad(KernelContext& context, Slope&& slope) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* v, FloatInput(context, 1));
  if (dy->shape() != v->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "dY " + ShapeToString(dy->shape()) + " and the forward value " +
                                                       ShapeToString(v->shape()) + " differ in shape");
  }
  if (context.num_outputs() < 1 || !context.output_used(0)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy->dtype(), dy->shape()));
  context.threads().ParallelFor(dy->num_elements(), kGradChunk, [&](int64_t begin, int64_t end) {
    float grad[kGradBlock], values[kGradBlock];
    for (int64_t block = begin; block < end; block += kGradBlock) {
      const int64_t n = std::min(kGradBlock, end - block);
      LoadFloat32(*dy, block, n, grad);
      LoadFloat32(*v, block, n, values);
      for (int64_t i = 0; i < n; ++i) grad[i] *= slope(values[i]);
      StoreFloat32(grad, block, n, *dx);
    }
  });
  return Status::Ok();
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
