// Softmax, LogSoftmax and softmax cross-entropy gradients, row by row.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/linalg/float_compute.h"
#include "ops/training/training_kernels.h"

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

// log_prob [N, C, d...], labels [N, d...]. Per sample s with label l and weight w_l
// (1 without weights; 0 when l == ignore_index):
// dScores[s, c] = g_s * w_l * (exp(log_prob[s, c]) - [c == l]), where g_s is dLoss[s]
// (reduction none), dLoss (sum), or dLoss / sum of the weights of counted samples (mean).
Status SoftmaxCrossEntropyLossGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dloss, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* log_prob, FloatInput(context, 1));
  const Tensor* labels = context.input(2);
  if (labels == nullptr || (labels->dtype() != DType::kInt64 && labels->dtype() != DType::kInt32)) {
    return context.Error(ErrorCode::kInvalidModel, "labels must be int32 or int64");
  }
  const Shape& shape = log_prob->shape();
  if (shape.size() < 2 || labels->rank() != static_cast<int64_t>(shape.size()) - 1) {
    return context.Error(ErrorCode::kInvalidModel, "log_prob must be [N, C, ...] and labels [N, ...]");
  }
  const int64_t n = shape[0];
  const int64_t classes = shape[1];
  const int64_t spatial = log_prob->num_elements() / std::max<int64_t>(n * classes, 1);
  std::vector<float> weights;
  if (context.input(3) != nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* w, FloatInput(context, 3));
    if (w->num_elements() != classes) return context.Error(ErrorCode::kInvalidModel, "weights must have C elements");
    weights = ToFloat32(*w);
  }
  const std::string reduction = context.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return context.Error(ErrorCode::kInvalidModel, "unknown reduction '" + reduction + "'");
  }
  const bool has_ignore = context.has_attribute("ignore_index");
  const int64_t ignore_index = context.attr_int("ignore_index", 0);
  const int64_t samples = n * spatial;
  std::vector<float> sample_weight(static_cast<size_t>(samples));
  std::vector<int64_t> label(static_cast<size_t>(samples));
  float weight_sum = 0.0f;
  for (int64_t s = 0; s < samples; ++s) {
    label[s] = labels->dtype() == DType::kInt64 ? labels->data<int64_t>()[s] : labels->data<int32_t>()[s];
    if (has_ignore && label[s] == ignore_index) {
      sample_weight[s] = 0.0f;
      continue;
    }
    if (label[s] < 0 || label[s] >= classes) {
      return context.Error(ErrorCode::kInvalidArgument, "label " + std::to_string(label[s]) + " out of range");
    }
    sample_weight[s] = weights.empty() ? 1.0f : weights[label[s]];
    weight_sum += sample_weight[s];
  }
  const std::vector<float> g = ToFloat32(*dloss);
  if (reduction == "none" ? static_cast<int64_t>(g.size()) != samples : g.size() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "dLoss does not match the reduction");
  }
  const std::vector<float> lp = ToFloat32(*log_prob);
  std::vector<float> dx(lp.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < spatial; ++p) {
      const int64_t s = b * spatial + p;
      float scale = sample_weight[s];
      if (reduction == "none") {
        scale *= g[s];
      } else if (reduction == "sum") {
        scale *= g[0];
      } else {
        scale *= weight_sum > 0.0f ? g[0] / weight_sum : 0.0f;
      }
      for (int64_t c = 0; c < classes; ++c) {
        const int64_t i = (b * classes + c) * spatial + p;
        dx[i] = scale * (std::exp(lp[i]) - (c == label[s] ? 1.0f : 0.0f));
      }
    }
  }
  return WriteOutput(context, 0, log_prob->dtype(), shape, dx);
}

}  // namespace onnx_amp
