// BatchNormalization over channel dim 1 of [N, C, ...]:
//   inference:      Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B
//   training_mode:  the same with the batch's own mean and (population) variance, and
//                   running_mean = input_mean * momentum + batch_mean * (1 - momentum)
//                   (likewise running_var) as outputs 1 and 2.
// Scale/B and mean/var may have their own float dtypes (opset 15); every parameter is
// read into the compute type, statistics are float32 (float64 for float64 X). A fused
// activation (a Relu after a training-mode BatchNormalization) is applied to each plane
// as it is written, with the bits the activation's own kernel would give from Y. X and Y
// may be stored channels-last together (batch_norm_channels_last.h), for the same bits;
// then a training-mode step may also hand its batch statistics to its gradient
// (batch_statistics.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/common/fused_activation.h"
#include "ops/normalization/batch_norm_channels_last.h"
#include "ops/normalization/batch_statistics.h"
#include "ops/normalization/lane_sums.h"
#include "ops/normalization/normalization_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// A [C] parameter as double (exact for every float dtype).
Expected<std::vector<double>> ChannelParameter(const KernelContext& context, int index, int64_t channels) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr || tensor->num_elements() != channels) {
    return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " must have " +
                                                       std::to_string(channels) + " values");
  }
  std::vector<double> values(static_cast<size_t>(channels));
  ONNX_AMP_RETURN_IF_ERROR(DispatchFloat(context, tensor->dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c = 0; c < channels; ++c) values[c] = static_cast<double>(LoadValue(tensor->data<T>()[c]));
    return Status::Ok();
  }));
  return values;
}

Status StoreChannels(const KernelContext& context, const std::vector<double>& values, Tensor& out) {
  return DispatchFloat(context, out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t c = 0; c < values.size(); ++c) out.data<T>()[c] = StoreValue<T>(static_cast<ComputeType<T>>(values[c]));
    return Status::Ok();
  });
}

// Outputs 1 and 2 of training mode: the running mean and variance.
Status UpdateRunningStatistics(KernelContext& context, bool training, const std::vector<double>& mean,
                               const std::vector<double>& var, const std::vector<double>& batch_mean,
                               const std::vector<double>& batch_var) {
  if (!training) return Status::Ok();
  const int64_t channels = static_cast<int64_t>(mean.size());
  const double momentum = context.attr_float("momentum", 0.9f);
  for (int index = 1; index <= 2 && index < context.num_outputs(); ++index) {
    if (!context.output_used(index)) continue;
    const Tensor* running = context.input(index + 2);
    const std::vector<double>& current = index == 1 ? batch_mean : batch_var;
    const std::vector<double>& stored = index == 1 ? mean : var;
    std::vector<double> updated(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) updated[c] = stored[c] * momentum + current[c] * (1.0 - momentum);
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out_tensor, context.AllocateOutput(index, running->dtype(), running->shape()));
    ONNX_AMP_RETURN_IF_ERROR(StoreChannels(context, updated, *out_tensor));
  }
  return Status::Ok();
}

// The float32, float16 and bfloat16 loops on a channels-last X and Y
// (batch_norm_channels_last.h), with the statistics and coefficients the NCHW loops use.
void NormalizeChannelsLast(KernelContext& context, const Tensor& x, bool training, const std::vector<double>& scale,
                           const std::vector<double>& bias, const std::vector<double>& mean,
                           const std::vector<double>& var, float epsilon, std::vector<double>& batch_mean,
                           std::vector<double>& batch_var, Tensor& y) {
  const size_t channels = scale.size();
  std::vector<float> m(channels), v(channels), a(channels), b(channels);
  if (training) {
    ChannelsLastMeanVar(context.threads(), x, m.data(), v.data());
  }
  for (size_t c = 0; c < channels; ++c) {
    if (training) {
      batch_mean[c] = m[c];
      batch_var[c] = v[c];
    } else {
      m[c] = static_cast<float>(mean[c]);
      v[c] = static_cast<float>(var[c]);
    }
    a[c] = static_cast<float>(scale[c]) / std::sqrt(v[c] + epsilon);
    b[c] = static_cast<float>(bias[c]);
  }
  ChannelsLastNormalize(context.threads(), x, m.data(), a.data(), b.data(), context.fused_activation(), y);
}

// The batch statistics for the gradient (batch_statistics.h), when the plan asks for them.
Status WriteBatchStatistics(KernelContext& context, const std::vector<double>& batch_mean,
                            const std::vector<double>& batch_var) {
  for (const int index : {kBatchMeanIndex, kBatchVarIndex}) {
    if (!context.output_used(index)) continue;
    const std::vector<double>& values = index == kBatchMeanIndex ? batch_mean : batch_var;
    const Shape shape{static_cast<int64_t>(values.size())};
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(index, DType::kFloat32, shape));
    ONNX_AMP_RETURN_IF_ERROR(StoreChannels(context, values, *out));
  }
  return Status::Ok();
}

template <typename T>
Status RunBatchNorm(KernelContext& context, const Tensor& x, bool training, Tensor& y) {
  using Acc = ComputeType<T>;
  const int64_t batch = x.dim(0), channels = x.rank() > 1 ? x.dim(1) : 1;
  const int64_t spatial = batch * channels == 0 ? 0 : x.num_elements() / (batch * channels);
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> scale, ChannelParameter(context, 1, channels));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> bias, ChannelParameter(context, 2, channels));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> mean, ChannelParameter(context, 3, channels));
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<double> var, ChannelParameter(context, 4, channels));
  const Acc epsilon = static_cast<Acc>(context.attr_float("epsilon", 1e-5f));
  const FusedActivation activation = context.fused_activation();
  // float16 and bfloat16 planes are widened and rounded a plane at a time (vectorised),
  // float32 and float64 ones read and written in place.
  constexpr bool kWidened = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
  std::vector<double> batch_mean(channels), batch_var(channels);
  if constexpr (std::is_same_v<Acc, float>) {
    if (context.input_channels_last(0)) {
      if (!context.output_channels_last(0)) return context.Error(ErrorCode::kInternal, "X is channels-last, Y is not");
      NormalizeChannelsLast(context, x, training, scale, bias, mean, var, epsilon, batch_mean, batch_var, y);
      if (training) ONNX_AMP_RETURN_IF_ERROR(WriteBatchStatistics(context, batch_mean, batch_var));
      return UpdateRunningStatistics(context, training, mean, var, batch_mean, batch_var);
    }
  }
  // Chunks of at least ~16K elements: waking a thread for less costs more than it saves.
  const int64_t grain = ItemsPerChunk(batch * spatial, int64_t{1} << 14);
  context.threads().ParallelFor(channels, grain, [&](int64_t begin, int64_t end) {
    Float32BlockReader reader(x, kWidened ? spatial : 0);
    std::vector<Acc> widened_out(kWidened ? static_cast<size_t>(spatial) : 0);
    auto plane = [&](int64_t n, int64_t c) -> const Acc* {
      const int64_t offset = (n * channels + c) * spatial;
      if constexpr (kWidened) return reader.Read(offset);
      else return x.data<T>() + offset;
    };
    for (int64_t c = begin; c < end; ++c) {
      Acc m = static_cast<Acc>(mean[c]), v = static_cast<Acc>(var[c]);
      if (training) {
        const Acc count = static_cast<Acc>(batch * spatial);
        // The same sums as BatchNormalizationGrad's, so both see the same statistics.
        BatchLaneSums<Acc> sum(batch);
        for (int64_t n = 0; n < batch; ++n) sum.Add(n, spatial, [in = plane(n, c)](int64_t i) { return in[i]; });
        m = sum.Total() / count;
        BatchLaneSums<Acc> squares(batch);
        for (int64_t n = 0; n < batch; ++n) {
          squares.Add(n, spatial, [in = plane(n, c), m](int64_t i) { return (in[i] - m) * (in[i] - m); });
        }
        v = squares.Total() / count;
        batch_mean[c] = m;
        batch_var[c] = v;
      }
      const Acc a = static_cast<Acc>(scale[c]) / std::sqrt(v + epsilon);
      const Acc b = static_cast<Acc>(bias[c]);
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t base = (n * channels + c) * spatial;
        const Acc* in = plane(n, c);
        if constexpr (kWidened) {
          for (int64_t i = 0; i < spatial; ++i) widened_out[i] = (in[i] - m) * a + b;
          StoreBlockWithActivation(widened_out.data(), y, base, spatial, activation);
        } else {
          T* out = y.data<T>() + base;
          // The activation in the same loop: a second pass over the plane, even in
          // cache, cost as much as the separate node's pass.
          if (activation.kind == FusedActivationKind::kNone) {
            for (int64_t i = 0; i < spatial; ++i) out[i] = (in[i] - m) * a + b;
          }
          WithActivationOp(activation, [&](const auto& op) {
            for (int64_t i = 0; i < spatial; ++i) out[i] = op((in[i] - m) * a + b);
          });
        }
      }
    }
  });
  return UpdateRunningStatistics(context, training, mean, var, batch_mean, batch_var);
}

}  // namespace

Status BatchNormalizationCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr || x->rank() < 1) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...]");
  // Before opset 14 there is no training_mode; extra outputs then meant training.
  const bool training = context.opset() >= 14 ? context.attr_int("training_mode", 0) != 0 : context.num_outputs() > 1;
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  return DispatchFloat(context, x->dtype(),
                       [&](auto tag) { return RunBatchNorm<decltype(tag)>(context, *x, training, *y); });
}

}  // namespace onnx_amp
