#include "runtime/cuda/cuda_versions.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "runtime/cuda/cuda_build_versions.h"

namespace onnx_amp {

std::string CudaLibraryVersions() {
  int runtime = 0;
  const std::string loaded_runtime =
      cudaRuntimeGetVersion(&runtime) == cudaSuccess ? CudaVersionText(runtime) : std::string("unavailable");
  return "CUDA runtime " + loaded_runtime + ", cuBLASLt " + CudaLibraryVersionText(cublasLtGetVersion()) +
         ", cuDNN " + CudaLibraryVersionText(cudnnGetVersion()) + " (built with " + CudaBuildVersions() + ")";
}

}  // namespace onnx_amp
