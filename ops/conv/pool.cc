// MaxPool (with the optional Indices output and storage_order), AveragePool
// (count_include_pad) and LpPool as plain loops over output positions, for 1-D to
// 3-D windows with strides, dilations, pads, auto_pad and ceil_mode. Sums accumulate
// in float32 (float64 for float64) and each output is rounded once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/conv/conv_kernels.h"
#include "ops/conv/pool_2d.h"
#include "ops/conv/window_geometry.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

struct PoolOptions {
  PoolKind kind = PoolKind::kMax;
  bool count_include_pad = false;
  bool column_major_indices = false;  // MaxPool storage_order = 1
  int64_t p = 2;                      // LpPool
};

// Column-major position within a plane of the row-major `offset` (MaxPool storage_order 1).
int64_t ColumnMajor(const WindowGeometry& g, int64_t offset) {
  int64_t result = 0, scale = 1;
  std::vector<int64_t> index(g.rank());
  for (int64_t i = static_cast<int64_t>(g.rank()) - 1; i >= 0; --i) index[i] = offset % g.in[i], offset /= g.in[i];
  for (size_t i = 0; i < g.rank(); ++i) result += index[i] * scale, scale *= g.in[i];
  return result;
}

template <typename T>
Status RunPool(KernelContext& context, const Tensor& x, const WindowGeometry& g, const PoolOptions& options,
               Tensor& y, Tensor* indices) {
  using Acc = ComputeType<T>;
  const size_t rank = g.rank();
  int64_t in_size = 1, out_size = 1;
  for (size_t i = 0; i < rank; ++i) in_size *= g.in[i], out_size *= g.out[i];
  const int64_t planes = x.dim(0) * x.dim(1);
  const T* in = x.data<T>();
  T* out = y.data<T>();
  int64_t* index_out = indices ? indices->data<int64_t>() : nullptr;
  // Chunks of at least ~16K outputs: waking a thread for less costs more than it saves.
  const int64_t grain = ItemsPerChunk(out_size, int64_t{1} << 14);
  context.threads().ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> o_index(rank);
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* x_plane = in + plane * in_size;
      for (int64_t o = 0; o < out_size; ++o) {
        for (int64_t rest = o, i = static_cast<int64_t>(rank) - 1; i >= 0; --i) o_index[i] = rest % g.out[i], rest /= g.out[i];
        Acc result = 0;
        switch (options.kind) {
          case PoolKind::kMax: {
            Acc best = -std::numeric_limits<Acc>::infinity();
            int64_t best_offset = -1;
            ForEachWindowTap(g, o_index.data(), [&](int64_t, int64_t offset) {
              const Acc value = LoadValue(x_plane[offset]);
              // NaN propagates: it wins once seen, as fmax would not do.
              if (best_offset < 0 || value > best || (std::isnan(value) && !std::isnan(best))) {
                best = value;
                best_offset = offset;
              }
            });
            result = best;
            if (index_out != nullptr) {
              const int64_t in_plane = options.column_major_indices ? ColumnMajor(g, best_offset) : best_offset;
              index_out[plane * out_size + o] = plane * in_size + in_plane;
            }
            break;
          }
          case PoolKind::kAverage: {
            Acc sum = 0;
            int64_t taps = 0;
            const int64_t padded_taps = ForEachWindowTap(g, o_index.data(), [&](int64_t, int64_t offset) {
              sum += LoadValue(x_plane[offset]);
              ++taps;
            });
            result = sum / static_cast<Acc>(options.count_include_pad ? padded_taps : taps);
            break;
          }
          case PoolKind::kLp: {
            Acc sum = 0;
            const Acc p = static_cast<Acc>(options.p);
            ForEachWindowTap(g, o_index.data(), [&](int64_t, int64_t offset) {
              sum += std::pow(std::abs(LoadValue(x_plane[offset])), p);
            });
            result = std::pow(sum, Acc(1) / p);
            break;
          }
        }
        out[plane * out_size + o] = StoreValue<T>(result);
      }
    }
  });
  return Status::Ok();
}

Status Pool(KernelContext& context, const PoolOptions& options) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "the pool needs input X");
  if (x->rank() < 3 || x->rank() > 5) {
    return context.Error(ErrorCode::kUnsupported, "pools take 1-D to 3-D inputs, X is " + ShapeToString(x->shape()));
  }
  if (!context.has_attribute("kernel_shape")) return context.Error(ErrorCode::kInvalidModel, "kernel_shape is required");
  const bool ceil_mode = context.attr_int("ceil_mode", 0) != 0;
  const Shape spatial(x->shape().begin() + 2, x->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(WindowGeometry g, ForwardWindow(context, spatial, {}, ceil_mode));
  Shape y_shape{x->dim(0), x->dim(1)};
  y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  Tensor* indices = nullptr;
  if (options.kind == PoolKind::kMax && context.num_outputs() > 1 && context.output_used(1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(indices, context.AllocateOutput(1, DType::kInt64, y_shape));
  }
  if (context.input_channels_last(0)) {
    // The plan stores X channels-last only for a 2-D max pool without Indices
    // (runtime/executor/plan_layouts.h).
    if (options.kind != PoolKind::kMax || indices != nullptr || !Pool2dApplies(g)) {
      return context.Error(ErrorCode::kUnsupported, "a channels-last X takes a 2-D max pool without Indices");
    }
    return MaxPool2dChannelsLast(context, *x, g, context.output_channels_last(0), *y);
  }
  const bool floating = x->dtype() == DType::kFloat32 || IsLowPrecision(x->dtype());
  if (options.kind != PoolKind::kLp && indices == nullptr && floating && Pool2dApplies(g)) {
    return Pool2d(context, *x, g, options.kind == PoolKind::kMax, options.count_include_pad, *y);
  }
  // MaxPool also takes 8-bit integers (opset 12); float32 holds them exactly.
  if (options.kind == PoolKind::kMax && x->dtype() == DType::kUInt8) {
    return RunPool<uint8_t>(context, *x, g, options, *y, indices);
  }
  if (options.kind == PoolKind::kMax && x->dtype() == DType::kInt8) {
    return RunPool<int8_t>(context, *x, g, options, *y, indices);
  }
  return DispatchFloat(context, x->dtype(),
                       [&](auto tag) { return RunPool<decltype(tag)>(context, *x, g, options, *y, indices); });
}

}  // namespace

Status MaxPoolCpu(KernelContext& context) {
  PoolOptions options;
  options.kind = PoolKind::kMax;
  options.column_major_indices = context.attr_int("storage_order", 0) != 0;
  return Pool(context, options);
}

Status AveragePoolCpu(KernelContext& context) {
  PoolOptions options;
  options.kind = PoolKind::kAverage;
  options.count_include_pad = context.attr_int("count_include_pad", 0) != 0;
  return Pool(context, options);
}

Status LpPoolCpu(KernelContext& context) {
  PoolOptions options;
  options.kind = PoolKind::kLp;
  options.p = context.attr_int("p", 2);
  return Pool(context, options);
}

}  // namespace onnx_amp
