#include "ops/conv/conv_cuda.h"

#include <cmath>

#include "ops/common/channel_sums.cuh"
#include "ops/common/elementwise_math.h"
#include "ops/conv/window_taps.h"
#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"
#include "runtime/cuda/launch.h"

namespace onnx_amp {
namespace {

// Visits the taps of output position `o` of a plane: visit(offset in the plane) for
// taps inside the input. Returns the taps inside the padded input.
template <typename Visit>
__device__ __forceinline__ int64_t ForEachTap(const CudaWindow& w, int64_t o, Visit visit) {
  int64_t o_index[kCudaMaxWindowRank];
  for (int d = w.rank - 1; d >= 0; --d) {
    o_index[d] = o % w.out[d];
    o /= w.out[d];
  }
  return WalkWindowTaps(w, w.rank, o_index, [&](int64_t, int64_t offset) { visit(offset); });
}

__device__ __forceinline__ int64_t PlaneSize(const CudaWindow& w, const int64_t* dims) {
  int64_t size = 1;
  for (int d = 0; d < w.rank; ++d) size *= dims[d];
  return size;
}

// The row-major plane offset as a column-major one (MaxPool storage_order 1).
__device__ __forceinline__ int64_t ColumnMajor(const CudaWindow& w, int64_t offset) {
  int64_t index[kCudaMaxWindowRank];
  for (int d = w.rank - 1; d >= 0; --d) {
    index[d] = offset % w.in[d];
    offset /= w.in[d];
  }
  int64_t result = 0, stride = 1;
  for (int d = 0; d < w.rank; ++d) {
    result += index[d] * stride;
    stride *= w.in[d];
  }
  return result;
}

// The first maximum of the window (NaN wins once seen), -1 for an empty window.
template <typename T>
__device__ __forceinline__ int64_t WindowArgMax(const CudaWindow& w, const T* plane, int64_t o, float& best) {
  int64_t best_offset = -1;
  best = -INFINITY;
  ForEachTap(w, o, [&](int64_t offset) {
    const float value = LoadFloat(plane, offset);
    if (best_offset < 0 || value > best || (value != value && best == best)) {
      best = value;
      best_offset = offset;
    }
  });
  return best_offset;
}

template <typename T>
__global__ void PoolKernel(CudaPool kind, const T* x, T* y, int64_t* indices, bool column_major,
                           bool count_include_pad, CudaWindow w) {
  const int64_t in_size = PlaneSize(w, w.in), out_size = PlaneSize(w, w.out);
  ONNX_AMP_GRID_STRIDE_LOOP(i, w.planes * out_size) {
    const int64_t plane = i / out_size, o = i % out_size;
    const T* x_plane = x + plane * in_size;
    if (kind == CudaPool::kMax) {
      float best;
      const int64_t offset = WindowArgMax(w, x_plane, o, best);
      StoreFloat(y, i, best);
      if (indices != nullptr) indices[i] = plane * in_size + (column_major ? ColumnMajor(w, offset) : offset);
    } else {
      float sum = 0.0f;
      int64_t taps = 0;
      const int64_t padded = ForEachTap(w, o, [&](int64_t offset) {
        sum += LoadFloat(x_plane, offset);
        ++taps;
      });
      StoreFloat(y, i, sum / static_cast<float>(count_include_pad ? padded : taps));
    }
  }
}

template <typename T>
__global__ void PoolGradKernel(CudaPool kind, const T* dy, const T* x, float* dx, bool count_include_pad,
                               CudaWindow w) {
  const int64_t in_size = PlaneSize(w, w.in), out_size = PlaneSize(w, w.out);
  ONNX_AMP_GRID_STRIDE_LOOP(i, w.planes * out_size) {
    const int64_t plane = i / out_size, o = i % out_size;
    const float g = LoadFloat(dy, i);
    float* dx_plane = dx + plane * in_size;
    if (kind == CudaPool::kMax) {
      float best;
      const int64_t offset = WindowArgMax(w, x + plane * in_size, o, best);
      if (offset >= 0) atomicAdd(dx_plane + offset, g);
    } else {
      int64_t taps = 0;
      const int64_t padded = ForEachTap(w, o, [&](int64_t) { ++taps; });
      const int64_t divisor = count_include_pad ? padded : taps;
      if (divisor == 0) continue;
      const float share = g / static_cast<float>(divisor);
      ForEachTap(w, o, [&](int64_t offset) { atomicAdd(dx_plane + offset, share); });
    }
  }
}

template <typename T>
__global__ void BiasActivationKernel(T* y, const T* bias, int64_t channels, int64_t spatial, int64_t total,
                                     int activation, float alpha, float beta) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, total) {
    float value = LoadFloat(y, i);
    if (bias != nullptr) value += LoadFloat(bias, (i / spatial) % channels);
    // The activation runs on the rounded value, as the separate node would.
    if (activation != 0) {
      const T rounded = FloatTo<T>(value);
      float r = LoadFloat(&rounded, 0);
      if (activation == 1) r = ReluOp{}(r);
      else if (activation == 2) r = LeakyReluOp{alpha}(r);
      else r = ClipOp{}(r, alpha, beta);
      value = r;
    }
    StoreFloat(y, i, value);
  }
}

// One plane per warp (short planes) or block: the mean or the max of its values.
template <bool kWarp, typename T>
__global__ void GlobalPoolKernel(CudaPool kind, const T* x, T* y, int64_t planes, int64_t spatial) {
  __shared__ float scratch[kWarpSize];
  const int64_t plane = kWarp ? blockIdx.x * static_cast<int64_t>(blockDim.x / kWarpSize) + threadIdx.x / kWarpSize
                              : static_cast<int64_t>(blockIdx.x);
  const int lane = kWarp ? threadIdx.x % kWarpSize : threadIdx.x;
  const int lanes = kWarp ? kWarpSize : blockDim.x;
  if (kWarp && plane >= planes) return;
  const T* in = x + plane * spatial;
  float value = kind == CudaPool::kMax ? -INFINITY : 0.0f;
  for (int64_t i = lane; i < spatial; i += lanes) {
    const float v = LoadFloat(in, i);
    value = kind == CudaPool::kMax ? MaxCombine{}(value, v) : value + v;
  }
  if (kind == CudaPool::kMax) value = kWarp ? WarpReduce(value, MaxCombine{}) : BlockReduce(value, MaxCombine{}, scratch);
  else value = kWarp ? WarpReduce(value, SumCombine{}) : BlockReduce(value, SumCombine{}, scratch);
  if (lane == 0) StoreFloat(y, plane, kind == CudaPool::kMax ? value : value / static_cast<float>(spatial));
}

}  // namespace

Status LaunchCudaGlobalPool(CudaPool kind, DType dtype, const void* x, void* y, int64_t planes, int64_t spatial,
                            const CudaLaunchEnv& env) {
  if (planes == 0) return Status::Ok();
  const RowLaunch launch = RowWiseLaunch(planes, spatial);
  return DispatchCudaFloat(dtype, "global pool", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    auto* out = static_cast<T*>(y);
    if (launch.warp_per_row) {
      GlobalPoolKernel<true, T><<<launch.blocks, launch.threads, 0, env.stream>>>(kind, in, out, planes, spatial);
    } else {
      GlobalPoolKernel<false, T><<<launch.blocks, launch.threads, 0, env.stream>>>(kind, in, out, planes, spatial);
    }
    return CudaLaunchStatus("global pool");
  });
}

int64_t CudaConvBiasGradScratch(const CudaChannelShape& shape) { return CudaChannelSumsScratch(shape); }

Status LaunchCudaConvBiasGrad(DType dtype, const void* dy, const CudaChannelShape& shape, float* sums, float* scratch,
                              const CudaLaunchEnv& env) {
  if (shape.channels == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "bias gradient", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return ChannelSums(shape, scratch, 1.0f, sums, nullptr, ValueTerm<T>{static_cast<const T*>(dy)}, env);
  });
}

Status LaunchCudaPool(CudaPool kind, DType dtype, const void* x, void* y, int64_t* indices, bool column_major,
                      bool count_include_pad, const CudaWindow& window, const CudaLaunchEnv& env) {
  int64_t outputs = window.planes;
  for (int d = 0; d < window.rank; ++d) outputs *= window.out[d];
  if (outputs == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(outputs, env.multiprocessors);
  return DispatchCudaFloat(dtype, "pool", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    PoolKernel<T><<<launch.blocks, launch.threads, 0, env.stream>>>(kind, static_cast<const T*>(x), static_cast<T*>(y),
                                                                    indices, column_major, count_include_pad, window);
    return CudaLaunchStatus("pool");
  });
}

Status LaunchCudaPoolGrad(CudaPool kind, DType dtype, const void* dy, const void* x, float* dx,
                          bool count_include_pad, const CudaWindow& window, const CudaLaunchEnv& env) {
  int64_t inputs = window.planes, outputs = window.planes;
  for (int d = 0; d < window.rank; ++d) {
    inputs *= window.in[d];
    outputs *= window.out[d];
  }
  ONNX_AMP_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dx, 0, inputs * sizeof(float), env.stream), "zero dX");
  if (outputs == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(outputs, env.multiprocessors);
  return DispatchCudaFloat(dtype, "pool gradient", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    PoolGradKernel<T><<<launch.blocks, launch.threads, 0, env.stream>>>(kind, static_cast<const T*>(dy),
                                                                        static_cast<const T*>(x), dx,
                                                                        count_include_pad, window);
    return CudaLaunchStatus("pool gradient");
  });
}

Status LaunchCudaBiasActivation(DType dtype, void* y, const void* bias, int64_t channels, int64_t spatial,
                                int64_t total, int activation, float alpha, float beta, const CudaLaunchEnv& env) {
  if (total == 0 || (bias == nullptr && activation == 0)) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(total, env.multiprocessors);
  return DispatchCudaFloat(dtype, "bias and activation", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    BiasActivationKernel<T><<<launch.blocks, launch.threads, 0, env.stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), channels, spatial, total, activation, alpha, beta);
    return CudaLaunchStatus("bias and activation");
  });
}

}  // namespace onnx_amp
