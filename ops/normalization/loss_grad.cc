// Kernels of the fused loss gradients (domain ai.onnx_amp; the losses are loss.cc). They
// read float32/float16/bfloat16 as float32, compute in float32 and round dX once.
//
// Sparse losses: scores-shaped [N, C, d...] and labels [N, d...]. Element s with label l
// and weight w_l (1 without weights; 0 when l == ignore_index) scales its row by
// f_s = g_s * w_l, where g_s is dLoss[s] (reduction none), dLoss (sum), or dLoss over the
// sum of the weights of the counted elements (mean):
//   SoftmaxCrossEntropyLoss:   dScores[s, c] = f_s * (exp(log_prob[s, c]) - [c == l])
//   NegativeLogLikelihoodLoss: dInput[s, c]  = -f_s * [c == l]
// MeanSquaredError: dPrediction = dLoss * 2 * (prediction - target) / size.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/normalization_kernels.h"

namespace onnx_amp {
namespace {

// The rows of a sparse loss's gradient: each element's label and factor f_s.
struct SparseLossRows {
  int64_t batch = 0, classes = 0, spatial = 0;
  std::vector<int64_t> label;  // per element s of [N, d...]
  std::vector<float> factor;   // f_s; 0 for an ignored element
};

// Reads dLoss (input 0), the scores-shaped input 1 (its shape), labels (2) and weights (3).
Expected<SparseLossRows> ReadSparseLossRows(const KernelContext& context, const Tensor& scores) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dloss, FloatInput(context, 0));
  const Tensor* labels = context.input(2);
  if (labels == nullptr || (labels->dtype() != DType::kInt64 && labels->dtype() != DType::kInt32)) {
    return context.Error(ErrorCode::kInvalidModel, "labels must be int32 or int64");
  }
  const Shape& shape = scores.shape();
  if (shape.size() < 2 || labels->rank() != static_cast<int64_t>(shape.size()) - 1) {
    return context.Error(ErrorCode::kInvalidModel, "scores must be [N, C, ...] and labels [N, ...]");
  }
  SparseLossRows rows;
  rows.batch = shape[0];
  rows.classes = shape[1];
  rows.spatial = scores.num_elements() / std::max<int64_t>(rows.batch * rows.classes, 1);
  std::vector<float> weights;
  if (context.input(3) != nullptr) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* w, FloatInput(context, 3));
    if (w->num_elements() != rows.classes) {
      return context.Error(ErrorCode::kInvalidModel, "weights must have C elements");
    }
    weights = ToFloat32(*w);
  }
  const std::string reduction = context.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return context.Error(ErrorCode::kInvalidModel, "unknown reduction '" + reduction + "'");
  }
  const bool has_ignore = context.has_attribute("ignore_index");
  const int64_t ignore_index = context.attr_int("ignore_index", 0);
  const int64_t samples = rows.batch * rows.spatial;
  rows.label.resize(static_cast<size_t>(samples));
  rows.factor.resize(static_cast<size_t>(samples));
  float weight_sum = 0.0f;
  for (int64_t s = 0; s < samples; ++s) {
    rows.label[s] = labels->dtype() == DType::kInt64 ? labels->data<int64_t>()[s] : labels->data<int32_t>()[s];
    if (has_ignore && rows.label[s] == ignore_index) {
      rows.factor[s] = 0.0f;
      continue;
    }
    if (rows.label[s] < 0 || rows.label[s] >= rows.classes) {
      return context.Error(ErrorCode::kInvalidArgument, "label " + std::to_string(rows.label[s]) + " out of range");
    }
    rows.factor[s] = weights.empty() ? 1.0f : weights[rows.label[s]];
    weight_sum += rows.factor[s];
  }
  const std::vector<float> g = ToFloat32(*dloss);
  if (reduction == "none" ? static_cast<int64_t>(g.size()) != samples : g.size() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "dLoss does not match the reduction");
  }
  for (int64_t s = 0; s < samples; ++s) {
    if (reduction == "none") {
      rows.factor[s] *= g[s];
    } else if (reduction == "sum") {
      rows.factor[s] *= g[0];
    } else {
      rows.factor[s] *= weight_sum > 0.0f ? g[0] / weight_sum : 0.0f;
    }
  }
  return rows;
}

// dX[s, c] = gradient(f_s, c == label_s, i) over the scores' layout [N, C, d...], where i
// is the flat index of (s, c).
template <typename Gradient>
Status WriteSparseLossGrad(KernelContext& context, const Tensor& scores, Gradient&& gradient) {
  ONNX_AMP_ASSIGN_OR_RETURN(const SparseLossRows rows, ReadSparseLossRows(context, scores));
  std::vector<float> dx(static_cast<size_t>(scores.num_elements()));
  for (int64_t b = 0; b < rows.batch; ++b) {
    for (int64_t p = 0; p < rows.spatial; ++p) {
      const int64_t s = b * rows.spatial + p;
      for (int64_t c = 0; c < rows.classes; ++c) {
        const int64_t i = (b * rows.classes + c) * rows.spatial + p;
        dx[i] = gradient(rows.factor[s], c == rows.label[s], i);
      }
    }
  }
  return WriteOutput(context, 0, scores.dtype(), scores.shape(), dx);
}

}  // namespace

Status SoftmaxCrossEntropyLossGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* log_prob, FloatInput(context, 1));
  const std::vector<float> lp = ToFloat32(*log_prob);
  return WriteSparseLossGrad(context, *log_prob, [&](float factor, bool picked, int64_t i) {
    return factor * (std::exp(lp[i]) - (picked ? 1.0f : 0.0f));
  });
}

Status NegativeLogLikelihoodLossGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* input, FloatInput(context, 1));
  return WriteSparseLossGrad(context, *input,
                             [](float factor, bool picked, int64_t) { return picked ? -factor : 0.0f; });
}

Status MeanSquaredErrorGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dloss, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* prediction, FloatInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* target, FloatInput(context, 2));
  if (dloss->num_elements() != 1) return context.Error(ErrorCode::kInvalidModel, "dLoss must be a scalar");
  if (target->shape() != prediction->shape()) {
    return context.Error(ErrorCode::kInvalidArgument, "target has shape " + ShapeToString(target->shape()) +
                                                          ", expected the prediction's " +
                                                          ShapeToString(prediction->shape()));
  }
  const std::vector<float> p = ToFloat32(*prediction);
  const std::vector<float> t = ToFloat32(*target);
  const float scale = 2.0f * ToFloat32(*dloss)[0] / static_cast<float>(p.size());
  std::vector<float> dx(p.size());
  for (size_t i = 0; i < p.size(); ++i) dx[i] = scale * (p[i] - t[i]);
  return WriteOutput(context, 0, prediction->dtype(), prediction->shape(), dx);
}

}  // namespace onnx_amp
