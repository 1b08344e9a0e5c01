// A tensor as [batch, channels, spatial] ([N, C, d1 * ... * dk]): the layout of the
// per-channel statistics of BatchNormalization and of a convolution's bias gradient.
#pragma once

#include <cstdint>

namespace onnx_amp {

struct CudaChannelShape {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t spatial = 1;
};

}  // namespace onnx_amp
