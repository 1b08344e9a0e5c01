// Softmax, LogSoftmax and Hardmax. Opset >= 13 works along one axis (default -1);
// older opsets flatten the input to 2-D at `axis` (default 1) and work along the
// whole second dim. exp runs on x - max, so nothing overflows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common/cpu_clones.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_compute.h"
#include "ops/common/float_lanes.h"
#include "ops/normalization/normalization_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// The input viewed as [outer, count, inner]; the op runs along `count`.
struct AxisView {
  int64_t outer = 1, count = 1, inner = 1;
};

// Softmax or LogSoftmax of G contiguous float32 rows, x[g * count, (g + 1) * count) ->
// y[the same] (y may be x), each row on its own: the maximum, exp(x - max) and its sum in
// 16 lanes (ops/common/float_lanes.h). The last count % 16 values of a row go through the
// same vector exp, padded with -inf (exp 0); a row of whole blocks (attention over 32 or
// 64 keys) has no such tail to exponentiate. Several rows at once keep several exps and
// divisions in flight: a row of 32 values alone waits on each one's latency in turn. The
// loops over the rows are unrolled, which keeps each row's lanes in registers (as loops
// they went through the stack: rows of 32 took 1.17x as long).
template <int G>
ONNX_AMP_LANES_INLINE void LaneSoftmaxRows(SoftmaxKind kind, const float* x, float* y, int64_t count) {
  const int64_t body = count - count % kLanes;
  const bool has_tail = body < count;
  float tail[G][kLanes];
  Lanes max_lanes[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    std::fill_n(tail[g], kLanes, -std::numeric_limits<float>::infinity());
    std::copy(x + g * count + body, x + (g + 1) * count, tail[g]);
    max_lanes[g] = LoadLanes(tail[g]);
  }
  for (int64_t i = 0; i < body; i += kLanes) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) max_lanes[g] = MaxLanes(max_lanes[g], LoadLanes(x + g * count + i));
  }
  // Without a tail the sums start from zeros, what exp(-inf - max) gives, except that it
  // gives NaN where max is -inf or NaN; then every exp of the body is NaN too.
  Lanes max[G], tail_exp[G], sums[G];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    max[g] = SplatLanes(FoldMax(max_lanes[g]));
    tail_exp[g] = has_tail ? ExpNonPositiveLanes(LoadLanes(tail[g]) - max[g]) : SplatLanes(0.0f);
    sums[g] = tail_exp[g];
  }
  for (int64_t i = 0; i < body; i += kLanes) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const Lanes e = ExpNonPositiveLanes(LoadLanes(x + g * count + i) - max[g]);
      if (kind == SoftmaxKind::kSoftmax) StoreLanes(e, y + g * count + i);
      sums[g] += e;
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const float* x_row = x + g * count;
    float* y_row = y + g * count;
    const Lanes sum = SplatLanes(FoldSum(sums[g]));
    if (kind == SoftmaxKind::kSoftmax) {
      for (int64_t i = 0; i < body; i += kLanes) StoreLanes(LoadLanes(y_row + i) / sum, y_row + i);
      tail_exp[g] = tail_exp[g] / sum;
    } else {
      const Lanes log_sum = SplatLanes(std::log(sum[0]));
      for (int64_t i = 0; i < body; i += kLanes) StoreLanes(LoadLanes(x_row + i) - max[g] - log_sum, y_row + i);
      tail_exp[g] = LoadLanes(tail[g]) - max[g] - log_sum;
    }
    if (!has_tail) continue;
    StoreLanes(tail_exp[g], tail[g]);
    std::copy(tail[g], tail[g] + (count - body), y_row + body);
  }
}

// Rows longer than this go one at a time: a group's rows are read three times over, and
// should stay in the L1 cache meanwhile.
constexpr int64_t kGroupedRowsElements = 4096;
constexpr int kRowGroup = 4;  // the unroll count of LaneSoftmaxRows' loops over rows

// LaneSoftmaxRows over `rows` contiguous rows of `count` values.
ONNX_AMP_CPU_CLONES void LaneSoftmaxRowBlock(SoftmaxKind kind, const float* x, float* y, int64_t count, int64_t rows) {
  int64_t r = 0;
  if (count * kRowGroup <= kGroupedRowsElements) {
    for (; r + kRowGroup <= rows; r += kRowGroup) LaneSoftmaxRows<kRowGroup>(kind, x + r * count, y + r * count, count);
  }
  for (; r < rows; ++r) LaneSoftmaxRows<1>(kind, x + r * count, y + r * count, count);
}

// Softmax or LogSoftmax along the last axis of a float32, float16 or bfloat16 tensor,
// in blocks of rows (ForEachFloat32RowBlock: float16/bfloat16 rows widened several at a
// time).
void RunLaneSoftmax(KernelContext& context, const Tensor& x, const AxisView& v, SoftmaxKind kind, Tensor& y) {
  context.threads().ParallelFor(v.outer, ItemsPerChunk(v.count, 4096), [&](int64_t begin, int64_t end) {
    ForEachFloat32RowBlock(x, y, v.count, begin, end, [&](int64_t, int64_t rows, const float* in, float* out) {
      LaneSoftmaxRowBlock(kind, in, out, v.count, rows);
    });
  });
}

// Softmax or LogSoftmax of 16 columns at once, along an axis that is not the last:
// block[k * 16 + l] is element k of column l (k < count), in place. Each lane runs the
// scalar loop's order over its own column (the max, then exp(x - max) summed from k = 0).
ONNX_AMP_CPU_CLONES void LaneSoftmaxColumns(SoftmaxKind kind, float* block, int64_t count) {
  Lanes max = SplatLanes(-std::numeric_limits<float>::infinity());
  for (int64_t k = 0; k < count; ++k) max = MaxLanes(max, LoadLanes(block + k * kLanes));
  Lanes sum = SplatLanes(0.0f);
  for (int64_t k = 0; k < count; ++k) {
    const Lanes e = ExpNonPositiveLanes(LoadLanes(block + k * kLanes) - max);
    if (kind == SoftmaxKind::kSoftmax) StoreLanes(e, block + k * kLanes);
    sum += e;
  }
  if (kind == SoftmaxKind::kSoftmax) {
    for (int64_t k = 0; k < count; ++k) StoreLanes(LoadLanes(block + k * kLanes) / sum, block + k * kLanes);
    return;
  }
  Lanes log_sum;
  for (int l = 0; l < kLanes; ++l) log_sum[l] = std::log(sum[l]);
  for (int64_t k = 0; k < count; ++k) StoreLanes(LoadLanes(block + k * kLanes) - max - log_sum, block + k * kLanes);
}

// Softmax or LogSoftmax along a non-last axis of a float32, float16 or bfloat16 tensor
// ([outer, count, inner], inner > 1): blocks of 16 inner positions are gathered (and
// widened) into a [count, 16] buffer, normalised in lanes and written back; a block short
// of 16 pads with zeros, whose lanes are dropped.
void RunLaneSoftmaxColumns(KernelContext& context, const Tensor& x, const AxisView& v, SoftmaxKind kind, Tensor& y) {
  const int64_t blocks_per_outer = (v.inner + kLanes - 1) / kLanes;
  context.threads().ParallelFor(v.outer * blocks_per_outer, ItemsPerChunk(v.count * kLanes, 4096),
                                [&](int64_t begin, int64_t end) {
    std::vector<float> block(static_cast<size_t>(v.count * kLanes));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t outer = item / blocks_per_outer, first = (item % blocks_per_outer) * kLanes;
      const int64_t width = std::min<int64_t>(kLanes, v.inner - first);
      const int64_t base = outer * v.count * v.inner + first;
      if (width < kLanes) std::fill(block.begin(), block.end(), 0.0f);
      for (int64_t k = 0; k < v.count; ++k) LoadFloat32Block(x, base + k * v.inner, width, block.data() + k * kLanes);
      LaneSoftmaxColumns(kind, block.data(), v.count);
      for (int64_t k = 0; k < v.count; ++k) StoreFloat32Block(block.data() + k * kLanes, base + k * v.inner, width, y);
    }
  });
}

template <typename T>
void RunSoftmax(KernelContext& context, const Tensor& x, const AxisView& v, SoftmaxKind kind, Tensor& y) {
  using Acc = ComputeType<T>;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  context.threads().ParallelFor(v.outer * v.inner, ItemsPerChunk(v.count, 4096), [&](int64_t begin, int64_t end) {
    std::vector<Acc> row(static_cast<size_t>(v.count));
    for (int64_t line = begin; line < end; ++line) {
      const int64_t base = (line / v.inner) * v.count * v.inner + line % v.inner;
      Acc max = -std::numeric_limits<Acc>::infinity();
      int64_t argmax = 0;
      for (int64_t i = 0; i < v.count; ++i) {
        row[i] = LoadValue(in[base + i * v.inner]);
        if (row[i] > max) max = row[i], argmax = i;
      }
      switch (kind) {
        case SoftmaxKind::kSoftmax: {
          Acc sum = 0;
          for (int64_t i = 0; i < v.count; ++i) sum += row[i] = std::exp(row[i] - max);
          for (int64_t i = 0; i < v.count; ++i) out[base + i * v.inner] = StoreValue<T>(row[i] / sum);
          break;
        }
        case SoftmaxKind::kLogSoftmax: {
          Acc sum = 0;
          for (int64_t i = 0; i < v.count; ++i) sum += std::exp(row[i] - max);
          const Acc log_sum = std::log(sum);
          for (int64_t i = 0; i < v.count; ++i) out[base + i * v.inner] = StoreValue<T>(row[i] - max - log_sum);
          break;
        }
        case SoftmaxKind::kHardmax: {
          for (int64_t i = 0; i < v.count; ++i) out[base + i * v.inner] = StoreValue<T>(i == argmax ? Acc(1) : Acc(0));
          break;
        }
      }
    }
  });
}

Status Softmax(KernelContext& context, SoftmaxKind kind) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input is absent");
  const int64_t rank = x->rank();
  const bool single_axis = context.opset() >= 13;
  int64_t axis = context.attr_int("axis", single_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank || (single_axis && axis == rank)) {
    return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  }
  AxisView v;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x->dim(i);
    if (i < axis) v.outer *= d;
    else if (single_axis && i > axis) v.inner *= d;
    else v.count *= d;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  if (x->num_elements() == 0) return Status::Ok();
  const bool lane_dtype = x->dtype() == DType::kFloat32 || IsLowPrecision(x->dtype());
  if (kind != SoftmaxKind::kHardmax && lane_dtype) {
    if (v.inner == 1) {
      RunLaneSoftmax(context, *x, v, kind, *y);
    } else {
      RunLaneSoftmaxColumns(context, *x, v, kind, *y);
    }
    return Status::Ok();
  }
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    RunSoftmax<decltype(tag)>(context, *x, v, kind, *y);
    return Status::Ok();
  });
}

}  // namespace

Status SoftmaxCpu(KernelContext& context) { return Softmax(context, SoftmaxKind::kSoftmax); }
Status LogSoftmaxCpu(KernelContext& context) { return Softmax(context, SoftmaxKind::kLogSoftmax); }
Status HardmaxCpu(KernelContext& context) { return Softmax(context, SoftmaxKind::kHardmax); }

}  // namespace onnx_amp
