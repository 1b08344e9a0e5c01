// The entry point of libonnx_amp_cuda_backend.so, the one symbol its loader looks up
// (runtime/exec/cuda_backend.h): the table of what the CUDA backend offers, made of the
// CUDA device, the CUDA kernels and the NCCL communicator.
#include "ops/cuda_kernels.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_versions.h"
#include "runtime/exec/cuda_backend.h"
#if ONNX_AMP_WITH_NCCL
#include "runtime/dist/nccl_communicator.h"
#endif

namespace onnx_amp {
namespace {

Expected<std::unique_ptr<Device>> OpenCudaDevice(int ordinal, bool allow_tf32) {
  CudaDeviceOptions options;
  options.ordinal = ordinal;
  options.allow_tf32 = allow_tf32;
  Expected<std::unique_ptr<CudaDevice>> device = CudaDevice::Create(options, CudaKernelRegistry());
  if (!device.ok()) return device.status();
  return std::unique_ptr<Device>(std::move(device).value());
}

#if ONNX_AMP_WITH_NCCL
Expected<std::unique_ptr<Communicator>> OpenNcclCommunicator(Communicator* bootstrap, int device,
                                                             std::chrono::milliseconds timeout) {
  Expected<std::unique_ptr<NcclCommunicator>> communicator = NcclCommunicator::Create(bootstrap, device, timeout);
  if (!communicator.ok()) return communicator.status();
  return std::unique_ptr<Communicator>(std::move(communicator).value());
}
#endif

}  // namespace
}  // namespace onnx_amp

extern "C" __attribute__((visibility("default"))) const onnx_amp::CudaBackend* onnx_amp_cuda_backend() {
  using namespace onnx_amp;
  static const CudaBackend backend = {
      .interface_version = kCudaBackendInterfaceVersion,
      .table_size = sizeof(CudaBackend),
      .library_versions = &CudaLibraryVersions,
      .visible_devices = &CudaDeviceCount,
      .open_device = &OpenCudaDevice,
      .kernel_registry = &CudaKernelRegistry,
#if ONNX_AMP_WITH_NCCL
      .open_nccl_communicator = &OpenNcclCommunicator,
#else
      .open_nccl_communicator = nullptr,
#endif
  };
  return &backend;
}
