// Softmax and LogSoftmax gradients, row by row.
#include <algorithm>
#include <cmath>
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

struct Rows {
  int64_t outer = 1;  // rows before the normalised extent
  int64_t extent = 1; // normalised elements per row
  int64_t inner = 1;  // stride between them
};

Expected<Rows> SoftmaxRows(const KernelContext& context, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1)) {
    return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  }
  const bool coerced = context.attr_int("coerced", 0) != 0;
  Rows rows;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis) {
      rows.outer *= shape[i];
    } else if (i == axis || coerced) {
      rows.extent *= shape[i];
    } else {
      rows.inner *= shape[i];
    }
  }
  return rows;
}

enum class GradKind { kSoftmax, kLogSoftmax };

// One contiguous float32 row in 16 lanes (ops/common/float_lanes.h), dx may be g or y:
// softmax dx = y (g - sum(g y)); log-softmax dx = g - exp(y) sum(g). The last count % 16
// values go through the same vector code, padded with zeros.
ONNX_AMP_CPU_CLONES void LaneGradRow(GradKind kind, const float* g, const float* y, float* dx, int64_t count) {
  const int64_t body = count - count % kLanes;
  float tail_g[kLanes] = {}, tail_y[kLanes] = {};
  std::copy(g + body, g + count, tail_g);
  std::copy(y + body, y + count, tail_y);
  const auto term = [kind](Lanes g_lanes, Lanes y_lanes) ONNX_AMP_LANES_LAMBDA {
    return kind == GradKind::kSoftmax ? g_lanes * y_lanes : g_lanes;
  };
  Lanes sums = term(LoadLanes(tail_g), LoadLanes(tail_y));
  for (int64_t i = 0; i < body; i += kLanes) sums += term(LoadLanes(g + i), LoadLanes(y + i));
  const Lanes sum = SplatLanes(FoldSum(sums));
  const auto combine = [kind, sum](Lanes g_lanes, Lanes y_lanes) ONNX_AMP_LANES_LAMBDA {
    return kind == GradKind::kSoftmax ? y_lanes * (g_lanes - sum) : g_lanes - ExpLanes(y_lanes) * sum;
  };
  for (int64_t i = 0; i < body; i += kLanes) StoreLanes(combine(LoadLanes(g + i), LoadLanes(y + i)), dx + i);
  StoreLanes(combine(LoadLanes(tail_g), LoadLanes(tail_y)), tail_g);
  std::copy(tail_g, tail_g + (count - body), dx + body);
}

// The gradient along a contiguous last axis, rows in parallel: float32 rows are read in
// place, float16 and bfloat16 ones widened into row buffers; dX is rounded once.
Status LaneGrad(KernelContext& context, GradKind kind, const Tensor& dy, const Tensor& y, int64_t rows,
                int64_t count) {
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dy.dtype(), dy.shape()));
  context.threads().ParallelFor(rows, ItemsPerChunk(count, 4096), [&](int64_t begin, int64_t end) {
    std::vector<float> buffers(3 * static_cast<size_t>(count));  // widened dY, Y and dX rows
    for (int64_t row = begin; row < end; ++row) {
      const int64_t offset = row * count;
      float* out = dx->dtype() == DType::kFloat32 ? dx->data<float>() + offset : buffers.data() + 2 * count;
      LaneGradRow(kind, Float32BlockOf(dy, offset, count, buffers.data()),
                  Float32BlockOf(y, offset, count, buffers.data() + count), out, count);
      StoreFloat32Block(out, offset, count, *dx);
    }
  });
  return Status::Ok();
}

// dX = combine(dY, Y, per-row sum) over each normalised row, for rows strided by `inner`.
template <typename RowSum, typename Combine>
Status StridedGrad(KernelContext& context, const Tensor* dy, const Tensor* y, const Rows& rows, RowSum&& row_term,
                   Combine&& combine) {
  const std::vector<float> g = ToFloat32(*dy);
  const std::vector<float> v = ToFloat32(*y);
  std::vector<float> dx(g.size());
  for (int64_t o = 0; o < rows.outer; ++o) {
    for (int64_t in = 0; in < rows.inner; ++in) {
      const int64_t base = o * rows.extent * rows.inner + in;
      float sum = 0.0f;
      for (int64_t k = 0; k < rows.extent; ++k) sum += row_term(g[base + k * rows.inner], v[base + k * rows.inner]);
      for (int64_t k = 0; k < rows.extent; ++k) {
        const int64_t i = base + k * rows.inner;
        dx[i] = combine(g[i], v[i], sum);
      }
    }
  }
  return WriteOutput(context, 0, dy->dtype(), dy->shape(), dx);
}

Status SoftmaxFamilyGrad(KernelContext& context, GradKind kind) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, FloatInput(context, 1));
  if (dy->shape() != y->shape()) return context.Error(ErrorCode::kInvalidModel, "dY and Y differ in shape");
  ONNX_AMP_ASSIGN_OR_RETURN(const Rows rows, SoftmaxRows(context, y->shape()));
  if (rows.inner == 1) return LaneGrad(context, kind, *dy, *y, rows.outer, rows.extent);
  if (kind == GradKind::kSoftmax) {
    return StridedGrad(
        context, dy, y, rows, [](float g, float v) { return g * v; },
        [](float g, float v, float sum) { return v * (g - sum); });
  }
  return StridedGrad(
      context, dy, y, rows, [](float g, float) { return g; },
      [](float g, float v, float sum) { return g - std::exp(v) * sum; });
}

}  // namespace

// dX = Y * (dY - sum(dY * Y))
Status SoftmaxGradKernel(KernelContext& context) { return SoftmaxFamilyGrad(context, GradKind::kSoftmax); }

// dX = dY - exp(Y) * sum(dY)
Status LogSoftmaxGradKernel(KernelContext& context) { return SoftmaxFamilyGrad(context, GradKind::kLogSoftmax); }

}  // namespace onnx_amp
