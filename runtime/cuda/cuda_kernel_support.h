// What the KernelContext side of a CUDA kernel needs: its device and launch
// environment. The kernels themselves (.cu files) take plain pointers and a
// CudaLaunchEnv, so that they compile without the executor's headers.
#pragma once

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/launch_env.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

inline CudaDevice& CudaOf(const KernelContext& context) {
  Device* device = context.device_context();
  ONNX_AMP_ASSERT(device != nullptr && device->kind() == DeviceKind::kCuda, "a CUDA kernel runs on a CUDA device");
  return static_cast<CudaDevice&>(*device);
}

inline CudaLaunchEnv LaunchEnvOf(const KernelContext& context) {
  const CudaDevice& device = CudaOf(context);
  return CudaLaunchEnv{device.stream(), device.multiprocessors()};
}

// The bit of `dtype` in a KernelDef::dtypes mask.
constexpr uint32_t DTypeBit(DType dtype) { return 1u << static_cast<int>(dtype); }
inline constexpr uint32_t kCudaFloatDTypes =
    DTypeBit(DType::kFloat32) | DTypeBit(DType::kFloat16) | DTypeBit(DType::kBFloat16);

}  // namespace onnx_amp
