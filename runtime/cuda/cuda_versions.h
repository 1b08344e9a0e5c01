// The CUDA runtime, cuBLASLt and cuDNN versions this build was compiled against, and
// those it loads at run time (`onnx-amp --version`).
#pragma once

#include <string>

namespace onnx_amp {

// "CUDA runtime 13.0, cuBLASLt 13.1.0, cuDNN 9.19.0 (built with CUDA 13.0, cuBLASLt
// 13.1.0, cuDNN 9.19.0)": the loaded libraries first; a library that cannot be loaded
// says so.
std::string CudaLibraryVersions();

}  // namespace onnx_amp
