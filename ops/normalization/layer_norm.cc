// LayerNormalization: each row over dims [axis, rank) is normalised with its own mean
// and variance (two passes, in the stash type: float32, or float64 for float64), then
// scaled and shifted by Scale and B (broadcast to the normalised dims). The optional
// Mean and InvStdDev outputs have shape [d0, ..., d(axis-1), 1, ..., 1].
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "ops/common/float_compute.h"
#include "ops/normalization/lane_statistics.h"
#include "ops/normalization/normalization_kernels.h"
#include "ops/normalization/row_statistics.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// A per-row parameter (Scale or B) broadcast (numpy, right-aligned) to the normalised
// dims, as cols values; empty when absent.
template <typename T>
Expected<std::vector<ComputeType<T>>> RowParameter(const KernelContext& context, const Tensor* tensor,
                                                   const Shape& normalized, const char* name) {
  std::vector<ComputeType<T>> values;
  if (tensor == nullptr) return values;
  const Shape& shape = tensor->shape();
  bool fits = tensor->dtype() == DTypeOf<T>::value && shape.size() <= normalized.size();
  const size_t lead = normalized.size() - std::min(shape.size(), normalized.size());
  for (size_t i = 0; fits && i < shape.size(); ++i) fits = shape[i] == 1 || shape[i] == normalized[lead + i];
  if (!fits) {
    return context.Error(ErrorCode::kInvalidModel, std::string(name) + " " + ShapeToString(shape) +
                                                       " does not broadcast to the normalised dims " +
                                                       ShapeToString(normalized));
  }
  const int64_t cols = NumElements(normalized);
  values.resize(static_cast<size_t>(cols));
  for (int64_t i = 0; i < cols; ++i) {
    int64_t rest = i, offset = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(normalized.size()) - 1; d >= static_cast<int64_t>(lead); --d) {
      const int64_t index = rest % normalized[d];
      rest /= normalized[d];
      const int64_t dim = shape[d - lead];
      if (dim != 1) offset += index * stride;
      stride *= dim;
    }
    values[i] = LoadValue(tensor->data<T>()[offset]);
  }
  return values;
}

template <typename T>
Status RunLayerNorm(KernelContext& context, const Tensor& x, int64_t axis, double epsilon, Tensor& y,
                    Tensor* mean_out, Tensor* inv_std_out) {
  using Acc = ComputeType<T>;
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const int64_t cols = NumElements(normalized), rows = x.num_elements() / cols;
  ONNX_AMP_ASSIGN_OR_RETURN(auto scale, RowParameter<T>(context, context.input(1), normalized, "Scale"));
  ONNX_AMP_ASSIGN_OR_RETURN(auto bias, RowParameter<T>(context, context.input(2), normalized, "B"));
  if (scale.empty()) return context.Error(ErrorCode::kInvalidModel, "Scale is required");
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const auto store_statistics = [&](int64_t r, Acc mean, Acc inv_std) {
    if (mean_out != nullptr) {
      if (mean_out->dtype() == DType::kFloat64) mean_out->data<double>()[r] = mean;
      else mean_out->data<float>()[r] = static_cast<float>(mean);
    }
    if (inv_std_out != nullptr) {
      if (inv_std_out->dtype() == DType::kFloat64) inv_std_out->data<double>()[r] = inv_std;
      else inv_std_out->data<float>()[r] = static_cast<float>(inv_std);
    }
  };
  // float32, float16 and bfloat16 rows go through the lane loop (ForEachFloat32Row).
  constexpr bool kLaneRows = std::is_same_v<Acc, float>;
  context.threads().ParallelFor(rows, ItemsPerChunk(cols, 8192), [&](int64_t begin, int64_t end) {
    if constexpr (kLaneRows) {
      ForEachFloat32Row(x, y, cols, begin, end, [&](int64_t r, const float* row_in, float* row_out) {
        const LaneStatistics statistics = LaneMeanAndInvStd(row_in, cols, static_cast<float>(epsilon));
        LaneNormalize(row_in, cols, statistics, scale.data(), bias.empty() ? nullptr : bias.data(), row_out);
        store_statistics(r, statistics.mean, statistics.inv_std);
      });
    } else {
      for (int64_t r = begin; r < end; ++r) {
        const T* row = in + r * cols;
        const auto statistics = MeanAndInvStd(row, cols, static_cast<Acc>(epsilon));
        for (int64_t i = 0; i < cols; ++i) {
          const Acc normalized = (LoadValue(row[i]) - statistics.mean) * statistics.inv_std;
          out[r * cols + i] = StoreValue<T>(normalized * scale[i] + (bias.empty() ? Acc(0) : bias[i]));
        }
        store_statistics(r, statistics.mean, statistics.inv_std);
      }
    }
  });
  return Status::Ok();
}

}  // namespace

Status LayerNormalizationCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "X is absent");
  const int64_t rank = x->rank();
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return context.Error(ErrorCode::kInvalidModel, "axis out of range for rank " + std::to_string(rank));
  const double epsilon = context.attr_float("epsilon", 1e-5f);
  const auto stash = DTypeFromOnnx(static_cast<int32_t>(context.attr_int("stash_type", 1)));
  if (!stash || (*stash != DType::kFloat32 && *stash != DType::kFloat64)) {
    return context.Error(ErrorCode::kUnsupported, "stash_type must be float or double");
  }
  Shape stat_shape;
  for (int64_t i = 0; i < rank; ++i) stat_shape.push_back(i < axis ? x->dim(i) : 1);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  Tensor* mean = nullptr;
  Tensor* inv_std = nullptr;
  if (context.num_outputs() > 1 && context.output_used(1)) {
    ONNX_AMP_ASSIGN_OR_RETURN(mean, context.AllocateOutput(1, *stash, stat_shape));
  }
  if (context.num_outputs() > 2 && context.output_used(2)) {
    ONNX_AMP_ASSIGN_OR_RETURN(inv_std, context.AllocateOutput(2, *stash, stat_shape));
  }
  if (x->num_elements() == 0) return Status::Ok();
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    return RunLayerNorm<decltype(tag)>(context, *x, axis, epsilon, *y, mean, inv_std);
  });
}

}  // namespace onnx_amp
