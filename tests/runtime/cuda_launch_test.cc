// The launch arithmetic of the CUDA kernels (runtime/cuda/launch.h), host-only: checked
// here on any machine.
#include "runtime/cuda/launch.h"

#include <gtest/gtest.h>

namespace onnx_amp {
namespace {

constexpr int kHopperMultiprocessors = 132;

TEST(CudaLaunchTest, ElementwiseLaunchCoversTheWorkWithoutSpareBlocks) {
  const LaunchShape small = ElementwiseLaunch(1000, kHopperMultiprocessors);
  EXPECT_EQ(small.threads, 256);
  EXPECT_EQ(small.blocks, 4) << "ceil(1000 / 256)";
  EXPECT_GE(small.blocks * small.threads, 1000);
  const LaunchShape exact = ElementwiseLaunch(256 * 7, kHopperMultiprocessors);
  EXPECT_EQ(exact.blocks, 7);
}

TEST(CudaLaunchTest, ElementwiseLaunchFillsTheDeviceOnceForLargeTensors) {
  const LaunchShape large = ElementwiseLaunch(int64_t{1} << 30, kHopperMultiprocessors);
  EXPECT_EQ(large.blocks, kHopperMultiprocessors * kBlocksPerMultiprocessor) << "grid-stride loops take the rest";
  EXPECT_LE(large.blocks, kMaxGridX);
}

TEST(CudaLaunchTest, ElementwiseLaunchCountsElementsPerThread) {
  EXPECT_EQ(ElementwiseLaunch(4096, kHopperMultiprocessors, 4).blocks, 4);
  EXPECT_EQ(ElementwiseLaunch(4097, kHopperMultiprocessors, 4).blocks, 5);
}

TEST(CudaLaunchTest, EmptyAndOddInputsStillLaunchOneBlock) {
  EXPECT_EQ(ElementwiseLaunch(0, kHopperMultiprocessors).blocks, 1);
  EXPECT_EQ(ElementwiseLaunch(-5, kHopperMultiprocessors).blocks, 1);
  EXPECT_EQ(ElementwiseLaunch(100, 0).blocks, 1);
}

TEST(CudaLaunchTest, ShortRowsTakeAWarpEachLongRowsABlock) {
  const RowLaunch short_rows = RowWiseLaunch(1000, 300);
  EXPECT_TRUE(short_rows.warp_per_row);
  EXPECT_EQ(short_rows.rows_per_block, 8) << "256 threads = 8 warps";
  EXPECT_EQ(short_rows.blocks, 125);
  const RowLaunch boundary = RowWiseLaunch(9, kWarpRowLimit);
  EXPECT_TRUE(boundary.warp_per_row);
  EXPECT_EQ(boundary.blocks, 2);
  const RowLaunch long_rows = RowWiseLaunch(3, kWarpRowLimit + 1);
  EXPECT_FALSE(long_rows.warp_per_row);
  EXPECT_EQ(long_rows.blocks, 3);
  EXPECT_EQ(long_rows.threads, 512);
  EXPECT_EQ(RowWiseLaunch(3, 5000).threads, 1024);
  EXPECT_EQ(long_rows.threads % kWarpSize, 0) << "block reductions need whole warps";
}

}  // namespace
}  // namespace onnx_amp
