#include "runtime/cuda/cuda_versions.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace onnx_amp {
namespace {

// CUDA's encoding: 1000 * major + 10 * minor.
std::string CudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// cuBLAS and cuDNN 9: 10000 * major + 100 * minor + patch.
std::string LibraryVersionText(size_t version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

}  // namespace

std::string CudaLibraryVersions() {
  int runtime = 0;
  const std::string loaded_runtime =
      cudaRuntimeGetVersion(&runtime) == cudaSuccess ? CudaVersionText(runtime) : std::string("unavailable");
  std::string text = "CUDA runtime " + loaded_runtime + ", cuBLASLt " + LibraryVersionText(cublasLtGetVersion()) +
                     ", cuDNN " + LibraryVersionText(cudnnGetVersion());
  text += " (built with CUDA " + CudaVersionText(CUDART_VERSION) + ", cuBLASLt " +
          LibraryVersionText(CUBLAS_VERSION) + ", cuDNN " + LibraryVersionText(CUDNN_VERSION) + ")";
  return text;
}

}  // namespace onnx_amp
