// LayerNormalization and BatchNormalization gradients. With xhat the normalised input,
// g = dY * scale and m the count of normalised elements per statistic:
//   dX = inv_std * (g - mean(g) - xhat * mean(g * xhat))   (statistics of the batch)
//   dScale = sum(dY * xhat), dBias = sum(dY)               (over what the parameter spans)
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/normalization_kernels.h"

namespace onnx_amp {

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
// which are constants there: dX = scale * inv_std * dY.
Status BatchNormalizationGradKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* dy, FloatInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, FloatInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* scale, FloatInput(context, 2));
  const bool training = context.attr_int("training_mode", 0) != 0;
  const float epsilon = context.attr_float("epsilon", 1e-5f);
  if (x->rank() < 2 || dy->shape() != x->shape()) {
    return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...] with dY of the same shape");
  }
  const int64_t n = x->dim(0);
  const int64_t channels = x->dim(1);
  const int64_t spatial = x->num_elements() / std::max<int64_t>(n * channels, 1);
  const int64_t count = n * spatial;
  if (scale->num_elements() != channels) return context.Error(ErrorCode::kInvalidModel, "scale must have C elements");
  std::vector<float> given_mean;
  std::vector<float> given_var;
  if (!training) {
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* mean_t, FloatInput(context, 3));
    ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* var_t, FloatInput(context, 4));
    if (mean_t->num_elements() != channels || var_t->num_elements() != channels) {
      return context.Error(ErrorCode::kInvalidModel, "mean and var must have C elements");
    }
    given_mean = ToFloat32(*mean_t);
    given_var = ToFloat32(*var_t);
  }
  const std::vector<float> g = ToFloat32(*dy);
  const std::vector<float> xv = ToFloat32(*x);
  const std::vector<float> sv = ToFloat32(*scale);
  std::vector<float> dx(xv.size());
  std::vector<float> dscale(static_cast<size_t>(channels), 0.0f);
  std::vector<float> dbias(static_cast<size_t>(channels), 0.0f);
  auto at = [&](int64_t b, int64_t c, int64_t p) { return (b * channels + c) * spatial + p; };
  for (int64_t c = 0; c < channels; ++c) {
    float mean = 0.0f;
    float var = 0.0f;
    if (training) {
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) mean += xv[at(b, c, p)];
      }
      mean /= static_cast<float>(count);
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < spatial; ++p) var += (xv[at(b, c, p)] - mean) * (xv[at(b, c, p)] - mean);
      }
      var /= static_cast<float>(count);
    } else {
      mean = given_mean[c];
      var = given_var[c];
    }
    const float inv_std = 1.0f / std::sqrt(var + epsilon);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t i = at(b, c, p);
        dscale[c] += g[i] * (xv[i] - mean) * inv_std;
        dbias[c] += g[i];
      }
    }
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t i = at(b, c, p);
        if (training) {
          const float xhat = (xv[i] - mean) * inv_std;
          dx[i] = sv[c] * inv_std * (g[i] - dbias[c] / count - xhat * dscale[c] / count);
        } else {
          dx[i] = sv[c] * inv_std * g[i];
        }
      }
    }
  }
  ONNX_AMP_RETURN_IF_ERROR(WriteOutput(context, 0, dy->dtype(), x->shape(), dx));
  ONNX_AMP_RETURN_IF_ERROR(WriteOutput(context, 1, scale->dtype(), scale->shape(), dscale));
  return WriteOutput(context, 2, scale->dtype(), scale->shape(), dbias);
}

}  // namespace onnx_amp
