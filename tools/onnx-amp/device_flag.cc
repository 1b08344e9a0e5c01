#include "tools/onnx-amp/device_flag.h"

#if ONNX_AMP_WITH_CUDA
#include "ops/cuda_kernels.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_versions.h"
#endif

namespace onnx_amp {

void AddDeviceFlags(CLI::App& command, DeviceFlags& flags) {
  command.add_option("--device", flags.device, "cpu or cuda (GPU 0; ops without a CUDA kernel run on the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  command.add_flag("--allow-tf32", flags.allow_tf32,
                   "With --device cuda: float32 GEMMs and convolutions on TF32 Tensor Cores (10-bit mantissa products)");
}

Expected<std::unique_ptr<Device>> OpenDevice(const DeviceFlags& flags) {
  if (flags.device == "cpu") {
    if (flags.allow_tf32) return InvalidArgument("--allow-tf32 needs --device cuda");
    return std::unique_ptr<Device>();
  }
  if (flags.device != "cuda") return InvalidArgument("--device '" + flags.device + "': expected cpu or cuda");
#if ONNX_AMP_WITH_CUDA
  CudaDeviceOptions options;
  options.allow_tf32 = flags.allow_tf32;
  Expected<std::unique_ptr<CudaDevice>> device = CudaDevice::Create(options, CudaKernelRegistry());
  if (!device.ok()) return device.status().WithContext("--device cuda");
  return std::unique_ptr<Device>(std::move(device).value());
#else
  return Unsupported("--device cuda: this onnx-amp was built without CUDA support (no nvcc at build time)");
#endif
}

std::string DeviceLibraryVersions() {
#if ONNX_AMP_WITH_CUDA
  return CudaLibraryVersions();
#else
  return "CUDA support not compiled in";
#endif
}

}  // namespace onnx_amp
