// Launchers of the conv family's own CUDA kernels (conv_cuda.cu): pools and their
// gradients over 1-D to 3-D windows, and the per-channel bias and activation a
// convolution adds after cuDNN. Float32, float16 and bfloat16, float32 arithmetic. The
// glue is conv_cuda.cc; the convolutions themselves are cudnn_conv.h.
#pragma once

#include <cstdint>

#include "ops/common/channel_shape.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

inline constexpr int kCudaMaxWindowRank = 3;

// WindowGeometry (window_geometry.h) for the kernels, over `planes` (N * C) planes.
struct CudaWindow {
  int rank = 0;
  int64_t planes = 0;
  int64_t in[kCudaMaxWindowRank] = {};
  int64_t out[kCudaMaxWindowRank] = {};
  int64_t kernel[kCudaMaxWindowRank] = {};
  int64_t strides[kCudaMaxWindowRank] = {};
  int64_t dilations[kCudaMaxWindowRank] = {};
  int64_t pads_begin[kCudaMaxWindowRank] = {};
  int64_t pads_end[kCudaMaxWindowRank] = {};
};

enum class CudaPool { kMax, kAverage };

// MaxPool (indices: nullptr, or int64 flat input positions, row-major within a plane
// unless column_major) and AveragePool (count_include_pad).
Status LaunchCudaPool(CudaPool kind, DType dtype, const void* x, void* y, int64_t* indices, bool column_major,
                      bool count_include_pad, const CudaWindow& window, const CudaLaunchEnv& env);
// dX for MaxPool (to the first maximum of each window) or AveragePool (spread over the
// window), accumulated into float32 `dx` (zeroed here; planes * in values).
Status LaunchCudaPoolGrad(CudaPool kind, DType dtype, const void* dy, const void* x, float* dx,
                          bool count_include_pad, const CudaWindow& window, const CudaLaunchEnv& env);

// GlobalAveragePool / GlobalMaxPool: y[plane] = mean / max of x's plane of `spatial`
// values (NaN wins the max).
Status LaunchCudaGlobalPool(CudaPool kind, DType dtype, const void* x, void* y, int64_t planes, int64_t spatial,
                            const CudaLaunchEnv& env);

// A convolution's bias gradient: sums[c] = sum of dY[n, c, p] in float32; `scratch`
// holds CudaConvBiasGradScratch(shape) floats.
int64_t CudaConvBiasGradScratch(const CudaChannelShape& shape);
Status LaunchCudaConvBiasGrad(DType dtype, const void* dy, const CudaChannelShape& shape, float* sums, float* scratch,
                              const CudaLaunchEnv& env);

// y[n, c, p] = activation(y[n, c, p] + bias[c]) in place; bias (nullptr: none) of y's
// dtype. activation: 0 none, 1 Relu, 2 LeakyRelu (alpha), 3 Clip (alpha, beta).
Status LaunchCudaBiasActivation(DType dtype, void* y, const void* bias, int64_t channels, int64_t spatial,
                                int64_t total, int activation, float alpha, float beta, const CudaLaunchEnv& env);

}  // namespace onnx_amp
