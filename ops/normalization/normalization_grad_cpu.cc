// LayerNormalization and BatchNormalization gradients. With xhat the normalised input,
// g = dY * scale and m the count of normalised elements per statistic:
//   dX = inv_std * (g - mean(g) - xhat * mean(g * xhat))   (statistics of the batch)
//   dScale = sum(dY * xhat), dBias = sum(dY)               (over what the parameter spans)
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/batch_norm_channels_last.h"
#include "ops/normalization/batch_statistics.h"
#include "ops/normalization/lane_sums.h"
#include "ops/normalization/normalization_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

// The N planes of one channel of an [N, C, spatial] tensor as float32: float32 data in
// place, float16/bfloat16 widened once per channel (the gradient reads them three times).
class ChannelPlanes {
 public:
  ChannelPlanes(const Tensor& tensor, int64_t n, int64_t channels, int64_t spatial)
      : tensor_(tensor), n_(n), channels_(channels), spatial_(spatial),
        buffer_(static_cast<size_t>(tensor.dtype() == DType::kFloat32 ? 0 : n * spatial)) {}
  void Select(int64_t channel) {
    channel_ = channel;
    if (tensor_.dtype() == DType::kFloat32) return;
    for (int64_t b = 0; b < n_; ++b) {
      LoadFloat32Block(tensor_, (b * channels_ + channel) * spatial_, spatial_, buffer_.data() + b * spatial_);
    }
  }
  const float* Plane(int64_t b) const {
    if (tensor_.dtype() == DType::kFloat32) return tensor_.data<float>() + (b * channels_ + channel_) * spatial_;
    return buffer_.data() + b * spatial_;
  }

 private:
  const Tensor& tensor_;
  int64_t n_, channels_, spatial_, channel_ = 0;
  std::vector<float> buffer_;
};

// What BatchNormalizationGrad reads besides dY and X: scale, and the given mean and var:
// inference mode's inputs, or in training mode the batch statistics the forward step
// handed over (batch_statistics.h; channels-last X only, empty when none came).
struct BatchNormGradParams {
  const std::vector<float>& scale;
  const std::vector<float>& given_mean;
  const std::vector<float>& given_var;
  float epsilon;
};

// [N, C, spatial] tensors: channels run in parallel; each reads its N planes of dY and X
// in place (float32) or widened a plane at a time.
void GradNchw(KernelContext& context, const Tensor& dy, const Tensor& x, bool training,
              const BatchNormGradParams& params, Tensor* dx, std::vector<float>& dscale, std::vector<float>& dbias) {
  const std::vector<float>& sv = params.scale;
  const std::vector<float>& given_mean = params.given_mean;
  const std::vector<float>& given_var = params.given_var;
  const float epsilon = params.epsilon;
  const int64_t n = x.dim(0);
  const int64_t channels = x.dim(1);
  const int64_t spatial = x.num_elements() / std::max<int64_t>(n * channels, 1);
  const float count = static_cast<float>(n * spatial);
  // Chunks of at least ~16K elements: waking a thread for less costs more than it saves.
  const int64_t grain = ItemsPerChunk(n * spatial, int64_t{1} << 14);
  context.threads().ParallelFor(channels, grain, [&](int64_t begin, int64_t end) {
    ChannelPlanes g_planes(dy, n, channels, spatial), x_planes(x, n, channels, spatial);
    std::vector<float> dx_plane(static_cast<size_t>(dx != nullptr && dx->dtype() != DType::kFloat32 ? spatial : 0));
    for (int64_t c = begin; c < end; ++c) {
      g_planes.Select(c);
      x_planes.Select(c);
      float mean = 0.0f;
      float var = 0.0f;
      if (training) {
        BatchLaneSums<float> sum(n);
        for (int64_t b = 0; b < n; ++b) sum.Add(b, spatial, [xs = x_planes.Plane(b)](int64_t i) { return xs[i]; });
        mean = sum.Total() / count;
      } else {
        mean = given_mean[c];
        var = given_var[c];
      }
      // The squared deviations (training mode) in the pass that sums dY and dY (X - mean).
      BatchLaneSums<float> squares(n), sum_g(n), sum_g_centered(n);
      for (int64_t b = 0; b < n; ++b) {
        const float* gs = g_planes.Plane(b);
        const float* xs = x_planes.Plane(b);
        if (training) squares.Add(b, spatial, [xs, mean](int64_t i) { return (xs[i] - mean) * (xs[i] - mean); });
        sum_g.Add(b, spatial, [gs](int64_t i) { return gs[i]; });
        sum_g_centered.Add(b, spatial, [gs, xs, mean](int64_t i) { return gs[i] * (xs[i] - mean); });
      }
      if (training) var = squares.Total() / count;
      const float inv_std = 1.0f / std::sqrt(var + epsilon);
      dbias[c] = sum_g.Total();
      dscale[c] = sum_g_centered.Total() * inv_std;
      if (dx == nullptr) continue;
      const float a = sv[c] * inv_std, mean_g = dbias[c] / count, mean_gx = dscale[c] / count;
      for (int64_t b = 0; b < n; ++b) {
        const float* gs = g_planes.Plane(b);
        const float* xs = x_planes.Plane(b);
        const int64_t offset = (b * channels + c) * spatial;
        float* out = dx->dtype() == DType::kFloat32 ? dx->data<float>() + offset : dx_plane.data();
        if (training) {
          for (int64_t i = 0; i < spatial; ++i) out[i] = a * (gs[i] - mean_g - (xs[i] - mean) * inv_std * mean_gx);
        } else {
          for (int64_t i = 0; i < spatial; ++i) out[i] = a * gs[i];
        }
        if (out == dx_plane.data()) StoreFloat32Block(out, offset, spatial, *dx);
      }
    }
  });
}

// Channels-last dY, X and dX (batch_norm_channels_last.h): the same statistics and
// coefficients, for the same bits.
void GradChannelsLast(KernelContext& context, const Tensor& dy, const Tensor& x, bool training,
                      const BatchNormGradParams& params, Tensor* dx, std::vector<float>& dscale,
                      std::vector<float>& dbias) {
  const int64_t channels = x.dim(1);
  const float count = static_cast<float>(x.num_elements() / std::max<int64_t>(channels, 1));
  std::vector<float> mean(channels), var(channels), sum_gc(channels), inv_std(channels), a(channels),
      mean_g(channels), mean_gx(channels);
  const auto coefficients = [&](int64_t c) {
    inv_std[c] = 1.0f / std::sqrt(var[c] + params.epsilon);
    a[c] = params.scale[c] * inv_std[c];
  };
  if (!training) {
    // dX = a * dY needs no sums: it is written in their pass.
    mean = params.given_mean;
    var = params.given_var;
    for (int64_t c = 0; c < channels; ++c) coefficients(c);
    ChannelsLastGradSums(context.threads(), dy, x, mean.data(), dbias.data(), sum_gc.data(), nullptr,
                         dx != nullptr ? a.data() : nullptr, dx);
    for (int64_t c = 0; c < channels; ++c) dscale[c] = sum_gc[c] * inv_std[c];
    return;
  }
  // The forward's statistics when it handed them over: the same sums, one pass fewer.
  const bool handed_over = !params.given_mean.empty();
  if (handed_over) {
    mean = params.given_mean;
    var = params.given_var;
  } else {
    ChannelsLastMeanVar(context.threads(), x, mean.data(), nullptr);
  }
  ChannelsLastGradSums(context.threads(), dy, x, mean.data(), dbias.data(), sum_gc.data(),
                       handed_over ? nullptr : var.data());
  for (int64_t c = 0; c < channels; ++c) {
    if (!handed_over) var[c] /= count;
    coefficients(c);
    dscale[c] = sum_gc[c] * inv_std[c];
    mean_g[c] = dbias[c] / count;
    mean_gx[c] = dscale[c] / count;
  }
  if (dx == nullptr) return;
  ChannelsLastGradDx(context.threads(), dy, x, {a.data(), mean.data(), inv_std.data(), mean_g.data(), mean_gx.data()},
                     *dx);
}

}  // namespace

// X viewed as [rows, cols], cols = dims [axis, rank); mean and inv_std hold one value per row.
Status LayerNormalizationGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale, FloatInput(context, 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* mean_t, FloatInput(context, 3));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* inv_std_t, FloatInput(context, 4));
  const int64_t rank = x->rank();
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return context.Error(ErrorCode::kInvalidModel, "axis out of range");
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows *= x->dim(i);
  const int64_t cols = rows == 0 ? 0 : x->num_elements() / rows;
  if (dy->shape() != x->shape() || scale->num_elements() != cols || mean_t->num_elements() != rows ||
      inv_std_t->num_elements() != rows) {
    return context.Error(ErrorCode::kInvalidModel, "inconsistent shapes for X " + ShapeToString(x->shape()));
  }
  const std::vector<float> g = ToFloat32(*dy);
  const std::vector<float> xv = ToFloat32(*x);
  const std::vector<float> sv = ToFloat32(*scale);
  const std::vector<float> mean = ToFloat32(*mean_t);
  const std::vector<float> inv_std = ToFloat32(*inv_std_t);
  std::vector<float> dx(xv.size());
  std::vector<float> dscale(static_cast<size_t>(cols), 0.0f);
  std::vector<float> dbias(static_cast<size_t>(cols), 0.0f);
  std::vector<float> xhat(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * cols;
    float mean_g = 0.0f;
    float mean_gx = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      xhat[j] = (xv[base + j] - mean[r]) * inv_std[r];
      const float gs = g[base + j] * sv[j];
      mean_g += gs;
      mean_gx += gs * xhat[j];
      dscale[j] += g[base + j] * xhat[j];
      dbias[j] += g[base + j];
    }
    mean_g /= static_cast<float>(cols);
    mean_gx /= static_cast<float>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      dx[base + j] = inv_std[r] * (g[base + j] * sv[j] - mean_g - xhat[j] * mean_gx);
    }
  }
  ONNX_AMP_RETURN_IF_ERROR(WriteOutput(context, 0, dy->dtype(), x->shape(), dx));
  ONNX_AMP_RETURN_IF_ERROR(WriteOutput(context, 1, scale->dtype(), scale->shape(), dscale));
  return WriteOutput(context, 2, scale->dtype(), scale->shape(), dbias);
}

// X [N, C, spatial...]; per channel, training mode uses the batch mean and biased
// variance (as the forward's training mode), inference mode the given mean and var,
// which are constants there: dX = scale * inv_std * dY. dY, X and dX may be stored
// channels-last together.
Status BatchNormalizationGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale, FloatInput(context, 2));
  const bool training = context.attr_int("training_mode", 0) != 0;
  const float epsilon = context.attr_float("epsilon", 1e-5f);
  if (x->rank() < 2 || dy->shape() != x->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...] with dY of the same shape");
  }
  const int64_t channels = x->dim(1);
  if (scale->num_elements() != channels) return context.Error(ErrorCode::kInvalidModel, "scale must have C elements");
  std::vector<float> given_mean;
  std::vector<float> given_var;
  const bool channels_last = context.input_channels_last(1);
  const bool handed_over = training && channels_last && context.input(kBatchMeanIndex) != nullptr &&
                           context.input(kBatchVarIndex) != nullptr;
  if (!training || handed_over) {
    const int mean_index = training ? kBatchMeanIndex : 3, var_index = training ? kBatchVarIndex : 4;
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* mean_t, FloatInput(context, mean_index));
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* var_t, FloatInput(context, var_index));
    if (mean_t->num_elements() != channels || var_t->num_elements() != channels) {
      return context.Error(ErrorCode::kInvalidModel, "mean and var must have C elements");
    }
    given_mean = ToFloat32(*mean_t);
    given_var = ToFloat32(*var_t);
  }
  const std::vector<float> sv = ToFloat32(*scale);
  Tensor* dx = nullptr;
  if (context.output_used(0)) {
    ONNX_AMP_ASSIGN_OR_RETURN(dx, context.AllocateOutput(0, dy->dtype(), x->shape()));
  }
  std::vector<float> dscale(static_cast<size_t>(channels), 0.0f);
  std::vector<float> dbias(static_cast<size_t>(channels), 0.0f);
  if (channels_last) {
    if (!context.input_channels_last(0) || (dx != nullptr && !context.output_channels_last(0))) {
      return context.Error(ErrorCode::kInternal, "X is channels-last, dY or dX is not");
    }
    GradChannelsLast(context, *dy, *x, training, {sv, given_mean, given_var, epsilon}, dx, dscale, dbias);
  } else {
    GradNchw(context, *dy, *x, training, {sv, given_mean, given_var, epsilon}, dx, dscale, dbias);
  }
  ONNX_AMP_RETURN_IF_ERROR(WriteOutput(context, 1, scale->dtype(), scale->shape(), dscale));
  return WriteOutput(context, 2, scale->dtype(), scale->shape(), dbias);
}

}  // namespace onnx_amp
