// Loads and stores of the element types in CUDA kernels, as float (float16, bfloat16,
// float32) or their own type. The arithmetic is float32 whatever the storage (the
// numeric contract); conversions round to nearest even like the CPU's
// (runtime/core/float16.h): float16 through the hardware conversion (the same result
// for every finite and infinite value), bfloat16 through the shared function.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "runtime/core/float16.h"

namespace onnx_amp {

template <typename T>
__device__ __forceinline__ float LoadFloat(const T* data, int64_t index) {
  if constexpr (std::is_same_v<T, Float16>) {
    return __half2float(__ushort_as_half(data[index].bits));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16BitsToFloat(data[index].bits);
  } else {
    return static_cast<float>(data[index]);
  }
}

template <typename T>
__device__ __forceinline__ T FloatTo(float value) {
  if constexpr (std::is_same_v<T, Float16>) {
    return Float16::FromBits(__half_as_ushort(__float2half_rn(value)));
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16::FromBits(FloatToBFloat16Bits(value));
  } else {
    return static_cast<T>(value);
  }
}

template <typename T>
__device__ __forceinline__ void StoreFloat(T* data, int64_t index, float value) {
  data[index] = FloatTo<T>(value);
}

// The grid-stride loop of element-wise kernels.
#define ONNX_AMP_GRID_STRIDE_LOOP(index, count)                                                          \
  for (int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; index < (count); \
       index += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace onnx_amp
