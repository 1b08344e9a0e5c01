// The fused activations' stores (ops/common/fused_activation.h) give the bits of the
// separate nodes: a float16/bfloat16 output rounded once, then the activation on the
// rounded values. Relu takes a shortcut (on the rounded values' bits), checked here over
// edge cases, a sweep of all float32 bit patterns, and dense sweeps where values round
// to zero or to the smallest subnormal. float32 Relu takes a vectorised loop (relu_bits.h),
// checked over the same values.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/fused_activation.h"
#include "ops/common/relu_bits.h"
#include "runtime/core/float16.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

float FromBits(uint32_t bits) { return std::bit_cast<float>(bits); }

// Both signs of every bit pattern from `low` to `high` magnitudes, every `step`-th.
void AddSweep(std::vector<float>& values, float low, float high, uint32_t step) {
  for (uint32_t bits = std::bit_cast<uint32_t>(low); bits <= std::bit_cast<uint32_t>(high); bits += step) {
    values.push_back(FromBits(bits));
    values.push_back(-FromBits(bits));
  }
}

std::vector<float> EdgeValues(float rounds_to_zero) {
  std::vector<float> values = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                               -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                               -std::numeric_limits<float>::denorm_min(), 65504.0f, 65520.0f, -65520.0f, 1.0f, -1.0f,
                               FromBits(0x7fc00001u), FromBits(0xffc00001u), FromBits(0x7f800001u),
                               FromBits(0xff812345u)};
  for (float edge : {rounds_to_zero, 2 * rounds_to_zero}) {
    for (float v : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 1.0f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  // All of float32, sparsely, and densely where values round to zero or the smallest
  // subnormal.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65521) values.push_back(FromBits(static_cast<uint32_t>(bits)));
  AddSweep(values, rounds_to_zero / 4, rounds_to_zero * 4, 97);
  return values;
}

TEST(FusedActivationTest, ReluOnTheRoundedBitsMatchesTheSeparateRelu) {
  ThreadPool threads(2);
  FusedActivation relu;
  relu.kind = FusedActivationKind::kRelu;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<float> values = EdgeValues(dtype == DType::kFloat16 ? 0x1p-25f : 0x1p-134f);
    const int64_t count = static_cast<int64_t>(values.size());
    Tensor fused = Tensor::Empty(dtype, {count});
    StoreWithActivation(values.data(), fused, relu, threads);
    Tensor applied = Tensor::Empty(dtype, {count});
    StoreFromFloat32(values.data(), applied);
    ApplyActivation(relu, applied, threads);
    // The separate nodes, one element at a time: round (float16.h), ReluOp on the
    // widened value, round again (exact).
    const bool half = dtype == DType::kFloat16;
    std::vector<uint16_t> want(values.size());
    for (int64_t i = 0; i < count; ++i) {
      const uint16_t rounded = half ? FloatToHalfBits(values[i]) : FloatToBFloat16Bits(values[i]);
      const float activated = ReluOp{}(half ? HalfBitsToFloat(rounded) : BFloat16BitsToFloat(rounded));
      want[i] = half ? FloatToHalfBits(activated) : FloatToBFloat16Bits(activated);
    }
    const uint16_t* got = static_cast<const uint16_t*>(fused.raw_data());
    EXPECT_EQ(std::memcmp(applied.raw_data(), want.data(), want.size() * sizeof(uint16_t)), 0)
        << DTypeName(dtype) << ": ApplyActivation differs from the separate nodes";
    int64_t mismatches = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (got[i] == want[i]) continue;
      if (++mismatches <= 5) {
        ADD_FAILURE() << DTypeName(dtype) << " relu of " << values[i] << " (bits 0x" << std::hex
                      << std::bit_cast<uint32_t>(values[i]) << "): fused 0x" << got[i] << ", separate nodes 0x"
                      << want[i];
      }
    }
    EXPECT_EQ(mismatches, 0) << DTypeName(dtype) << " over " << count << " values";
    // The sweep reached values that round to -0 and to the smallest subnormal.
    int64_t negative_zeros = 0;
    for (int64_t i = 0; i < count; ++i) negative_zeros += want[i] == 0x8000;
    EXPECT_GT(negative_zeros, 100) << DTypeName(dtype);
  }
}

TEST(FusedActivationTest, Float32ReluKeepsNanAndNegativeZeroAsTheSeparateRelu) {
  ThreadPool threads(2);
  FusedActivation relu;
  relu.kind = FusedActivationKind::kRelu;
  const std::vector<float> values = EdgeValues(0x1p-134f);
  const int64_t count = static_cast<int64_t>(values.size());
  Tensor applied = Tensor::Empty(DType::kFloat32, {count});
  StoreFromFloat32(values.data(), applied);
  ApplyActivation(relu, applied, threads);
  std::vector<float> copied(values.size());
  ReluFloat32(values.data(), copied.data(), count);
  int64_t mismatches = 0, nans = 0, negative_zeros = 0;
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t want = std::bit_cast<uint32_t>(ReluOp{}(values[i]));
    nans += std::isnan(values[i]);
    negative_zeros += want == 0x80000000u;
    for (const float got : {applied.data<float>()[i], copied[i]}) {
      if (std::bit_cast<uint32_t>(got) == want || ++mismatches > 5) continue;
      ADD_FAILURE() << "relu of bits 0x" << std::hex << std::bit_cast<uint32_t>(values[i]) << ": 0x"
                    << std::bit_cast<uint32_t>(got) << ", ReluOp 0x" << want;
    }
  }
  EXPECT_EQ(mismatches, 0) << "over " << count << " values";
  EXPECT_GT(nans, 100);
  EXPECT_GT(negative_zeros, 0);
}

}  // namespace
}  // namespace onnx_amp
