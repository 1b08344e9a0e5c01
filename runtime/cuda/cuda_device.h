// The CUDA device: discovery and the element-type conversions every mixed-precision
// graph needs on the GPU. Built only when nvcc is present (ONNX_AMP_WITH_CUDA); on a
// machine without a GPU or driver, CudaDeviceCount() is 0 and callers fall back to
// the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

// Number of usable CUDA devices; 0 when there is no driver or no device.
int CudaDeviceCount();
// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" for device `index`.
Expected<std::string> CudaDeviceDescription(int index);

// Host-to-host conversions run on device 0 (copy in, convert, copy out). They use the
// same per-element functions as the CPU (runtime/core/float16.h), so results match the
// CPU bit for bit.
Status CudaConvertFloatToHalf(const float* src, uint16_t* dst, size_t count);
Status CudaConvertHalfToFloat(const uint16_t* src, float* dst, size_t count);
Status CudaConvertFloatToBFloat16(const float* src, uint16_t* dst, size_t count);
Status CudaConvertBFloat16ToFloat(const uint16_t* src, float* dst, size_t count);

}  // namespace onnx_amp
