// Softmax and LogSoftmax gradients, row by row.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/normalization_kernels.h"

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

// dX = combine(dY, Y, per-row sum) over each normalised row.
template <typename RowSum, typename Combine>
Status RowwiseGrad(KernelContext& context, RowSum&& row_term, Combine&& combine) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, FloatInput(context, 1));
  if (dy->shape() != y->shape()) return context.Error(ErrorCode::kInvalidModel, "dY and Y differ in shape");
  ONNX_AMP_ASSIGN_OR_RETURN(const Rows rows, SoftmaxRows(context, y->shape()));
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

}  // namespace

// dX = Y * (dY - sum(dY * Y))
Status SoftmaxGradKernel(KernelContext& context) {
  return RowwiseGrad(
      context, [](float g, float y) { return g * y; }, [](float g, float y, float sum) { return y * (g - sum); });
}

// dX = dY - exp(Y) * sum(dY)
Status LogSoftmaxGradKernel(KernelContext& context) {
  return RowwiseGrad(
      context, [](float g, float) { return g; }, [](float g, float y, float sum) { return g - std::exp(y) * sum; });
}

}  // namespace onnx_amp
