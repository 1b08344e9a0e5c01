// InstanceNormalization and GroupNormalization on [N, C, ...]: each (n, group) block
// of C/G channels times the spatial size is normalised with its own mean and variance
// (two passes), then scaled and shifted per channel. InstanceNormalization is the
// case G = C. GroupNormalization-18 gives Scale/B per group, -21 per channel.
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

// Scale or B as one value per channel (a per-group parameter is repeated over its
// group's channels).
template <typename T>
Expected<std::vector<ComputeType<T>>> PerChannel(const KernelContext& context, int index, int64_t channels,
                                                 int64_t groups) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr || tensor->dtype() != DTypeOf<T>::value ||
      (tensor->num_elements() != channels && tensor->num_elements() != groups)) {
    return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " must have " +
                                                       std::to_string(channels) + " values of X's dtype");
  }
  const int64_t count = tensor->num_elements();
  std::vector<ComputeType<T>> values(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    values[c] = LoadValue(tensor->data<T>()[count == channels ? c : c / (channels / groups)]);
  }
  return values;
}

template <typename T>
Status RunGroupNorm(KernelContext& context, const Tensor& x, int64_t groups, Tensor& y) {
  using Acc = ComputeType<T>;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t spatial = batch * channels == 0 ? 0 : x.num_elements() / (batch * channels);
  ONNX_AMP_ASSIGN_OR_RETURN(auto scale, PerChannel<T>(context, 1, channels, groups));
  ONNX_AMP_ASSIGN_OR_RETURN(auto bias, PerChannel<T>(context, 2, channels, groups));
  const Acc epsilon = static_cast<Acc>(context.attr_float("epsilon", 1e-5f));
  const int64_t group_channels = channels / groups, block = group_channels * spatial;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  context.threads().ParallelFor(batch * groups, ItemsPerChunk(block, 1 << 14), [&](int64_t begin, int64_t end) {
    // float32, float16 and bfloat16 blocks go through the lane loops
    // (lane_statistics.h), low-precision ones widened into `buffer`.
    constexpr bool kLaneBlocks = std::is_same_v<Acc, float>;
    std::vector<float> buffer(kLaneBlocks && !std::is_same_v<T, float> ? static_cast<size_t>(block) : 0);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first_channel = (b % groups) * group_channels;
      if constexpr (kLaneBlocks) {
        const float* values = Float32BlockOf(x, b * block, block, buffer.data());
        float* normalized = std::is_same_v<T, float> ? y.data<float>() + b * block : buffer.data();
        const LaneStatistics statistics = LaneMeanAndInvStd(values, block, epsilon);
        for (int64_t c = 0; c < group_channels; ++c) {
          LaneNormalizeUniform(values + c * spatial, spatial, statistics, scale[first_channel + c],
                               bias[first_channel + c], normalized + c * spatial);
        }
        StoreFloat32Block(normalized, b * block, block, y);
      } else {
        const T* values = in + b * block;
        const auto [mean, inv_std] = MeanAndInvStd(values, block, epsilon);
        for (int64_t i = 0; i < block; ++i) {
          const int64_t c = first_channel + i / spatial;
          out[b * block + i] = StoreValue<T>((LoadValue(values[i]) - mean) * inv_std * scale[c] + bias[c]);
        }
      }
    }
  });
  return Status::Ok();
}

Status GroupNorm(KernelContext& context, bool instance) {
  const Tensor* x = context.input(0);
  if (x == nullptr || x->rank() < 2) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...]");
  const int64_t channels = x->dim(1);
  const int64_t groups = instance ? channels : context.attr_int("num_groups", 0);
  if (groups < 1 || channels % groups != 0) {
    return context.Error(ErrorCode::kInvalidModel, "num_groups " + std::to_string(groups) + " does not divide " +
                                                       std::to_string(channels) + " channels");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  if (x->num_elements() == 0) return Status::Ok();
  return DispatchFloat(context, x->dtype(), [&](auto tag) { return RunGroupNorm<decltype(tag)>(context, *x, groups, *y); });
}

}  // namespace

Status InstanceNormalizationCpu(KernelContext& context) { return GroupNorm(context, true); }
Status GroupNormalizationCpu(KernelContext& context) { return GroupNorm(context, false); }

}  // namespace onnx_amp
