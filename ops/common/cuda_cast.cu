#include "ops/common/cuda_cast.h"

#include "ops/common/cast_math.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"
#include "runtime/cuda/launch.h"

namespace onnx_amp {
namespace {

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t count) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) {
    if constexpr (std::is_same_v<From, To>) {
      y[i] = x[i];
    } else if constexpr ((kCudaLowPrecision<From> || std::is_same_v<From, float>) &&
                         (kCudaLowPrecision<To> || std::is_same_v<To, float>)) {
      StoreFloat(y, i, LoadFloat(x, i));  // the hot path of mixed precision, hardware rounding
    } else {
      y[i] = CastValue<From, To>(x[i]);
    }
  }
}

// body(CudaTypeTag<T>{}) for every dtype Cast takes.
template <typename Body>
Status DispatchCastType(DType dtype, Body&& body) {
  if (dtype == DType::kFloat64) return body(CudaTypeTag<double>{});
  if (dtype == DType::kInt8) return body(CudaTypeTag<int8_t>{});
  if (dtype == DType::kUInt8) return body(CudaTypeTag<uint8_t>{});
  if (dtype == DType::kBool) return body(CudaTypeTag<bool>{});
  return DispatchCudaNumeric(dtype, "Cast", body);
}

}  // namespace

bool CudaCastSupports(DType dtype) {
  return DispatchCastType(dtype, [](auto) { return Status::Ok(); }).ok();
}

Status LaunchCudaCast(DType from, DType to, const void* x, void* y, int64_t count, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  return DispatchCastType(from, [&](auto from_tag) -> Status {
    using From = typename decltype(from_tag)::type;
    return DispatchCastType(to, [&](auto to_tag) -> Status {
      using To = typename decltype(to_tag)::type;
      CastKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const From*>(x), static_cast<To*>(y),
                                                                     count);
      return CudaLaunchStatus("Cast");
    });
  });
}

}  // namespace onnx_amp
