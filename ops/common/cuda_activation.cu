#include "ops/common/cuda_activation.h"

#include "ops/common/elementwise_math.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"
#include "runtime/cuda/launch.h"

namespace onnx_amp {
namespace {

template <typename T, typename Op>
__global__ void ActivationKernel(T* data, int64_t count, Op op) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) { StoreFloat(data, i, op(LoadFloat(data, i))); }
}

struct BoundsOp {
  float lower, upper;
  __device__ float operator()(float x) const { return ClipOp{}(x, lower, upper); }
};

template <typename T, typename Op>
Status Launch(T* data, int64_t count, Op op, const CudaLaunchEnv& env) {
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  ActivationKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(data, count, op);
  return CudaLaunchStatus("fused activation");
}

}  // namespace

Status LaunchCudaActivation(CudaActivation kind, float alpha, float beta, DType dtype, void* data, int64_t count,
                            const CudaLaunchEnv& env) {
  if (kind == CudaActivation::kNone || count == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "fused activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T* values = static_cast<T*>(data);
    switch (kind) {
      case CudaActivation::kRelu: return Launch(values, count, ReluOp{}, env);
      case CudaActivation::kLeakyRelu: return Launch(values, count, LeakyReluOp{alpha}, env);
      case CudaActivation::kClip: return Launch(values, count, BoundsOp{alpha, beta}, env);
      case CudaActivation::kNone: break;
    }
    return Status::Ok();
  });
}

}  // namespace onnx_amp
