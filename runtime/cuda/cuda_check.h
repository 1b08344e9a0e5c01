// CUDA runtime errors as Status: every call into the runtime is checked, and a kernel
// launch is followed by a check of cudaGetLastError.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

inline Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  return InternalError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

// After a kernel launch: the launch's own error (bad configuration, no device).
inline Status CudaLaunchStatus(const char* kernel) { return CudaStatus(cudaGetLastError(), kernel); }

}  // namespace onnx_amp

#define ONNX_AMP_CUDA_RETURN_IF_ERROR(call, what) ONNX_AMP_RETURN_IF_ERROR(::onnx_amp::CudaStatus((call), (what)))
