// The CUDA backend as the executables that do not link CUDA see it: loaded with dlopen
// from the test's own folder (bin/, where the library is built) through its one entry
// point, its table complete and from this build, its device and kernels, and the NCCL
// communicator factory. This binary links no CUDA library (cmake/cuda.cmake,
// onnx_amp_host_cuda_backend); the GPU parts skip, saying why, where no GPU is visible.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "ops/kernel_registry.h"
#include "runtime/cuda/cuda_build_versions.h"
#include "runtime/dist/communicator.h"
#include "runtime/exec/cuda_backend.h"
#include "runtime/exec/device.h"

namespace onnx_amp {
namespace {

const CudaBackend& Backend() {
  unsetenv(kCudaBackendPathVariable);  // the library next to this binary
  Expected<const CudaBackend*> backend = LoadCudaBackend();
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  if (!backend.ok()) std::abort();
  return **backend;
}

TEST(CudaBackendLoad, TableIsFromThisBuild) {
  const CudaBackend& backend = Backend();
  EXPECT_EQ(backend.interface_version, kCudaBackendInterfaceVersion);
  EXPECT_EQ(backend.table_size, sizeof(CudaBackend));
  EXPECT_EQ(&backend, *LoadCudaBackend());  // loaded once
  // The backend's own build-time versions are this executable's.
  EXPECT_NE(backend.library_versions().find("(built with " + CudaBuildVersions() + ")"), std::string::npos)
      << backend.library_versions();
}

TEST(CudaBackendLoad, KernelRegistryHoldsTheCudaKernels) {
  const KernelRegistry& kernels = Backend().kernel_registry();
  for (const char* op : {"MatMul", "Gemm", "Conv", "Softmax", "Cast", "LayerNormalization"}) {
    EXPECT_NE(kernels.Find("", op, DeviceKind::kCuda), nullptr) << op;
  }
  EXPECT_EQ(kernels.Find("", "MatMul", DeviceKind::kCpu), nullptr);  // CPU kernels stay in the executable
}

TEST(CudaBackendLoad, OpenDeviceSaysWhyWithoutAGpu) {
  const CudaBackend& backend = Backend();
  Expected<std::unique_ptr<Device>> device = backend.open_device(0, false);
  if (backend.visible_devices() > 0) {
    ASSERT_TRUE(device.ok()) << device.status().message();
    EXPECT_EQ((*device)->kind(), DeviceKind::kCuda);
    EXPECT_EQ(&(*device)->kernels(), &backend.kernel_registry());
    return;
  }
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(device.status().message().find("no CUDA device is"), std::string::npos) << device.status().message();
}

TEST(CudaBackendLoad, DeviceOrdinalPastTheLastIsAnError) {
  const CudaBackend& backend = Backend();
  Expected<std::unique_ptr<Device>> device = backend.open_device(backend.visible_devices() + 7, false);
  EXPECT_FALSE(device.ok());
}

TEST(CudaBackendLoad, NcclCommunicatorOfOneRankReducesDeviceMemory) {
  const CudaBackend& backend = Backend();
  ASSERT_NE(backend.open_nccl_communicator, nullptr) << "the CUDA build links NCCL (cmake/nccl.cmake)";
  if (backend.visible_devices() == 0) GTEST_SKIP() << "no GPU visible: the NCCL path is only loaded here";
  Expected<std::unique_ptr<Device>> device = backend.open_device(0, false);
  ASSERT_TRUE(device.ok()) << device.status().message();
  Expected<std::unique_ptr<Communicator>> communicator =
      backend.open_nccl_communicator(nullptr, 0, std::chrono::seconds(30));
  ASSERT_TRUE(communicator.ok()) << communicator.status().message();
  EXPECT_EQ((*communicator)->size(), 1);
  EXPECT_EQ((*communicator)->backend(), "nccl");
  const std::vector<float> host = {1.5f, -2.0f, 3.25f, 1e30f};
  Expected<std::shared_ptr<Buffer>> memory = (*device)->Allocate(host.size() * sizeof(float));
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  void* data = (*memory)->data();
  ASSERT_TRUE((*device)->CopyFromHost(data, host.data(), host.size() * sizeof(float)).ok());
  ASSERT_TRUE((*device)->Synchronize().ok());
  ASSERT_TRUE((*communicator)->AllReduce(data, 4, DType::kFloat32, ReduceOp::kSum, "sum").ok());
  std::vector<float> back(host.size());
  ASSERT_TRUE((*device)->CopyToHost(back.data(), data, back.size() * sizeof(float)).ok());
  EXPECT_EQ(back, host);  // one rank: the sum is the value itself
}

}  // namespace
}  // namespace onnx_amp
