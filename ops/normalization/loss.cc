// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ONNX's, and the same ops of
// domain ai.onnx_amp, which any opset may use). Scores are [N, C, d1..dk] and labels
// [N, d1..dk]; the class axis is 1. For element (n, d) with label t:
//   loss = -log_prob[n, t, d] * w[t], and 0 when t == ignore_index;
// reduction "mean" divides the sum by the sum of the applied weights (the count of
// non-ignored elements without weights), "sum" sums, "none" keeps [N, d1..dk].
// MeanSquaredError (ai.onnx_amp): mean over every element of (prediction - target)^2.
// Everything is computed in float32 (float64 for double) and rounded once; the loss
// reads the unrounded log-probabilities.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/normalization_kernels.h"

namespace onnx_amp {
namespace {

struct LossShape {
  int64_t batch = 0, classes = 0, spatial = 1;
};

Expected<LossShape> CheckLossInputs(const KernelContext& context, const Tensor& scores, const Tensor& labels) {
  if (scores.rank() < 2) return context.Error(ErrorCode::kInvalidModel, "scores must have rank >= 2 [N, C, ...]");
  if (labels.dtype() != DType::kInt64 && labels.dtype() != DType::kInt32) {
    return context.Error(ErrorCode::kInvalidModel, "labels must be int32 or int64");
  }
  Shape expected_labels = {scores.dim(0)};
  for (int64_t i = 2; i < scores.rank(); ++i) expected_labels.push_back(scores.dim(i));
  if (labels.shape() != expected_labels) {
    return context.Error(ErrorCode::kInvalidModel, "labels have shape " + ShapeToString(labels.shape()) +
                                                       ", expected " + ShapeToString(expected_labels));
  }
  LossShape shape{scores.dim(0), scores.dim(1), 1};
  for (int64_t i = 2; i < scores.rank(); ++i) shape.spatial *= scores.dim(i);
  return shape;
}

int64_t LabelAt(const Tensor& labels, int64_t index) {
  return labels.dtype() == DType::kInt64 ? labels.data<int64_t>()[index] : labels.data<int32_t>()[index];
}

// Reduces -log_prob[label] * weight into output 0. `log_prob` is [N, C, D] in Acc.
template <typename T>
Status ReduceNegativeLogLikelihood(KernelContext& context, const std::vector<ComputeType<T>>& log_prob,
                                   const LossShape& shape, const Tensor& labels, const Tensor* weights,
                                   const Shape& scores_shape) {
  using Acc = ComputeType<T>;
  const std::string reduction = context.attr_string("reduction", "mean");
  const bool has_ignore = context.has_attribute("ignore_index");
  const int64_t ignore_index = context.attr_int("ignore_index", 0);
  std::vector<Acc> weight_values;
  if (weights) {
    if (weights->rank() != 1 || weights->dim(0) != shape.classes) {
      return context.Error(ErrorCode::kInvalidModel, "weights must have shape [C]");
    }
    const T* w = weights->data<T>();
    for (int64_t c = 0; c < shape.classes; ++c) weight_values.push_back(LoadValue(w[c]));
  }

  const int64_t elements = shape.batch * shape.spatial;
  std::vector<Acc> losses(static_cast<size_t>(elements));
  Acc loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < shape.batch; ++n) {
    for (int64_t d = 0; d < shape.spatial; ++d) {
      const int64_t index = n * shape.spatial + d;
      const int64_t label = LabelAt(labels, index);
      if (has_ignore && label == ignore_index) {
        losses[index] = 0;
        continue;
      }
      if (label < 0 || label >= shape.classes) {
        return context.Error(ErrorCode::kInvalidArgument, "label " + std::to_string(label) + " at position " +
                                                              std::to_string(index) + " is outside [0, " +
                                                              std::to_string(shape.classes) + ")");
      }
      const Acc weight = weights ? weight_values[label] : Acc(1);
      losses[index] = -log_prob[(n * shape.classes + label) * shape.spatial + d] * weight;
      loss_sum += losses[index];
      weight_sum += weight;
    }
  }

  Shape out_shape;
  if (reduction == "none") {
    out_shape.push_back(scores_shape[0]);
    for (size_t i = 2; i < scores_shape.size(); ++i) out_shape.push_back(scores_shape[i]);
  } else if (reduction != "sum" && reduction != "mean") {
    return context.Error(ErrorCode::kInvalidModel, "unknown reduction '" + reduction + "'");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DTypeOf<T>::value, out_shape));
  T* out_data = out->data<T>();
  if (reduction == "none") {
    for (int64_t i = 0; i < elements; ++i) out_data[i] = StoreValue<T>(losses[i]);
  } else if (reduction == "sum") {
    out_data[0] = StoreValue<T>(loss_sum);
  } else {
    // As the ONNX reference: 0/0 (every element ignored) is NaN.
    out_data[0] = StoreValue<T>(loss_sum / weight_sum);
  }
  return Status::Ok();
}

}  // namespace

Status SoftmaxCrossEntropyLossCpu(KernelContext& context) {
  const Tensor* scores = context.input(0);
  const Tensor* labels = context.input(1);
  if (!scores || !labels) return context.Error(ErrorCode::kInvalidModel, "needs scores and labels");
  ONNX_AMP_ASSIGN_OR_RETURN(LossShape shape, CheckLossInputs(context, *scores, *labels));
  return DispatchFloat(context, scores->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using Acc = ComputeType<T>;
    const T* in = scores->data<T>();
    std::vector<Acc> log_prob(static_cast<size_t>(scores->num_elements()));
    std::vector<Acc> column(static_cast<size_t>(shape.classes));
    for (int64_t n = 0; n < shape.batch; ++n) {
      for (int64_t d = 0; d < shape.spatial; ++d) {
        // log_softmax along the class axis: x - max - log(sum exp(x - max)).
        Acc max = -std::numeric_limits<Acc>::infinity();
        for (int64_t c = 0; c < shape.classes; ++c) {
          column[c] = LoadValue(in[(n * shape.classes + c) * shape.spatial + d]);
          max = std::max(max, column[c]);
        }
        Acc sum = 0;
        for (int64_t c = 0; c < shape.classes; ++c) sum += std::exp(column[c] - max);
        const Acc log_sum = std::log(sum);
        for (int64_t c = 0; c < shape.classes; ++c) {
          log_prob[(n * shape.classes + c) * shape.spatial + d] = column[c] - max - log_sum;
        }
      }
    }
    ONNX_AMP_RETURN_IF_ERROR(ReduceNegativeLogLikelihood<T>(context, log_prob, shape, *labels, context.input(2),
                                                            scores->shape()));
    if (context.num_outputs() > 1 && context.output_used(1)) {
      ONNX_AMP_ASSIGN_OR_RETURN(Tensor * log_prob_out, context.AllocateOutput(1, scores->dtype(), scores->shape()));
      T* out = log_prob_out->data<T>();
      for (size_t i = 0; i < log_prob.size(); ++i) out[i] = StoreValue<T>(log_prob[i]);
    }
    return Status::Ok();
  });
}

Status NegativeLogLikelihoodLossCpu(KernelContext& context) {
  const Tensor* input = context.input(0);
  const Tensor* target = context.input(1);
  if (!input || !target) return context.Error(ErrorCode::kInvalidModel, "needs input and target");
  ONNX_AMP_ASSIGN_OR_RETURN(LossShape shape, CheckLossInputs(context, *input, *target));
  return DispatchFloat(context, input->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* in = input->data<T>();
    std::vector<ComputeType<T>> log_prob(static_cast<size_t>(input->num_elements()));
    for (size_t i = 0; i < log_prob.size(); ++i) log_prob[i] = LoadValue(in[i]);
    return ReduceNegativeLogLikelihood<T>(context, log_prob, shape, *target, context.input(2), input->shape());
  });
}

Status MeanSquaredErrorCpu(KernelContext& context) {
  const Tensor* prediction = context.input(0);
  const Tensor* target = context.input(1);
  if (!prediction || !target) return context.Error(ErrorCode::kInvalidModel, "needs prediction and target");
  if (target->shape() != prediction->shape() || target->dtype() != prediction->dtype()) {
    return context.Error(ErrorCode::kInvalidArgument,
                         "target is " + std::string(DTypeName(target->dtype())) + ShapeToString(target->shape()) +
                             ", expected the prediction's " + std::string(DTypeName(prediction->dtype())) +
                             ShapeToString(prediction->shape()));
  }
  return DispatchFloat(context, prediction->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using Acc = ComputeType<T>;
    const T* p = prediction->data<T>();
    const T* t = target->data<T>();
    Acc sum = 0;
    for (int64_t i = 0; i < prediction->num_elements(); ++i) {
      const Acc difference = LoadValue(p[i]) - LoadValue(t[i]);
      sum += difference * difference;
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DTypeOf<T>::value, {}));
    // As ReduceMean: the mean of no elements is 0/0, NaN.
    out->data<T>()[0] = StoreValue<T>(sum / static_cast<Acc>(prediction->num_elements()));
    return Status::Ok();
  });
}

}  // namespace onnx_amp
