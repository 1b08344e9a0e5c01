// The vectorised conversion paths against the scalar path, bit for bit, on 10^7
// random values weighted towards the hard cases, and on every tail length.
#include "runtime/core/convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/core/float16.h"
#include "tests/core/convert_paths.h"

namespace onnx_amp {
namespace {

constexpr size_t kRandomCount = 10'000'000;

// A mix of whole-range bit patterns and the cases where conversions go wrong: NaNs
// with random payloads, +-inf, +-0, float32 subnormals, the float16 range and its
// subnormals, values near 65504, and exact float16 / bfloat16 ties.
std::vector<float> MakeRandomFloats() {
  std::mt19937_64 rng(0x5EED'F16Cu);
  std::vector<float> values(kRandomCount);
  for (float& value : values) {
    const uint64_t r = rng();
    const uint32_t bits = static_cast<uint32_t>(r);
    const uint32_t sign = static_cast<uint32_t>(r >> 32) & 0x80000000u;
    const uint32_t mantissa = bits & 0x7FFFFFu;
    const uint32_t half_exponent = 100u + static_cast<uint32_t>((r >> 40) % 46u);  // float16 range and beyond
    uint32_t pattern = 0;
    switch ((r >> 56) % 10u) {
      case 0:
      case 1:
      case 2:
        pattern = bits;
        break;
      case 3:  // NaN with a random nonzero payload
        pattern = sign | 0x7F800000u | (mantissa == 0 ? 1u : mantissa);
        break;
      case 4:  // +-0, +-inf, +-smallest subnormal, a signalling NaN
        pattern = sign | (bits % 2 ? 0x7F800000u : 0u) | (bits % 3 == 0 ? 1u : 0u);
        break;
      case 5:  // float32 subnormal
        pattern = sign | mantissa;
        break;
      case 6:
        pattern = sign | (half_exponent << 23) | mantissa;
        break;
      case 7:  // within 2^13 ulps of 65504 = 0x477FE000, across the overflow threshold
        pattern = sign | (0x477FE000u - 0x2000u + (bits & 0x3FFFu));
        break;
      case 8:  // float16 tie: the 13 dropped bits are exactly half an ulp
        pattern = sign | (half_exponent << 23) | (mantissa & ~0x1FFFu) | 0x1000u;
        break;
      case 9:  // bfloat16 tie
        pattern = (bits & 0xFFFF0000u) | 0x8000u;
        break;
    }
    value = std::bit_cast<float>(pattern);
  }
  return values;
}

// Every 16-bit pattern, then uniform random ones.
std::vector<uint16_t> MakeRandomHalves() {
  std::mt19937_64 rng(0xB16B00B5u);
  std::vector<uint16_t> values(kRandomCount);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<uint16_t>(i < (1u << 16) ? i : rng());
  }
  return values;
}

const std::vector<float>& RandomFloats() {
  static const std::vector<float> values = MakeRandomFloats();
  return values;
}

const std::vector<uint16_t>& RandomHalves() {
  static const std::vector<uint16_t> values = MakeRandomHalves();
  return values;
}

uint32_t BitsOf(float f) { return std::bit_cast<uint32_t>(f); }
uint32_t BitsOf(uint16_t h) { return h; }

// Compares two outputs bit for bit; on a difference names the first one.
template <typename In, typename Out>
testing::AssertionResult SameBits(const std::vector<In>& src, const std::vector<Out>& expected,
                                  const std::vector<Out>& actual) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (BitsOf(expected[i]) != BitsOf(actual[i])) {
      return testing::AssertionFailure() << std::hex << "at " << std::dec << i << std::hex << ": input 0x"
                                         << BitsOf(src[i]) << ", scalar 0x" << BitsOf(expected[i])
                                         << ", vector 0x" << BitsOf(actual[i]);
    }
  }
  return testing::AssertionSuccess();
}

using NarrowFn = void (*)(ConvertPath, const float*, uint16_t*, size_t);
using WidenFn = void (*)(ConvertPath, const uint16_t*, float*, size_t);

testing::AssertionResult NarrowMatchesScalar(ConvertPath path, NarrowFn convert) {
  const std::vector<float>& src = RandomFloats();
  std::vector<uint16_t> expected(src.size()), actual(src.size());
  convert(ConvertPath::kScalar, src.data(), expected.data(), src.size());
  convert(path, src.data(), actual.data(), src.size());
  return SameBits(src, expected, actual);
}

testing::AssertionResult WidenMatchesScalar(ConvertPath path, WidenFn convert) {
  const std::vector<uint16_t>& src = RandomHalves();
  std::vector<float> expected(src.size()), actual(src.size());
  convert(ConvertPath::kScalar, src.data(), expected.data(), src.size());
  convert(path, src.data(), actual.data(), src.size());
  return SameBits(src, expected, actual);
}

class VectorPathTest : public ConvertPathTest {};

TEST_P(VectorPathTest, FloatToHalfMatchesScalar) {
  EXPECT_TRUE(NarrowMatchesScalar(GetParam(), ConvertFloatToHalfWith));
}

TEST_P(VectorPathTest, FloatToBFloat16MatchesScalar) {
  EXPECT_TRUE(NarrowMatchesScalar(GetParam(), ConvertFloatToBFloat16With));
}

// Blocks of 16 without a float32 subnormal, which the AVX512_BF16 path rounds with
// VCVTNEPS2BF16 (a block holding one takes the integer path; the random pool has one in
// almost every block): every class but subnormals, and the rounding ties of even and odd
// results, for every path.
TEST_P(VectorPathTest, FloatToBFloat16MatchesScalarOnBlocksWithoutSubnormals) {
  std::vector<float> src;
  for (const float value : RandomFloats()) {
    if (std::fpclassify(value) != FP_SUBNORMAL) src.push_back(value);
  }
  for (const uint32_t upper : {0x3F80u, 0x3F81u, 0xC2FFu, 0x7F7Fu, 0x0080u, 0x8080u}) {
    for (const uint32_t lower : {0x0000u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      src.push_back(std::bit_cast<float>(upper << 16 | lower));
    }
  }
  std::vector<uint16_t> expected(src.size()), actual(src.size());
  ConvertFloatToBFloat16With(ConvertPath::kScalar, src.data(), expected.data(), src.size());
  ConvertFloatToBFloat16With(GetParam(), src.data(), actual.data(), src.size());
  EXPECT_TRUE(SameBits(src, expected, actual));
}

TEST_P(VectorPathTest, HalfToFloatMatchesScalar) {
  EXPECT_TRUE(WidenMatchesScalar(GetParam(), ConvertHalfToFloatWith));
}

TEST_P(VectorPathTest, BFloat16ToFloatMatchesScalar) {
  EXPECT_TRUE(WidenMatchesScalar(GetParam(), ConvertBFloat16ToFloatWith));
}

// Lengths around the 8- and 16-lane widths, from unaligned starts; the elements
// around the destination range must stay untouched.
constexpr size_t kTailLengths[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47, 63, 64, 65, 100, 127, 129};
constexpr size_t kSourceOffsets[] = {0, 1, 3};
constexpr size_t kGuard = 32;

template <typename In, typename Out, typename Convert>
void CheckTails(ConvertPath path, const std::vector<In>& pool, Convert convert) {
  Out sentinel;
  std::memset(&sentinel, 0xA5, sizeof sentinel);
  for (size_t offset : kSourceOffsets) {
    for (size_t length : kTailLengths) {
      // Different source elements for each case, so that specials land in every lane.
      const In* src = pool.data() + 1000 * length + offset;
      std::vector<Out> expected(length);
      convert(ConvertPath::kScalar, src, expected.data(), length);
      std::vector<Out> dst(length + 2 * kGuard, sentinel);
      convert(path, src, dst.data() + kGuard, length);
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool inside = i >= kGuard && i < kGuard + length;
        const uint32_t want = BitsOf(inside ? expected[i - kGuard] : sentinel);
        ASSERT_EQ(BitsOf(dst[i]), want) << "length " << length << ", offset " << offset << ", element "
                                        << static_cast<long>(i) - static_cast<long>(kGuard);
      }
    }
  }
}

TEST_P(VectorPathTest, FloatToHalfTails) {
  CheckTails<float, uint16_t>(GetParam(), RandomFloats(), ConvertFloatToHalfWith);
}

TEST_P(VectorPathTest, FloatToBFloat16Tails) {
  CheckTails<float, uint16_t>(GetParam(), RandomFloats(), ConvertFloatToBFloat16With);
}

TEST_P(VectorPathTest, HalfToFloatTails) {
  CheckTails<uint16_t, float>(GetParam(), RandomHalves(), ConvertHalfToFloatWith);
}

TEST_P(VectorPathTest, BFloat16ToFloatTails) {
  CheckTails<uint16_t, float>(GetParam(), RandomHalves(), ConvertBFloat16ToFloatWith);
}

INSTANTIATE_TEST_SUITE_P(VectorPaths, VectorPathTest, testing::ValuesIn(kVectorConvertPaths), ConvertPathTestName);

// The entry points without a path use the widest supported one; whichever it is, the
// bits are the scalar ones.
TEST(ConvertDispatchTest, MatchesScalar) {
  const std::vector<float>& floats = RandomFloats();
  const size_t n = 1'000'003;
  std::vector<uint16_t> expected(n), actual(n);
  ConvertFloatToHalfWith(ConvertPath::kScalar, floats.data(), expected.data(), n);
  ConvertFloatToHalf(floats.data(), actual.data(), n);
  EXPECT_EQ(expected, actual);
  ConvertFloatToBFloat16With(ConvertPath::kScalar, floats.data(), expected.data(), n);
  ConvertFloatToBFloat16(floats.data(), actual.data(), n);
  EXPECT_EQ(expected, actual);

  const std::vector<uint16_t>& halves = RandomHalves();
  std::vector<float> wide_expected(n), wide_actual(n);
  ConvertHalfToFloatWith(ConvertPath::kScalar, halves.data(), wide_expected.data(), n);
  ConvertHalfToFloat(halves.data(), wide_actual.data(), n);
  EXPECT_TRUE(SameBits(halves, wide_expected, wide_actual));
  ConvertBFloat16ToFloatWith(ConvertPath::kScalar, halves.data(), wide_expected.data(), n);
  ConvertBFloat16ToFloat(halves.data(), wide_actual.data(), n);
  EXPECT_TRUE(SameBits(halves, wide_expected, wide_actual));
}

TEST(ConvertDispatchTest, ScalarAlwaysSupportedAndPathsNamed) {
  EXPECT_TRUE(ConvertPathSupported(ConvertPath::kScalar));
  EXPECT_EQ(ConvertPathName(ConvertPath::kScalar), "scalar");
  EXPECT_EQ(ConvertPathName(ConvertPath::kAvx2F16c), "avx2-f16c");
  EXPECT_EQ(ConvertPathName(ConvertPath::kAvx512), "avx512");
  EXPECT_EQ(ConvertPathName(ConvertPath::kAvx512Bf16), "avx512-bf16");
  // Every CPU with AVX-512 F+BW also has AVX2 and F16C.
  if (ConvertPathSupported(ConvertPath::kAvx512)) {
    EXPECT_TRUE(ConvertPathSupported(ConvertPath::kAvx2F16c));
  }
  if (ConvertPathSupported(ConvertPath::kAvx512Bf16)) {
    EXPECT_TRUE(ConvertPathSupported(ConvertPath::kAvx512));
  }
}

}  // namespace
}  // namespace onnx_amp
