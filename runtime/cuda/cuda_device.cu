#include "runtime/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <memory>

#include "runtime/core/float16.h"

namespace onnx_amp {
namespace {

Status CudaError(cudaError_t error, const char* what) {
  return InternalError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

#define ONNX_AMP_CUDA_RETURN_IF_ERROR(call, what)        \
  do {                                                   \
    cudaError_t onnx_amp_cuda_error_ = (call);           \
    if (onnx_amp_cuda_error_ != cudaSuccess) return CudaError(onnx_amp_cuda_error_, what); \
  } while (0)

struct DeviceFree {
  void operator()(void* pointer) const { cudaFree(pointer); }
};
using DevicePointer = std::unique_ptr<void, DeviceFree>;

Expected<DevicePointer> DeviceAlloc(size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, bytes == 0 ? 1 : bytes);
  if (error != cudaSuccess) return CudaError(error, "cudaMalloc");
  return DevicePointer(pointer);
}

struct ToHalf {
  __device__ uint16_t operator()(float v) const { return FloatToHalfBits(v); }
};
struct FromHalf {
  __device__ float operator()(uint16_t v) const { return HalfBitsToFloat(v); }
};
struct ToBFloat16 {
  __device__ uint16_t operator()(float v) const { return FloatToBFloat16Bits(v); }
};
struct FromBFloat16 {
  __device__ float operator()(uint16_t v) const { return BFloat16BitsToFloat(v); }
};

template <typename Src, typename Dst, typename Op>
__global__ void MapKernel(const Src* src, Dst* dst, size_t count, Op op) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = op(src[i]);
  }
}

template <typename Src, typename Dst, typename Op>
Status MapOnDevice(const Src* src, Dst* dst, size_t count, Op op) {
  if (CudaDeviceCount() == 0) return Unsupported("no CUDA device is visible");
  ONNX_AMP_ASSIGN_OR_RETURN(DevicePointer device_src, DeviceAlloc(count * sizeof(Src)));
  ONNX_AMP_ASSIGN_OR_RETURN(DevicePointer device_dst, DeviceAlloc(count * sizeof(Dst)));
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaMemcpy(device_src.get(), src, count * sizeof(Src), cudaMemcpyHostToDevice),
                                "copy to device");
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(std::min<size_t>((count + kThreads - 1) / kThreads, 4096));
  MapKernel<<<blocks == 0 ? 1 : blocks, kThreads>>>(static_cast<const Src*>(device_src.get()),
                                                    static_cast<Dst*>(device_dst.get()), count, op);
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "kernel launch");
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, device_dst.get(), count * sizeof(Dst), cudaMemcpyDeviceToHost),
                                "copy to host");
  return Status::Ok();
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

Expected<std::string> CudaDeviceDescription(int index) {
  cudaDeviceProp properties{};
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&properties, index), "cudaGetDeviceProperties");
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", " + std::to_string(properties.totalGlobalMem >> 30) + " GiB)";
}

Status CudaConvertFloatToHalf(const float* src, uint16_t* dst, size_t count) {
  return MapOnDevice(src, dst, count, ToHalf{});
}
Status CudaConvertHalfToFloat(const uint16_t* src, float* dst, size_t count) {
  return MapOnDevice(src, dst, count, FromHalf{});
}
Status CudaConvertFloatToBFloat16(const float* src, uint16_t* dst, size_t count) {
  return MapOnDevice(src, dst, count, ToBFloat16{});
}
Status CudaConvertBFloat16ToFloat(const uint16_t* src, float* dst, size_t count) {
  return MapOnDevice(src, dst, count, FromBFloat16{});
}

}  // namespace onnx_amp
