#include "tools/onnx-amp/device_flag.h"

#if ONNX_AMP_WITH_CUDA
#include "runtime/cuda/cuda_build_versions.h"
#include "runtime/exec/cuda_backend.h"
#endif

namespace onnx_amp {

void AddDeviceFlags(CLI::App& command, DeviceFlags& flags) {
  command.add_option("--device", flags.device, "cpu or cuda (GPU 0; ops without a CUDA kernel run on the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command.add_flag("--allow-tf32", flags.allow_tf32,
                   "With --device cuda: float32 GEMMs and convolutions on TF32 Tensor Cores (10-bit mantissa products)");
}

Expected<std::unique_ptr<Device>> OpenDevice(const DeviceFlags& flags, int ordinal) {
  if (flags.device == "cpu") {
    if (flags.allow_tf32) return InvalidArgument("--allow-tf32 needs --device cuda");
    return std::unique_ptr<Device>();
  }
  if (flags.device != "cuda") return InvalidArgument("--device '" + flags.device + "': expected cpu or cuda");
#if ONNX_AMP_WITH_CUDA
  // The CUDA libraries are mapped from here on, and only in processes that get here.
  Expected<const CudaBackend*> backend = LoadCudaBackend();
  if (!backend.ok()) return backend.status().WithContext("--device cuda");
  Expected<std::unique_ptr<Device>> device = (*backend)->open_device(ordinal, flags.allow_tf32);
  if (!device.ok()) return device.status().WithContext("--device cuda");
  return device;
#else
  (void)ordinal;
  return Unsupported("--device cuda: this onnx-amp was built without CUDA support (no nvcc at build time)");
#endif
}

std::string DeviceLibraryVersions() {
#if ONNX_AMP_WITH_CUDA
  Expected<const CudaBackend*> backend = LoadCudaBackend();
  if (!backend.ok()) return "built with " + CudaBuildVersions() + "; backend not loadable: " + backend.status().message();
  return (*backend)->library_versions();
#else
  return "CUDA support not compiled in";
#endif
}

}  // namespace onnx_amp
