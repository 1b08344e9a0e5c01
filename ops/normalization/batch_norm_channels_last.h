// BatchNormalization and its gradient on float32, float16 or bfloat16 [N, C, H, W]
// values stored channels-last ([N, H, W, C] in memory, runtime/executor/plan_layouts.h),
// with the bits of the NCHW loops: every element comes from the same expression, and
// each channel's sums keep BatchLaneSums' order (lane_sums.h: runs of images, 16 lanes
// each). The lanes of all channels are held side by side, so the loops run across a
// pixel's contiguous channels; threads take whole runs, contiguous in memory.
#pragma once

#include "ops/common/fused_activation.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {

// Per channel of x: the mean and (unless `var` is null) the biased variance, as
// BatchNormalization's training mode computes them.
void ChannelsLastMeanVar(ThreadPool& threads, const Tensor& x, float* mean, float* var);

// y = (x - mean[c]) * a[c] + b[c] with `activation` applied as the NCHW kernel applies it;
// y has x's shape, either dtype.
void ChannelsLastNormalize(ThreadPool& threads, const Tensor& x, const float* mean, const float* a, const float* b,
                           const FusedActivation& activation, Tensor& y);

// The sums of BatchNormalizationGrad per channel: sum_g = sum(dY), sum_g_centered =
// sum(dY * (X - mean)) and, when `squares` is not null, squares = sum((X - mean)^2).
// With `dx_scale` (inference mode, where dX needs no sums), dX = dx_scale[c] * dY is
// written in the same pass.
void ChannelsLastGradSums(ThreadPool& threads, const Tensor& dy, const Tensor& x, const float* mean, float* sum_g,
                          float* sum_g_centered, float* squares, const float* dx_scale = nullptr,
                          Tensor* dx = nullptr);

// dX of BatchNormalizationGrad's training mode:
// a[c] * (dY - mean_g[c] - (X - mean[c]) * inv_std[c] * mean_gx[c]).
struct ChannelsLastGradCoefficients {
  const float* a;
  const float* mean;
  const float* inv_std;
  const float* mean_g;
  const float* mean_gx;
};
void ChannelsLastGradDx(ThreadPool& threads, const Tensor& dy, const Tensor& x, const ChannelsLastGradCoefficients& k,
                        Tensor& dx);

}  // namespace onnx_amp
