// Data movement on the GPU shared by several families: a strided copy of elements of
// any width (the body of Transpose, Concat and Expand) and a broadcast copy (Gemm's C).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

// dst[i0, ..., ik] (dst_strides) = src[i0, ..., ik] (src_strides) over `shape`, elements of
// `width` bytes (1, 2, 4 or 8); strides in elements, 0 repeats a source element.
Status LaunchCudaStridedCopy(size_t width, const std::vector<int64_t>& shape, const void* src,
                             const std::vector<int64_t>& src_strides, void* dst,
                             const std::vector<int64_t>& dst_strides, const CudaLaunchEnv& env);

// dst (dense, shape `to`) = src (dense, shape `from`, which broadcasts to `to` as NumPy
// does). InvalidArgument when it does not.
Status LaunchCudaBroadcastCopy(size_t width, const Shape& from, const Shape& to, const void* src, void* dst,
                               const CudaLaunchEnv& env);

}  // namespace onnx_amp
