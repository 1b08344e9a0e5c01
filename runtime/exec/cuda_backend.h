// The CUDA backend as a library loaded at run time. Everything that links a CUDA library
// (the CUDA device, the CUDA kernels, the NCCL communicator) is built into one shared
// library, libonnx_amp_cuda_backend.so, next to the onnx-amp executable, and loaded the
// first time a CUDA device is asked for: commands that stay on the CPU never map cudart,
// cuBLASLt or cuDNN (about 210 MB of resident memory on every process otherwise).
//
// The library exports one C function, kCudaBackendEntryPoint, that returns the table
// below; nothing registers itself when the library is loaded. Its own undefined symbols
// (the runtime's core, the executor's kernel interface, the CPU ops) resolve against the
// executable that loads it, so that there is one copy of each. The table passes C++
// types, so the library must come from the same build as the executable:
// interface_version and table_size catch a library of another layout.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

class Communicator;
class Device;
class KernelRegistry;

struct CudaBackend {
  int interface_version;  // kCudaBackendInterfaceVersion of the library's build
  size_t table_size;      // sizeof(CudaBackend) in the library's build
  // "CUDA runtime 13.0, cuBLASLt 13.1.0, cuDNN 9.19.0 (built with CUDA 13.0, ...)": the
  // libraries loaded, then those the backend was compiled against.
  std::string (*library_versions)();
  // GPUs this process can see (0 without a driver or a device).
  int (*visible_devices)();
  // GPU `ordinal` with the CUDA kernels. Errors: Unsupported naming why the GPU cannot be
  // used (no driver, no visible GPU, an ordinal past the last one).
  Expected<std::unique_ptr<Device>> (*open_device)(int ordinal, bool allow_tf32);
  // The CUDA kernels, the registry of every device open_device makes.
  const KernelRegistry& (*kernel_registry)();
  // NCCL over the ranks of `bootstrap` (null: one rank) on GPU `device`, for the GPU
  // all-reduce of data-parallel training; null in a backend built without NCCL.
  Expected<std::unique_ptr<Communicator>> (*open_nccl_communicator)(Communicator* bootstrap, int device,
                                                                    std::chrono::milliseconds timeout);
};

inline constexpr int kCudaBackendInterfaceVersion = 2;  // 2: Device gained capture (CUDA graphs)
inline constexpr char kCudaBackendEntryPoint[] = "onnx_amp_cuda_backend";
inline constexpr char kCudaBackendLibrary[] = "libonnx_amp_cuda_backend.so";
// Overrides where the library is looked for (a path to the .so).
inline constexpr char kCudaBackendPathVariable[] = "ONNX_AMP_CUDA_BACKEND";

// The entry point's type: extern "C" const CudaBackend* onnx_amp_cuda_backend().
using CudaBackendEntry = const CudaBackend* (*)();

// Loads the backend on the first call and returns the same table (or the same error) on
// every later one. The library is $ONNX_AMP_CUDA_BACKEND when that is set, otherwise
// libonnx_amp_cuda_backend.so in the folder of the running executable. Errors
// (Unsupported) name the path and the reason: the file is missing, dlopen failed (its
// message: a CUDA library not found, an undefined symbol), the entry point is missing, or
// the library comes from another build.
Expected<const CudaBackend*> LoadCudaBackend();

// Where LoadCudaBackend looks for the library (the override, or the executable's folder).
std::string CudaBackendPath();

}  // namespace onnx_amp
