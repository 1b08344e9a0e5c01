#include "runtime/exec/cuda_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace onnx_amp {
namespace {

Expected<const CudaBackend*> OpenCudaBackend() {
  const std::string path = CudaBackendPath();
  std::error_code error;
  if (path.find('/') != std::string::npos && !std::filesystem::exists(path, error)) {
    return Unsupported("the CUDA backend library " + path + " is missing (it is built next to onnx-amp; set " +
                       kCudaBackendPathVariable + " to load it from elsewhere)");
  }
  // RTLD_NOW: a missing CUDA library or symbol shows here, with dlerror's message, and not
  // as a crash at the first kernel. RTLD_LOCAL: its symbols stay out of later lookups.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    return Unsupported("the CUDA backend library " + path + " cannot be loaded: " +
                       (reason != nullptr ? reason : "unknown dlopen error"));
  }
  // The library stays loaded for the life of the process: devices and kernels it made
  // may live until exit.
  const auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(library, kCudaBackendEntryPoint));
  if (entry == nullptr) {
    return Unsupported("the CUDA backend library " + path + " has no entry point " + kCudaBackendEntryPoint);
  }
  const CudaBackend* backend = entry();
  if (backend == nullptr || backend->interface_version != kCudaBackendInterfaceVersion ||
      backend->table_size != sizeof(CudaBackend)) {
    return Unsupported("the CUDA backend library " + path +
                       " comes from another build of onnx-amp (its interface does not match)");
  }
  return backend;
}

}  // namespace

std::string CudaBackendPath() {
  if (const char* path = std::getenv(kCudaBackendPathVariable); path != nullptr && *path != '\0') return path;
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return kCudaBackendLibrary;  // dlopen's own search (LD_LIBRARY_PATH)
  return (executable.parent_path() / kCudaBackendLibrary).string();
}

Expected<const CudaBackend*> LoadCudaBackend() {
  static const Expected<const CudaBackend*> backend = OpenCudaBackend();
  return backend;
}

}  // namespace onnx_amp
