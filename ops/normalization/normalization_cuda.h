// Launchers of the normalisation-family CUDA kernels: Softmax/LogSoftmax and their
// gradients (softmax_cuda.cu), LayerNormalization and BatchNormalization forward and
// backward (norm_cuda.cu), the losses and their gradients (loss_cuda.cu). Float32,
// float16 and bfloat16 data, float32 statistics and accumulation, one rounding per
// output, the CPU kernels' formulas. The glue is normalization_cuda.cc.
#pragma once

#include <cstdint>

#include "ops/common/channel_shape.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

class KernelRegistry;
// The loss kernels' registration (loss_cuda.cc), called by RegisterNormalizationCudaKernels.
void RegisterLossCudaKernels(KernelRegistry& registry);

// A tensor as [outer, extent, inner]: the op runs along `extent`, whose elements are
// `inner` apart.
struct CudaAxisView {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};

enum class CudaSoftmax { kSoftmax, kLogSoftmax };
Status LaunchCudaSoftmax(CudaSoftmax kind, DType dtype, const void* x, void* y, const CudaAxisView& view,
                         const CudaLaunchEnv& env);
// Softmax: dX = Y * (dY - sum(dY * Y)); LogSoftmax: dX = dY - exp(Y) * sum(dY).
Status LaunchCudaSoftmaxGrad(CudaSoftmax kind, DType dtype, const void* dy, const void* y, void* dx,
                             const CudaAxisView& view, const CudaLaunchEnv& env);

// LayerNormalization over rows of `cols` elements; scale and bias (nullptr: 0) hold
// `cols` values of x's dtype; mean and inv_std (nullptr: not wanted) one float32 per row.
Status LaunchCudaLayerNorm(DType dtype, const void* x, const void* scale, const void* bias, void* y, float* mean,
                           float* inv_std, int64_t rows, int64_t cols, float epsilon, const CudaLaunchEnv& env);
// dX (x's dtype), dScale and dBias (float32, `cols` each; nullptr: not wanted) from the
// saved float32 mean and inv_std; `scale` is float32. `scratch` holds
// CudaLayerNormGradScratch(rows, cols) floats.
int64_t CudaLayerNormGradScratch(int64_t rows, int64_t cols);
Status LaunchCudaLayerNormGrad(DType dtype, const void* dy, const void* x, const float* scale, const float* mean,
                               const float* inv_std, void* dx, float* dscale, float* dbias, int64_t rows, int64_t cols,
                               float* scratch, const CudaLaunchEnv& env);

// X as [batch, channels, spatial]; statistics per channel in float32.
// Float32 scratch the per-channel sums need.
int64_t CudaBatchNormScratch(const CudaChannelShape& shape);
// The batch's mean and biased variance per channel (float32 outputs, `channels` each).
Status LaunchCudaChannelStatistics(DType dtype, const void* x, const CudaChannelShape& shape, float* mean,
                                   float* var, float* scratch, const CudaLaunchEnv& env);
// Y = (X - mean) * scale / sqrt(var + epsilon) + bias, float32 per-channel parameters.
Status LaunchCudaBatchNormApply(DType dtype, const void* x, void* y, const CudaChannelShape& shape,
                                const float* scale, const float* bias, const float* mean, const float* var,
                                float epsilon, const CudaLaunchEnv& env);
// running = running * momentum + current * (1 - momentum), float32, `count` values.
Status LaunchCudaRunningUpdate(const float* running, const float* current, float* out, int64_t count,
                               float momentum, const CudaLaunchEnv& env);
// dScale, dBias (float32, always computed) and dX (nullptr: not wanted) given float32
// per-channel scale, mean and var (the batch's in training mode, which also subtracts
// the statistics' own gradient).
Status LaunchCudaBatchNormGrad(DType dtype, const void* dy, const void* x, const float* scale, const float* mean,
                               const float* var, void* dx, float* dscale, float* dbias, const CudaChannelShape& shape,
                               float epsilon, bool training, float* scratch, const CudaLaunchEnv& env);

// Sparse losses over scores [N, C, d...] ([batch, classes, spatial]) and labels (int32
// or int64, [N, d...]). reduction: 0 none, 1 sum, 2 mean. `weights` (nullptr: none) are
// float32 per class; `ignore_index` applies when `has_ignore`.
struct CudaSparseLoss {
  int64_t batch = 1;
  int64_t classes = 1;
  int64_t spatial = 1;
  int reduction = 2;
  bool has_ignore = false;
  int64_t ignore_index = 0;
  DType label_dtype = DType::kInt64;
};
// SoftmaxCrossEntropyLoss (softmax = true: log_softmax of the scores first, written to
// log_prob unless nullptr) or NegativeLogLikelihoodLoss (the input is log_prob). An
// out-of-range label gives a NaN loss. `scratch` holds 2 * batch * spatial floats.
Status LaunchCudaSparseLoss(bool softmax, DType dtype, const void* scores, const void* labels, const float* weights,
                            const CudaSparseLoss& loss, void* out, void* log_prob, float* scratch,
                            const CudaLaunchEnv& env);
// Their gradients from dLoss (dtype `dloss_dtype`: a scalar, or [N, d...] for reduction
// none). `scratch` holds batch * spatial + 1 floats.
Status LaunchCudaSparseLossGrad(bool softmax, DType dtype, DType dloss_dtype, const void* dloss, const void* log_prob,
                                const void* labels, const float* weights, const CudaSparseLoss& loss, void* dx,
                                float* scratch, const CudaLaunchEnv& env);
// MeanSquaredError: mean of (p - t)^2 into out (a scalar); its gradient
// dP = dLoss * 2 * (p - t) / count.
Status LaunchCudaMeanSquaredError(DType dtype, const void* prediction, const void* target, void* out, int64_t count,
                                  const CudaLaunchEnv& env);
Status LaunchCudaMeanSquaredErrorGrad(DType dtype, DType dloss_dtype, const void* dloss, const void* prediction,
                                      const void* target, void* dp, int64_t count, const CudaLaunchEnv& env);

}  // namespace onnx_amp
