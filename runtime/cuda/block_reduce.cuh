// Warp- and block-wide reductions of float32 partial values for the row-wise CUDA
// kernels (reductions, softmax, normalisation). The combine function is the caller's
// (sum, max), applied in a fixed tree order, so results do not depend on timing.
#pragma once

#include <cuda_runtime.h>

#include "runtime/cuda/launch.h"

namespace onnx_amp {

template <typename Combine>
__device__ __forceinline__ float WarpReduce(float value, Combine combine) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// Every thread of the block gets the result. `scratch` holds one float per warp (32).
template <typename Combine>
__device__ __forceinline__ float BlockReduce(float value, Combine combine, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  value = WarpReduce(value, combine);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = scratch[0];
  for (int w = 1; w < warps; ++w) value = combine(value, scratch[w]);
  return value;
}

struct SumCombine {
  __device__ float operator()(float a, float b) const { return a + b; }
};
// NaN wins, as the reference's max does.
struct MaxCombine {
  __device__ float operator()(float a, float b) const { return (b > a || b != b) ? b : a; }
};

}  // namespace onnx_amp
