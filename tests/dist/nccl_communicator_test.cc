// The NCCL communicator as one rank on one GPU (N = 1, as a single-GPU run uses it): sums
// and maxima come back unchanged, and a broadcast from rank 0 is the identity. Skips, saying
// why, where no GPU is visible.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <vector>

#include "runtime/dist/nccl_communicator.h"

namespace onnx_amp {
namespace {

TEST(NcclCommunicator, OneRankOnOneGpuReducesInPlace) {
  if (VisibleCudaDevices() == 0) GTEST_SKIP() << "no GPU visible: the NCCL path is only compiled here";
  Expected<std::unique_ptr<NcclCommunicator>> communicator =
      NcclCommunicator::Create(nullptr, 0, std::chrono::seconds(30));
  ASSERT_TRUE(communicator.ok()) << communicator.status().message();
  EXPECT_EQ((*communicator)->size(), 1);
  std::vector<float> host = {1.5f, -2.0f, 3.25f, 1e30f};
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, host.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE((*communicator)->AllReduce(device, 4, DType::kFloat32, ReduceOp::kSum, "sum").ok());
  ASSERT_TRUE((*communicator)->AllReduce(device, 4, DType::kFloat32, ReduceOp::kMax, "max").ok());
  ASSERT_TRUE((*communicator)->Broadcast(device, 16, 0, "broadcast").ok());
  std::vector<float> back(4);
  ASSERT_EQ(cudaMemcpy(back.data(), device, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(device);
  EXPECT_EQ(back, host);
}

}  // namespace
}  // namespace onnx_amp
