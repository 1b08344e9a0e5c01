// The CUDA runtime, cuBLASLt and cuDNN versions this build was compiled against, from the
// headers' macros alone: code that does not link the CUDA libraries (the onnx-amp
// executable, whose CUDA backend is a library loaded on demand) can still name them.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn_version.h>

#include <cstddef>
#include <string>

namespace onnx_amp {

// CUDA's encoding: 1000 * major + 10 * minor.
inline std::string CudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// cuBLAS and cuDNN 9: 10000 * major + 100 * minor + patch.
inline std::string CudaLibraryVersionText(size_t version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

// "CUDA 13.0, cuBLASLt 13.1.0, cuDNN 9.19.0".
inline std::string CudaBuildVersions() {
  return "CUDA " + CudaVersionText(CUDART_VERSION) + ", cuBLASLt " + CudaLibraryVersionText(CUBLAS_VERSION) +
         ", cuDNN " + CudaLibraryVersionText(CUDNN_VERSION);
}

}  // namespace onnx_amp
