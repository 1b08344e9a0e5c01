#include "ops/reduction/reduction_cuda.h"

#include <algorithm>

#include "ops/reduction/reduce_math.h"
#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"

namespace onnx_amp {
namespace {

// How two partial accumulators of a kind combine: the kinds that add terms add them,
// Prod multiplies, Max/Min take their Step.
template <typename Kind>
struct PartialCombine {
  __device__ float operator()(float a, float b) const {
    if constexpr (std::is_same_v<Kind, ReduceProdKind>) return a * b;
    else if constexpr (std::is_same_v<Kind, ReduceMaxKind> || std::is_same_v<Kind, ReduceMinKind> ||
                       std::is_same_v<Kind, ReduceFiniteMaxKind>) return Kind::Step(a, b, 0.0f);
    else return a + b;
  }
};

// One row of `length` contiguous elements per output (inner == 1): a warp per row for
// short rows, a block per row for long ones.
template <typename Kind, typename T, typename Out, bool kWarpPerRow>
__global__ void RowReduceKernel(const T* x, Out* y, int64_t rows, int64_t length, const float* shift) {
  __shared__ float scratch[kWarpSize];
  const int64_t row = kWarpPerRow ? blockIdx.x * static_cast<int64_t>(blockDim.x / kWarpSize) + threadIdx.x / kWarpSize
                                  : static_cast<int64_t>(blockIdx.x);
  const int lane = kWarpPerRow ? threadIdx.x % kWarpSize : threadIdx.x;
  const int stride = kWarpPerRow ? kWarpSize : blockDim.x;
  if (kWarpPerRow && row >= rows) return;
  const float s = shift != nullptr ? shift[row] : 0.0f;
  float acc = Kind::template Init<float>();
  for (int64_t k = lane; k < length; k += stride) acc = Kind::Step(acc, LoadFloat(x, row * length + k), s);
  const PartialCombine<Kind> combine;
  acc = kWarpPerRow ? WarpReduce(acc, combine) : BlockReduce(acc, combine, scratch);
  if (lane != 0) return;
  StoreFloat(y, row, Kind::Final(acc, length, s));
}

constexpr int kColumnWidth = 32;  // outputs per block along inner (one per lane)
constexpr int kColumnDepth = 8;   // warps splitting the reduced axis

// inner > 1: a block takes 32 neighbouring outputs of one outer index; its 8 warps
// split the reduced axis, and blockIdx.y splits it further across blocks. A split
// grid writes float32 partial accumulators; FinishColumns folds them.
template <typename Kind, typename T, typename Out>
__global__ void ColumnReduceKernel(const T* x, Out* y, float* partial, CudaReduceShape shape, int64_t column_tiles,
                                   int64_t per_split, const float* shift) {
  __shared__ float tile[kColumnDepth][kColumnWidth + 1];
  const int64_t outer = blockIdx.x / column_tiles;
  const int64_t i = (blockIdx.x % column_tiles) * kColumnWidth + threadIdx.x;
  const int64_t begin = blockIdx.y * per_split;
  const int64_t end = min(begin + per_split, shape.reduced);
  const bool active = i < shape.inner;
  const int64_t out = outer * shape.inner + i;
  const float s = shift != nullptr && active ? shift[out] : 0.0f;
  float acc = Kind::template Init<float>();
  if (active) {
    for (int64_t k = begin + threadIdx.y; k < end; k += kColumnDepth) {
      acc = Kind::Step(acc, LoadFloat(x, (outer * shape.reduced + k) * shape.inner + i), s);
    }
  }
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || !active) return;
  const PartialCombine<Kind> combine;
  for (int d = 1; d < kColumnDepth; ++d) acc = combine(acc, tile[d][threadIdx.x]);
  if (gridDim.y > 1) {
    partial[blockIdx.y * (shape.outer * shape.inner) + out] = acc;
  } else {
    StoreFloat(y, out, Kind::Final(acc, shape.reduced, s));
  }
}

template <typename Kind, typename Out>
__global__ void FinishColumnsKernel(const float* partial, Out* y, int64_t outputs, int64_t splits, int64_t reduced,
                                    const float* shift) {
  const PartialCombine<Kind> combine;
  ONNX_AMP_GRID_STRIDE_LOOP(out, outputs) {
    float acc = partial[out];
    for (int64_t s = 1; s < splits; ++s) acc = combine(acc, partial[s * outputs + out]);
    StoreFloat(y, out, Kind::Final(acc, reduced, shift != nullptr ? shift[out] : 0.0f));
  }
}

template <typename Kind, typename T>
__global__ void GatherReduceKernel(const T* x, T* y, int64_t outputs, int64_t reduced, const int64_t* output_offsets,
                                   const int64_t* step_offsets, const float* shift) {
  ONNX_AMP_GRID_STRIDE_LOOP(m, outputs) {
    const float s = shift != nullptr ? shift[m] : 0.0f;
    float acc = Kind::template Init<float>();
    for (int64_t k = 0; k < reduced; ++k) acc = Kind::Step(acc, LoadFloat(x, output_offsets[m] + step_offsets[k]), s);
    StoreFloat(y, m, Kind::Final(acc, reduced, s));
  }
}

// The split of the reduced axis across blocks: enough blocks to fill the device when
// there are few outputs, each still folding at least 64 rows.
int64_t ColumnSplits(const CudaReduceShape& shape, int multiprocessors) {
  const int64_t tiles = shape.outer * ((shape.inner + kColumnWidth - 1) / kColumnWidth);
  const int64_t wanted = (2 * static_cast<int64_t>(multiprocessors) + tiles - 1) / tiles;
  return std::clamp<int64_t>(std::min(wanted, shape.reduced / 64), 1, 1024);
}

// Reduces in the blocked form with kind Kind into y (the output's type, or float32 for
// the shift of LogSumExp); `scratch` takes a split column reduction's partial values.
template <typename Kind, typename T, typename Out>
Status ReduceBlocked(const T* x, Out* y, const CudaReduceShape& shape, float* scratch, const float* shift,
                     const CudaLaunchEnv& env) {
  if (shape.inner == 1) {
    const int64_t rows = shape.outer;
    const RowLaunch launch = RowWiseLaunch(rows, shape.reduced);
    if (launch.warp_per_row) {
      RowReduceKernel<Kind, T, Out, true>
          <<<launch.blocks, launch.threads, 0, env.stream>>>(x, y, rows, shape.reduced, shift);
    } else {
      RowReduceKernel<Kind, T, Out, false>
          <<<launch.blocks, launch.threads, 0, env.stream>>>(x, y, rows, shape.reduced, shift);
    }
    return CudaLaunchStatus("row reduction");
  }
  const int64_t tiles = (shape.inner + kColumnWidth - 1) / kColumnWidth;
  const int64_t splits = ColumnSplits(shape, env.multiprocessors);
  const int64_t per_split = (shape.reduced + splits - 1) / splits;
  const dim3 grid(static_cast<unsigned>(shape.outer * tiles), static_cast<unsigned>(splits));
  const dim3 block(kColumnWidth, kColumnDepth);
  ColumnReduceKernel<Kind, T, Out><<<grid, block, 0, env.stream>>>(x, y, scratch, shape, tiles, per_split, shift);
  ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("column reduction"));
  if (splits == 1) return Status::Ok();
  const int64_t outputs = shape.outer * shape.inner;
  const LaunchShape finish = ElementwiseLaunch(outputs, env.multiprocessors);
  FinishColumnsKernel<Kind, Out><<<finish.blocks, finish.threads, 0, env.stream>>>(scratch, y, outputs, splits,
                                                                                 shape.reduced, shift);
  return CudaLaunchStatus("column reduction (finish)");
}

template <typename Body>
Status DispatchKind(CudaReduce kind, Body&& body) {
  switch (kind) {
    case CudaReduce::kSum: return body(ReduceSumKind{});
    case CudaReduce::kMean: return body(ReduceMeanKind{});
    case CudaReduce::kMax: return body(ReduceMaxKind{});
    case CudaReduce::kMin: return body(ReduceMinKind{});
    case CudaReduce::kProd: return body(ReduceProdKind{});
    case CudaReduce::kL1: return body(ReduceL1Kind{});
    case CudaReduce::kL2: return body(ReduceL2Kind{});
    case CudaReduce::kSumSquare: return body(ReduceSumSquareKind{});
    case CudaReduce::kLogSum: return body(ReduceLogSumKind{});
    case CudaReduce::kLogSumExp: return body(ReduceLogSumExpKind{});
  }
  return InternalError("unknown reduction");
}

}  // namespace

int64_t CudaReduceScratchFloats(const CudaReduceShape& shape, int multiprocessors) {
  const int64_t outputs = shape.outer * shape.inner;
  const int64_t splits = shape.inner == 1 ? 1 : ColumnSplits(shape, multiprocessors);
  // Partial accumulators of a split column reduction, and LogSumExp's shift.
  return outputs * (splits == 1 ? 0 : splits) + outputs;
}

Status LaunchCudaReduce(CudaReduce kind, DType dtype, const void* x, void* y, const CudaReduceShape& shape,
                        float* scratch, const CudaLaunchEnv& env) {
  if (shape.outer * shape.inner == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "reduction", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    return DispatchKind(kind, [&](auto kind_tag) -> Status {
      using Kind = decltype(kind_tag);
      const float* shift = nullptr;
      float* partial = scratch;
      if constexpr (std::is_same_v<Kind, ReduceLogSumExpKind>) {
        // The shift (largest finite value per output) goes to the scratch's tail.
        float* shift_out = scratch + (CudaReduceScratchFloats(shape, env.multiprocessors) - shape.outer * shape.inner);
        ONNX_AMP_RETURN_IF_ERROR(
            (ReduceBlocked<ReduceFiniteMaxKind, T, float>(in, shift_out, shape, partial, nullptr, env)));
        shift = shift_out;
      }
      return ReduceBlocked<Kind, T, T>(in, out, shape, partial, shift, env);
    });
  });
}

Status LaunchCudaReduceGather(CudaReduce kind, DType dtype, const void* x, void* y, int64_t outputs,
                              int64_t reduced, const int64_t* output_offsets, const int64_t* step_offsets,
                              const CudaLaunchEnv& env) {
  if (outputs == 0) return Status::Ok();
  if (kind == CudaReduce::kLogSumExp) return Unsupported("ReduceLogSumExp over scattered axes on CUDA");
  const LaunchShape launch = ElementwiseLaunch(outputs, env.multiprocessors);
  return DispatchCudaFloat(dtype, "reduction", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return DispatchKind(kind, [&](auto kind_tag) -> Status {
      using Kind = decltype(kind_tag);
      GatherReduceKernel<Kind, T><<<launch.blocks, launch.threads, 0, env.stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), outputs, reduced, output_offsets, step_offsets, nullptr);
      return CudaLaunchStatus("gather reduction");
    });
  });
}

}  // namespace onnx_amp
