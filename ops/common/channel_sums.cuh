// Per-channel sums over [batch, spatial] on the GPU, the shared body of
// BatchNormalization's statistics and gradients (ops/normalization) and a convolution's
// bias gradient (ops/conv): the channel's elements split across blocks into float32
// partial sums, folded in a fixed order by a second kernel. Device templates, included
// by the families' .cu files.
#pragma once

#include <algorithm>

#include "ops/common/channel_shape.h"
#include "runtime/core/status.h"
#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_numeric.cuh"
#include "runtime/cuda/launch.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

// Blocks per channel: one per 8192 elements, at most 64.
inline int64_t ChannelSplits(const CudaChannelShape& s) { return std::clamp<int64_t>(s.batch * s.spatial / 8192, 1, 64); }

// The float32 partial sums ChannelSums needs as scratch.
inline int64_t CudaChannelSumsScratch(const CudaChannelShape& s) { return s.channels * ChannelSplits(s) * 2; }

__device__ __forceinline__ int64_t ChannelElement(const CudaChannelShape& s, int64_t c, int64_t j) {
  return ((j / s.spatial) * s.channels + c) * s.spatial + j % s.spatial;
}

// Two per-channel sums of term(element index, channel) over a slice of the channel's
// batch * spatial elements: partial[(c * splits + split) * 2 + {0, 1}].
template <typename Term>
__global__ void ChannelSumsKernel(CudaChannelShape s, int64_t per_split, float* partial, Term term) {
  __shared__ float scratch[kWarpSize];
  const int64_t c = blockIdx.y;
  const int64_t count = s.batch * s.spatial;
  const int64_t begin = blockIdx.x * per_split;
  const int64_t end = min(begin + per_split, count);
  float a = 0.0f, b = 0.0f;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    const float2 t = term(ChannelElement(s, c, j), c);
    a += t.x;
    b += t.y;
  }
  a = BlockReduce(a, SumCombine{}, scratch);
  b = BlockReduce(b, SumCombine{}, scratch);
  if (threadIdx.x == 0) {
    partial[(c * gridDim.x + blockIdx.x) * 2] = a;
    partial[(c * gridDim.x + blockIdx.x) * 2 + 1] = b;
  }
}

// first[c] = sum of partial a / divisor, second[c] likewise (nullptr: skipped).
static __global__ void FinishChannelsKernel(const float* partial, int64_t splits, int64_t channels, float divisor,
                                            float* first, float* second) {
  ONNX_AMP_GRID_STRIDE_LOOP(c, channels) {
    float a = 0.0f, b = 0.0f;
    for (int64_t k = 0; k < splits; ++k) {
      a += partial[(c * splits + k) * 2];
      b += partial[(c * splits + k) * 2 + 1];
    }
    if (first != nullptr) first[c] = a / divisor;
    if (second != nullptr) second[c] = b / divisor;
  }
}

// The element itself: plain per-channel sums.
template <typename T>
struct ValueTerm {
  const T* x;
  __device__ float2 operator()(int64_t i, int64_t) const { return make_float2(LoadFloat(x, i), 0.0f); }
};

// Per-channel sums of `term` (first and second components, divided by `divisor`) into
// float32 `first` and `second` (nullptr: not wanted); `partial` holds
// CudaChannelSumsScratch floats.
template <typename Term>
Status ChannelSums(const CudaChannelShape& s, float* partial, float divisor, float* first, float* second, Term term,
                   const CudaLaunchEnv& env) {
  const int64_t splits = ChannelSplits(s);
  const int64_t per_split = (s.batch * s.spatial + splits - 1) / splits;
  ChannelSumsKernel<<<dim3(static_cast<unsigned>(splits), static_cast<unsigned>(s.channels)), 256, 0, env.stream>>>(
      s, per_split, partial, term);
  ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("channel sums"));
  const LaunchShape finish = ElementwiseLaunch(s.channels, env.multiprocessors);
  FinishChannelsKernel<<<finish.blocks, finish.threads, 0, env.stream>>>(partial, splits, s.channels, divisor, first,
                                                                          second);
  return CudaLaunchStatus("channel sums (finish)");
}

}  // namespace onnx_amp
