// LayerNormalization and BatchNormalization, forward and backward. Rows (LayerNorm)
// take a warp or a block each; per-channel sums (BatchNorm) and per-column sums
// (LayerNorm's dScale, dBias) split their long axis across blocks into float32 partial
// sums that a second kernel folds in a fixed order.
#include "ops/normalization/normalization_cuda.h"

#include <algorithm>
#include <cmath>

#include "ops/common/channel_sums.cuh"
#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"

namespace onnx_amp {
namespace {

// The row of this warp (kWarp) or block, the lane index within it and the lane count.
template <bool kWarp>
__device__ __forceinline__ void RowOf(int64_t& row, int& lane, int& lanes) {
  if constexpr (kWarp) {
    row = blockIdx.x * static_cast<int64_t>(blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
    lane = threadIdx.x % kWarpSize;
    lanes = kWarpSize;
  } else {
    row = blockIdx.x;
    lane = threadIdx.x;
    lanes = blockDim.x;
  }
}

template <bool kWarp, typename Combine>
__device__ __forceinline__ float RowReduce(float value, Combine combine, float* scratch) {
  if constexpr (kWarp) return WarpReduce(value, combine);
  else return BlockReduce(value, combine, scratch);
}

template <bool kWarp, typename T>
__global__ void LayerNormKernel(const T* x, const T* scale, const T* bias, T* y, float* mean_out, float* inv_std_out,
                                int64_t rows, int64_t cols, float epsilon) {
  __shared__ float scratch[kWarpSize];
  int64_t row;
  int lane, lanes;
  RowOf<kWarp>(row, lane, lanes);
  if (row >= rows) return;
  const T* in = x + row * cols;
  float sum = 0.0f;
  for (int64_t j = lane; j < cols; j += lanes) sum += LoadFloat(in, j);
  const float mean = RowReduce<kWarp>(sum, SumCombine{}, scratch) / static_cast<float>(cols);
  float squares = 0.0f;
  for (int64_t j = lane; j < cols; j += lanes) {
    const float d = LoadFloat(in, j) - mean;
    squares += d * d;
  }
  const float inv_std = 1.0f / sqrtf(RowReduce<kWarp>(squares, SumCombine{}, scratch) / static_cast<float>(cols) + epsilon);
  for (int64_t j = lane; j < cols; j += lanes) {
    const float normalized = (LoadFloat(in, j) - mean) * inv_std;
    StoreFloat(y, row * cols + j, normalized * LoadFloat(scale, j) + (bias != nullptr ? LoadFloat(bias, j) : 0.0f));
  }
  if (lane == 0 && mean_out != nullptr) mean_out[row] = mean;
  if (lane == 0 && inv_std_out != nullptr) inv_std_out[row] = inv_std;
}

template <bool kWarp, typename T>
__global__ void LayerNormGradKernel(const T* dy, const T* x, const float* scale, const float* mean,
                                    const float* inv_std, T* dx, int64_t rows, int64_t cols) {
  __shared__ float scratch[kWarpSize];
  int64_t row;
  int lane, lanes;
  RowOf<kWarp>(row, lane, lanes);
  if (row >= rows) return;
  const int64_t base = row * cols;
  const float m = mean[row], s = inv_std[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t j = lane; j < cols; j += lanes) {
    const float gs = LoadFloat(dy, base + j) * scale[j];
    sum_g += gs;
    sum_gx += gs * (LoadFloat(x, base + j) - m) * s;
  }
  const float mean_g = RowReduce<kWarp>(sum_g, SumCombine{}, scratch) / static_cast<float>(cols);
  const float mean_gx = RowReduce<kWarp>(sum_gx, SumCombine{}, scratch) / static_cast<float>(cols);
  for (int64_t j = lane; j < cols; j += lanes) {
    const float xhat = (LoadFloat(x, base + j) - m) * s;
    StoreFloat(dx, base + j, s * (LoadFloat(dy, base + j) * scale[j] - mean_g - xhat * mean_gx));
  }
}

constexpr int kColumnWidth = 32;
constexpr int kColumnDepth = 8;

int64_t LayerNormSplits(int64_t rows) { return std::clamp<int64_t>(rows / 256, 1, 64); }

// Partial sums of dY * xhat (dScale) and dY (dBias) per column over a slice of rows.
template <typename T>
__global__ void LayerNormParamGradKernel(const T* dy, const T* x, const float* mean, const float* inv_std,
                                         float* partial, int64_t rows, int64_t cols, int64_t per_split) {
  __shared__ float tile[2][kColumnDepth][kColumnWidth + 1];
  const int64_t j = blockIdx.x * static_cast<int64_t>(kColumnWidth) + threadIdx.x;
  const int64_t begin = blockIdx.y * per_split;
  const int64_t end = min(begin + per_split, rows);
  float dscale = 0.0f, dbias = 0.0f;
  if (j < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnDepth) {
      const float g = LoadFloat(dy, r * cols + j);
      dscale += g * (LoadFloat(x, r * cols + j) - mean[r]) * inv_std[r];
      dbias += g;
    }
  }
  tile[0][threadIdx.y][threadIdx.x] = dscale;
  tile[1][threadIdx.y][threadIdx.x] = dbias;
  __syncthreads();
  if (threadIdx.y != 0 || j >= cols) return;
  for (int d = 1; d < kColumnDepth; ++d) {
    dscale += tile[0][d][threadIdx.x];
    dbias += tile[1][d][threadIdx.x];
  }
  partial[(blockIdx.y * 2) * cols + j] = dscale;
  partial[(blockIdx.y * 2 + 1) * cols + j] = dbias;
}

// Folds `splits` partial pairs per column: [split][2][cols].
__global__ void FoldPairsKernel(const float* partial, float* first, float* second, int64_t splits, int64_t cols) {
  ONNX_AMP_GRID_STRIDE_LOOP(j, cols) {
    float a = 0.0f, b = 0.0f;
    for (int64_t s = 0; s < splits; ++s) {
      a += partial[(s * 2) * cols + j];
      b += partial[(s * 2 + 1) * cols + j];
    }
    if (first != nullptr) first[j] = a;
    if (second != nullptr) second[j] = b;
  }
}

template <typename T>
struct SquaredDeviationTerm {
  const T* x;
  const float* mean;
  __device__ float2 operator()(int64_t i, int64_t c) const {
    const float d = LoadFloat(x, i) - mean[c];
    return make_float2(d * d, 0.0f);
  }
};
// (dY * xhat, dY): dScale and dBias.
template <typename T>
struct ParameterGradTerm {
  const T* dy;
  const T* x;
  const float* mean;
  const float* inv_std;
  __device__ float2 operator()(int64_t i, int64_t c) const {
    const float g = LoadFloat(dy, i);
    return make_float2(g * (LoadFloat(x, i) - mean[c]) * inv_std[c], g);
  }
};

__global__ void InverseStdKernel(const float* var, float* inv_std, int64_t channels, float epsilon) {
  ONNX_AMP_GRID_STRIDE_LOOP(c, channels) { inv_std[c] = 1.0f / sqrtf(var[c] + epsilon); }
}

template <typename T>
__global__ void BatchNormApplyKernel(const T* x, T* y, CudaChannelShape s, const float* scale, const float* bias,
                                     const float* mean, const float* var, float epsilon) {
  const int64_t total = s.batch * s.channels * s.spatial;
  ONNX_AMP_GRID_STRIDE_LOOP(i, total) {
    const int64_t c = (i / s.spatial) % s.channels;
    const float a = scale[c] / sqrtf(var[c] + epsilon);
    StoreFloat(y, i, (LoadFloat(x, i) - mean[c]) * a + bias[c]);
  }
}

template <typename T>
__global__ void BatchNormGradKernel(const T* dy, const T* x, T* dx, CudaChannelShape s, const float* scale,
                                    const float* mean, const float* inv_std, const float* dscale, const float* dbias,
                                    bool training) {
  const int64_t total = s.batch * s.channels * s.spatial;
  const float count = static_cast<float>(s.batch * s.spatial);
  ONNX_AMP_GRID_STRIDE_LOOP(i, total) {
    const int64_t c = (i / s.spatial) % s.channels;
    const float g = LoadFloat(dy, i);
    if (training) {
      const float xhat = (LoadFloat(x, i) - mean[c]) * inv_std[c];
      StoreFloat(dx, i, scale[c] * inv_std[c] * (g - dbias[c] / count - xhat * dscale[c] / count));
    } else {
      StoreFloat(dx, i, scale[c] * inv_std[c] * g);
    }
  }
}

__global__ void RunningUpdateKernel(const float* running, const float* current, float* out, int64_t count,
                                    float momentum) {
  ONNX_AMP_GRID_STRIDE_LOOP(c, count) { out[c] = running[c] * momentum + current[c] * (1.0f - momentum); }
}

}  // namespace

Status LaunchCudaLayerNorm(DType dtype, const void* x, const void* scale, const void* bias, void* y, float* mean,
                           float* inv_std, int64_t rows, int64_t cols, float epsilon, const CudaLaunchEnv& env) {
  if (rows * cols == 0) return Status::Ok();
  const RowLaunch launch = RowWiseLaunch(rows, cols);
  return DispatchCudaFloat(dtype, "LayerNormalization", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    const auto* s = static_cast<const T*>(scale);
    const auto* b = static_cast<const T*>(bias);
    if (launch.warp_per_row) {
      LayerNormKernel<true, T><<<launch.blocks, launch.threads, 0, env.stream>>>(in, s, b, static_cast<T*>(y), mean,
                                                                                inv_std, rows, cols, epsilon);
    } else {
      LayerNormKernel<false, T><<<launch.blocks, launch.threads, 0, env.stream>>>(in, s, b, static_cast<T*>(y), mean,
                                                                                 inv_std, rows, cols, epsilon);
    }
    return CudaLaunchStatus("LayerNormalization");
  });
}

int64_t CudaLayerNormGradScratch(int64_t rows, int64_t cols) { return LayerNormSplits(rows) * 2 * cols; }

Status LaunchCudaLayerNormGrad(DType dtype, const void* dy, const void* x, const float* scale, const float* mean,
                               const float* inv_std, void* dx, float* dscale, float* dbias, int64_t rows, int64_t cols,
                               float* scratch, const CudaLaunchEnv& env) {
  if (rows * cols == 0) return Status::Ok();
  const RowLaunch launch = RowWiseLaunch(rows, cols);
  return DispatchCudaFloat(dtype, "LayerNormalizationGrad", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* g = static_cast<const T*>(dy);
    const auto* in = static_cast<const T*>(x);
    if (dx != nullptr) {
      if (launch.warp_per_row) {
        LayerNormGradKernel<true, T><<<launch.blocks, launch.threads, 0, env.stream>>>(
            g, in, scale, mean, inv_std, static_cast<T*>(dx), rows, cols);
      } else {
        LayerNormGradKernel<false, T><<<launch.blocks, launch.threads, 0, env.stream>>>(
            g, in, scale, mean, inv_std, static_cast<T*>(dx), rows, cols);
      }
      ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("LayerNormalizationGrad"));
    }
    if (dscale == nullptr && dbias == nullptr) return Status::Ok();
    const int64_t splits = LayerNormSplits(rows);
    const int64_t per_split = (rows + splits - 1) / splits;
    const dim3 grid(static_cast<unsigned>((cols + kColumnWidth - 1) / kColumnWidth), static_cast<unsigned>(splits));
    LayerNormParamGradKernel<T><<<grid, dim3(kColumnWidth, kColumnDepth), 0, env.stream>>>(g, in, mean, inv_std, scratch,
                                                                                          rows, cols, per_split);
    ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("LayerNormalizationGrad (parameters)"));
    const LaunchShape fold = ElementwiseLaunch(cols, env.multiprocessors);
    FoldPairsKernel<<<fold.blocks, fold.threads, 0, env.stream>>>(scratch, dscale, dbias, splits, cols);
    return CudaLaunchStatus("LayerNormalizationGrad (fold)");
  });
}

int64_t CudaBatchNormScratch(const CudaChannelShape& shape) { return CudaChannelSumsScratch(shape) + shape.channels; }

Status LaunchCudaChannelStatistics(DType dtype, const void* x, const CudaChannelShape& shape, float* mean,
                                   float* var, float* scratch, const CudaLaunchEnv& env) {
  if (shape.channels == 0) return Status::Ok();
  const float count = static_cast<float>(shape.batch * shape.spatial);
  return DispatchCudaFloat(dtype, "BatchNormalization", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* in = static_cast<const T*>(x);
    ONNX_AMP_RETURN_IF_ERROR(ChannelSums(shape, scratch, count, mean, nullptr, ValueTerm<T>{in}, env));
    return ChannelSums(shape, scratch, count, var, nullptr, SquaredDeviationTerm<T>{in, mean}, env);
  });
}

Status LaunchCudaBatchNormApply(DType dtype, const void* x, void* y, const CudaChannelShape& shape,
                                const float* scale, const float* bias, const float* mean, const float* var,
                                float epsilon, const CudaLaunchEnv& env) {
  const int64_t total = shape.batch * shape.channels * shape.spatial;
  if (total == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(total, env.multiprocessors);
  return DispatchCudaFloat(dtype, "BatchNormalization", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    BatchNormApplyKernel<T><<<launch.blocks, launch.threads, 0, env.stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), shape, scale, bias, mean, var, epsilon);
    return CudaLaunchStatus("BatchNormalization");
  });
}

Status LaunchCudaRunningUpdate(const float* running, const float* current, float* out, int64_t count,
                               float momentum, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  RunningUpdateKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(running, current, out, count, momentum);
  return CudaLaunchStatus("BatchNormalization running statistics");
}

Status LaunchCudaBatchNormGrad(DType dtype, const void* dy, const void* x, const float* scale, const float* mean,
                               const float* var, void* dx, float* dscale, float* dbias, const CudaChannelShape& shape,
                               float epsilon, bool training, float* scratch, const CudaLaunchEnv& env) {
  const int64_t total = shape.batch * shape.channels * shape.spatial;
  if (shape.channels == 0) return Status::Ok();
  float* inv_std = scratch + CudaChannelSumsScratch(shape);
  const LaunchShape per_channel = ElementwiseLaunch(shape.channels, env.multiprocessors);
  InverseStdKernel<<<per_channel.blocks, per_channel.threads, 0, env.stream>>>(var, inv_std, shape.channels, epsilon);
  ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("BatchNormalizationGrad"));
  return DispatchCudaFloat(dtype, "BatchNormalizationGrad", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const auto* g = static_cast<const T*>(dy);
    const auto* in = static_cast<const T*>(x);
    ONNX_AMP_RETURN_IF_ERROR(
        ChannelSums(shape, scratch, 1.0f, dscale, dbias, ParameterGradTerm<T>{g, in, mean, inv_std}, env));
    if (dx == nullptr || total == 0) return Status::Ok();
    const LaunchShape launch = ElementwiseLaunch(total, env.multiprocessors);
    BatchNormGradKernel<T><<<launch.blocks, launch.threads, 0, env.stream>>>(
        g, in, static_cast<T*>(dx), shape, scale, mean, inv_std, dscale, dbias, training);
    return CudaLaunchStatus("BatchNormalizationGrad");
  });
}

}  // namespace onnx_amp
