// What a CUDA kernel launcher needs from the device: the stream to queue on and the
// multiprocessor count that sizes grid-stride launches (launch.h).
#pragma once

#include <cuda_runtime_api.h>

namespace onnx_amp {

struct CudaLaunchEnv {
  cudaStream_t stream = nullptr;
  int multiprocessors = 1;
};

}  // namespace onnx_amp
