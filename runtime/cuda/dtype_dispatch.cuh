// DType dispatch and float32 compute for the CUDA kernels' host-side launchers.
#pragma once

#include <string>
#include <type_traits>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/device_numeric.cuh"

namespace onnx_amp {

template <typename T>
struct CudaTypeTag {
  using type = T;
};

template <typename T>
inline constexpr bool kCudaLowPrecision = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The arithmetic type of a storage type: float for float16/bfloat16/float32.
template <typename T>
using CudaCompute = std::conditional_t<kCudaLowPrecision<T>, float, T>;

template <typename C, typename T>
__device__ __forceinline__ C LoadAs(const T* data, int64_t index) {
  if constexpr (kCudaLowPrecision<T>) {
    return static_cast<C>(LoadFloat(data, index));
  } else {
    return static_cast<C>(data[index]);
  }
}

template <typename T, typename C>
__device__ __forceinline__ void StoreAs(T* data, int64_t index, C value) {
  if constexpr (kCudaLowPrecision<T>) {
    StoreFloat(data, index, static_cast<float>(value));
  } else {
    data[index] = static_cast<T>(value);
  }
}

inline Status CudaUnsupportedDType(DType dtype, const char* what) {
  return Unsupported(std::string(what) + ": no CUDA kernel for " + std::string(DTypeName(dtype)));
}

// body(CudaTypeTag<T>{}) for float32, float16 and bfloat16.
template <typename Body>
Status DispatchCudaFloat(DType dtype, const char* what, Body&& body) {
  if (dtype == DType::kFloat32) return body(CudaTypeTag<float>{});
  if (dtype == DType::kFloat16) return body(CudaTypeTag<Float16>{});
  if (dtype == DType::kBFloat16) return body(CudaTypeTag<BFloat16>{});
  return CudaUnsupportedDType(dtype, what);
}

// The float types and the index types int32/int64.
template <typename Body>
Status DispatchCudaNumeric(DType dtype, const char* what, Body&& body) {
  if (dtype == DType::kInt32) return body(CudaTypeTag<int32_t>{});
  if (dtype == DType::kInt64) return body(CudaTypeTag<int64_t>{});
  return DispatchCudaFloat(dtype, what, body);
}

}  // namespace onnx_amp
