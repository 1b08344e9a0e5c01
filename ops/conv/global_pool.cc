// GlobalAveragePool, GlobalMaxPool and GlobalLpPool: one value per (n, c) plane over
// all spatial dims, kept as size-1 dims. Sums accumulate in float32 (float64 for
// float64) and each output is rounded once.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common/cpu_clones.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_compute.h"
#include "ops/common/float_lanes.h"
#include "ops/conv/conv_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

enum class GlobalKind { kAverage, kMax, kLp };

// Running sums or maxima of a float32 plane in 16 lanes (ops/common/float_lanes.h),
// lane l over the plane's elements l, l + 16, ...
struct PlaneLanes {
  Lanes value;
  LaneInts nan = {};  // lanes that met a NaN (max only)
};

ONNX_AMP_LANES_INLINE void StartLanes(GlobalKind kind, PlaneLanes& lanes) {
  lanes.value = SplatLanes(kind == GlobalKind::kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
  lanes.nan = LaneInts{};
}

// Adds (or takes the maximum of) values[0, count), the next values of a plane whose
// earlier values were a multiple of kLanes.
ONNX_AMP_LANES_INLINE void Accumulate(GlobalKind kind, const float* values, int64_t count, PlaneLanes& lanes) {
  Lanes acc = lanes.value;
  LaneInts nan = lanes.nan;
  int64_t i = 0;
  if (kind == GlobalKind::kMax) {
    for (; i + kLanes <= count; i += kLanes) {
      const Lanes v = LoadLanes(values + i);
      nan |= v != v;
      acc = MaxLanes(acc, v);
    }
    for (int l = 0; i < count; ++i, ++l) {
      nan[l] |= values[i] != values[i];
      acc[l] = values[i] > acc[l] ? values[i] : acc[l];
    }
  } else {
    for (; i + kLanes <= count; i += kLanes) acc += LoadLanes(values + i);
    for (int l = 0; i < count; ++i, ++l) acc[l] += values[i];
  }
  lanes.value = acc;
  lanes.nan = nan;
}

// The folded lanes; an average divides by the plane's size.
ONNX_AMP_LANES_INLINE float Finish(GlobalKind kind, const PlaneLanes& lanes, int64_t plane_size) {
  if (kind == GlobalKind::kAverage) return FoldSum(lanes.value) / static_cast<float>(plane_size);
  for (int l = 0; l < kLanes; ++l) {
    if (lanes.nan[l] != 0) return std::numeric_limits<float>::quiet_NaN();
  }
  return FoldMax(lanes.value);
}

// results[p] = the pool of values[p * plane_size, (p + 1) * plane_size) for p < planes.
ONNX_AMP_CPU_CLONES void PoolWholePlanes(GlobalKind kind, const float* values, int64_t planes, int64_t plane_size,
                                         float* results) {
  for (int64_t p = 0; p < planes; ++p) {
    PlaneLanes lanes;
    StartLanes(kind, lanes);
    Accumulate(kind, values + p * plane_size, plane_size, lanes);
    results[p] = Finish(kind, lanes, plane_size);
  }
}

// The next `count` values of one plane, whose earlier values (a multiple of kLanes) are
// in `lanes` already.
ONNX_AMP_CPU_CLONES void PoolPlanePart(GlobalKind kind, const float* values, int64_t count, PlaneLanes& lanes) {
  Accumulate(kind, values, count, lanes);
}

ONNX_AMP_CPU_CLONES float FinishPlane(GlobalKind kind, const PlaneLanes& lanes, int64_t plane_size) {
  return Finish(kind, lanes, plane_size);
}

// Average and max of float32, float16 and bfloat16 planes. Low-precision values are
// widened a block at a time by the vector conversions; a block holds as many whole
// planes as fit, and a plane longer than a block is read in block-long parts.
void RunLanePool(KernelContext& context, const Tensor& x, GlobalKind kind, Tensor& y) {
  constexpr int64_t kBlock = 1024;  // a multiple of kLanes, so each part keeps the lanes' order
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_size = planes == 0 ? 0 : x.num_elements() / planes;
  const int64_t planes_per_block = plane_size == 0 ? kBlock : std::clamp<int64_t>(kBlock / plane_size, 1, kBlock);
  context.threads().ParallelFor(planes, ItemsPerChunk(plane_size, 1 << 14), [&](int64_t begin, int64_t end) {
    float scratch[kBlock];
    float results[kBlock];
    for (int64_t first = begin; first < end; first += planes_per_block) {
      const int64_t count = std::min(planes_per_block, end - first);
      if (plane_size <= kBlock) {
        PoolWholePlanes(kind, Float32BlockOf(x, first * plane_size, count * plane_size, scratch), count, plane_size,
                        results);
      } else {
        PlaneLanes lanes;
        StartLanes(kind, lanes);
        for (int64_t offset = 0; offset < plane_size; offset += kBlock) {
          const int64_t n = std::min(kBlock, plane_size - offset);
          PoolPlanePart(kind, Float32BlockOf(x, first * plane_size + offset, n, scratch), n, lanes);
        }
        results[0] = FinishPlane(kind, lanes, plane_size);
      }
      StoreFloat32Block(results, first, count, y);
    }
  });
}

template <typename T>
void RunGlobalPool(KernelContext& context, const Tensor& x, GlobalKind kind, int64_t p, Tensor& y) {
  using Acc = ComputeType<T>;
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_size = planes == 0 ? 0 : x.num_elements() / planes;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  context.threads().ParallelFor(planes, ItemsPerChunk(plane_size, 1 << 14), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* values = in + plane * plane_size;
      Acc result = 0;
      switch (kind) {
        case GlobalKind::kAverage: {
          for (int64_t i = 0; i < plane_size; ++i) result += LoadValue(values[i]);
          result /= static_cast<Acc>(plane_size);
          break;
        }
        case GlobalKind::kMax: {
          result = -std::numeric_limits<Acc>::infinity();
          for (int64_t i = 0; i < plane_size; ++i) {
            const Acc value = LoadValue(values[i]);
            if (value > result || std::isnan(value)) result = value;
            if (std::isnan(result)) break;
          }
          break;
        }
        case GlobalKind::kLp: {
          for (int64_t i = 0; i < plane_size; ++i) result += std::pow(std::abs(LoadValue(values[i])), static_cast<Acc>(p));
          result = std::pow(result, Acc(1) / static_cast<Acc>(p));
          break;
        }
      }
      out[plane] = StoreValue<T>(result);
    }
  });
}

Status GlobalPool(KernelContext& context, GlobalKind kind) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "the pool needs input X");
  if (x->rank() < 2) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...], is " + ShapeToString(x->shape()));
  Shape y_shape(x->shape().size(), 1);
  y_shape[0] = x->dim(0);
  y_shape[1] = x->dim(1);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  const int64_t p = context.attr_int("p", 2);
  if (kind != GlobalKind::kLp && (x->dtype() == DType::kFloat32 || IsLowPrecision(x->dtype()))) {
    RunLanePool(context, *x, kind, *y);
    return Status::Ok();
  }
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    RunGlobalPool<decltype(tag)>(context, *x, kind, p, *y);
    return Status::Ok();
  });
}

}  // namespace

Status GlobalAveragePoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kAverage); }
Status GlobalMaxPoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kMax); }
Status GlobalLpPoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kLp); }

}  // namespace onnx_amp
