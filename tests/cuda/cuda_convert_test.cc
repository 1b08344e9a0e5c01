// The GPU conversions use the per-element functions of the CPU, so they must agree bit
// for bit. Skips when no CUDA device is visible.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/core/float16.h"
#include "runtime/cuda/cuda_device.h"

namespace onnx_amp {
namespace {

class CudaConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device is visible";
  }
};

std::vector<float> RandomFloats(size_t count) {
  std::mt19937 rng(7);
  std::vector<float> values(count);
  for (float& v : values) v = BitsToFloat(static_cast<uint32_t>(rng()));
  return values;
}

TEST_F(CudaConvertTest, FloatToHalfMatchesCpu) {
  const std::vector<float> input = RandomFloats(1 << 20);
  std::vector<uint16_t> gpu(input.size());
  ASSERT_TRUE(CudaConvertFloatToHalf(input.data(), gpu.data(), input.size()).ok());
  for (size_t i = 0; i < input.size(); ++i) ASSERT_EQ(gpu[i], FloatToHalfBits(input[i])) << "index " << i;
}

TEST_F(CudaConvertTest, FloatToBFloat16MatchesCpu) {
  const std::vector<float> input = RandomFloats(1 << 20);
  std::vector<uint16_t> gpu(input.size());
  ASSERT_TRUE(CudaConvertFloatToBFloat16(input.data(), gpu.data(), input.size()).ok());
  for (size_t i = 0; i < input.size(); ++i) ASSERT_EQ(gpu[i], FloatToBFloat16Bits(input[i])) << "index " << i;
}

TEST_F(CudaConvertTest, EveryHalfPatternWidensAsOnCpu) {
  std::vector<uint16_t> input(65536);
  for (uint32_t i = 0; i < input.size(); ++i) input[i] = static_cast<uint16_t>(i);
  std::vector<float> half_gpu(input.size()), bf16_gpu(input.size());
  ASSERT_TRUE(CudaConvertHalfToFloat(input.data(), half_gpu.data(), input.size()).ok());
  ASSERT_TRUE(CudaConvertBFloat16ToFloat(input.data(), bf16_gpu.data(), input.size()).ok());
  for (size_t i = 0; i < input.size(); ++i) {
    ASSERT_EQ(FloatBits(half_gpu[i]), FloatBits(HalfBitsToFloat(input[i]))) << "half pattern " << i;
    ASSERT_EQ(FloatBits(bf16_gpu[i]), FloatBits(BFloat16BitsToFloat(input[i]))) << "bfloat16 pattern " << i;
  }
}

TEST(CudaWithoutDeviceTest, ReportsUnsupported) {
  if (CudaDeviceCount() != 0) GTEST_SKIP() << "a CUDA device is visible";
  float value = 1.0f;
  uint16_t out = 0;
  const Status status = CudaConvertFloatToHalf(&value, &out, 1);
  EXPECT_EQ(status.code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace onnx_amp
