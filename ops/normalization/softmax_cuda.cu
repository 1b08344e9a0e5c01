// Softmax and LogSoftmax along one axis, and their gradients. Contiguous rows (inner ==
// 1) take a warp or a block each; strided lines one thread each.
#include "ops/normalization/normalization_cuda.h"

#include <cmath>

#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"

namespace onnx_amp {
namespace {

// Element k of line `line` of the view.
__device__ __forceinline__ int64_t LineIndex(const CudaAxisView& v, int64_t line, int64_t k) {
  return (line / v.inner) * v.extent * v.inner + line % v.inner + k * v.inner;
}

// The threads of one line: a warp, a block, or one thread; `Reduce` combines their partials.
struct LineThreads {
  int first;
  int stride;
};

template <CudaSoftmax kKind, typename T, typename Reduce>
__device__ void SoftmaxLine(const T* x, T* y, const CudaAxisView& v, int64_t line, LineThreads t, Reduce reduce) {
  float max = -INFINITY;
  for (int64_t k = t.first; k < v.extent; k += t.stride) max = MaxCombine{}(max, LoadFloat(x, LineIndex(v, line, k)));
  max = reduce(max, MaxCombine{});
  float sum = 0.0f;
  for (int64_t k = t.first; k < v.extent; k += t.stride) sum += expf(LoadFloat(x, LineIndex(v, line, k)) - max);
  sum = reduce(sum, SumCombine{});
  const float log_sum = logf(sum);
  for (int64_t k = t.first; k < v.extent; k += t.stride) {
    const int64_t i = LineIndex(v, line, k);
    const float shifted = LoadFloat(x, i) - max;
    StoreFloat(y, i, kKind == CudaSoftmax::kSoftmax ? expf(shifted) / sum : shifted - log_sum);
  }
}

template <CudaSoftmax kKind, typename T, typename Reduce>
__device__ void SoftmaxGradLine(const T* dy, const T* y, T* dx, const CudaAxisView& v, int64_t line, LineThreads t,
                                Reduce reduce) {
  float sum = 0.0f;
  for (int64_t k = t.first; k < v.extent; k += t.stride) {
    const int64_t i = LineIndex(v, line, k);
    sum += kKind == CudaSoftmax::kSoftmax ? LoadFloat(dy, i) * LoadFloat(y, i) : LoadFloat(dy, i);
  }
  sum = reduce(sum, SumCombine{});
  for (int64_t k = t.first; k < v.extent; k += t.stride) {
    const int64_t i = LineIndex(v, line, k);
    const float g = LoadFloat(dy, i);
    const float out = LoadFloat(y, i);
    StoreFloat(dx, i, kKind == CudaSoftmax::kSoftmax ? out * (g - sum) : g - expf(out) * sum);
  }
}

struct WarpLines {
  template <typename Combine>
  __device__ float operator()(float value, Combine combine) const { return WarpReduce(value, combine); }
};
struct BlockLines {
  float* scratch;
  template <typename Combine>
  __device__ float operator()(float value, Combine combine) const { return BlockReduce(value, combine, scratch); }
};
struct ThreadLines {
  template <typename Combine>
  __device__ float operator()(float value, Combine) const { return value; }
};

// kMode 0: a warp per line, 1: a block per line, 2: a thread per line.
template <int kMode, CudaSoftmax kKind, typename T>
__global__ void SoftmaxKernel(const T* x, T* y, CudaAxisView v, int64_t lines) {
  __shared__ float scratch[kWarpSize];
  if constexpr (kMode == 0) {
    const int64_t line = blockIdx.x * static_cast<int64_t>(blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    if (line < lines) SoftmaxLine<kKind>(x, y, v, line, {static_cast<int>(threadIdx.x % kWarpSize), kWarpSize}, WarpLines{});
  } else if constexpr (kMode == 1) {
    SoftmaxLine<kKind>(x, y, v, blockIdx.x, {static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)},
                       BlockLines{scratch});
  } else {
    ONNX_AMP_GRID_STRIDE_LOOP(line, lines) { SoftmaxLine<kKind>(x, y, v, line, {0, 1}, ThreadLines{}); }
  }
}

template <int kMode, CudaSoftmax kKind, typename T>
__global__ void SoftmaxGradKernel(const T* dy, const T* y, T* dx, CudaAxisView v, int64_t lines) {
  __shared__ float scratch[kWarpSize];
  if constexpr (kMode == 0) {
    const int64_t line = blockIdx.x * static_cast<int64_t>(blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    if (line < lines) {
      SoftmaxGradLine<kKind>(dy, y, dx, v, line, {static_cast<int>(threadIdx.x % kWarpSize), kWarpSize}, WarpLines{});
    }
  } else if constexpr (kMode == 1) {
    SoftmaxGradLine<kKind>(dy, y, dx, v, blockIdx.x, {static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)},
                           BlockLines{scratch});
  } else {
    ONNX_AMP_GRID_STRIDE_LOOP(line, lines) { SoftmaxGradLine<kKind>(dy, y, dx, v, line, {0, 1}, ThreadLines{}); }
  }
}

// Launches `kernel<mode>` with the mode the view calls for.
template <typename Launch>
Status LaunchByMode(const CudaAxisView& v, const CudaLaunchEnv& env, Launch&& launch) {
  const int64_t lines = v.outer * v.inner;
  if (v.inner > 1) {
    const LaunchShape shape = ElementwiseLaunch(lines, env.multiprocessors);
    launch(std::integral_constant<int, 2>{}, shape.blocks, shape.threads, lines);
  } else {
    const RowLaunch rows = RowWiseLaunch(lines, v.extent);
    if (rows.warp_per_row) launch(std::integral_constant<int, 0>{}, rows.blocks, rows.threads, lines);
    else launch(std::integral_constant<int, 1>{}, rows.blocks, rows.threads, lines);
  }
  return CudaLaunchStatus("softmax");
}

}  // namespace

Status LaunchCudaSoftmax(CudaSoftmax kind, DType dtype, const void* x, void* y, const CudaAxisView& view,
                         const CudaLaunchEnv& env) {
  if (view.outer * view.extent * view.inner == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "Softmax", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return LaunchByMode(view, env, [&](auto mode, int64_t blocks, int threads, int64_t lines) {
      constexpr int kMode = decltype(mode)::value;
      if (kind == CudaSoftmax::kSoftmax) {
        SoftmaxKernel<kMode, CudaSoftmax::kSoftmax, T><<<blocks, threads, 0, env.stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), view, lines);
      } else {
        SoftmaxKernel<kMode, CudaSoftmax::kLogSoftmax, T><<<blocks, threads, 0, env.stream>>>(
            static_cast<const T*>(x), static_cast<T*>(y), view, lines);
      }
    });
  });
}

Status LaunchCudaSoftmaxGrad(CudaSoftmax kind, DType dtype, const void* dy, const void* y, void* dx,
                             const CudaAxisView& view, const CudaLaunchEnv& env) {
  if (view.outer * view.extent * view.inner == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "SoftmaxGrad", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return LaunchByMode(view, env, [&](auto mode, int64_t blocks, int threads, int64_t lines) {
      constexpr int kMode = decltype(mode)::value;
      if (kind == CudaSoftmax::kSoftmax) {
        SoftmaxGradKernel<kMode, CudaSoftmax::kSoftmax, T><<<blocks, threads, 0, env.stream>>>(
            static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<T*>(dx), view, lines);
      } else {
        SoftmaxGradKernel<kMode, CudaSoftmax::kLogSoftmax, T><<<blocks, threads, 0, env.stream>>>(
            static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<T*>(dx), view, lines);
      }
    });
  });
}

}  // namespace onnx_amp
