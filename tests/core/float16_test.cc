// Hand-derived float16 / bfloat16 conversion cases (ties, subnormals, overflow, NaN)
// and exhaustive round trips, on the scalar functions and on every conversion path.
#include "runtime/core/float16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "runtime/core/convert.h"
#include "tests/core/convert_paths.h"

namespace onnx_amp {
namespace {

struct NarrowCase {
  uint32_t input;     // float32 bits
  uint16_t expected;  // float16 / bfloat16 bits
};

struct WidenCase {
  uint16_t input;
  uint32_t expected;
};

constexpr uint32_t Bits(float value) { return std::bit_cast<uint32_t>(value); }

// Hand-derived: float16 keeps 10 fraction bits, so near 1 the spacing is 2^-10 and a
// tie sits at an odd multiple of 2^-11; subnormals are multiples of 2^-24; the
// largest finite value is 65504 and the tie above it, 65520, rounds to inf.
const std::vector<NarrowCase> kFloatToHalfCases = {
    {Bits(1.0f), 0x3C00},
    {Bits(0x1.002p0f), 0x3C00},        // 1 + 2^-11: tie, down to even
    {Bits(0x1.006p0f), 0x3C02},        // 1 + 3*2^-11: tie, up to even 1 + 2^-9
    {Bits(0x1.002002p0f), 0x3C01},     // just above the tie
    {Bits(0x1.001ffep0f), 0x3C00},     // just below the tie
    {Bits(-0x1.006p0f), 0xBC02},
    {Bits(0x1p-14f), 0x0400},          // smallest normal
    {Bits(0x1.ffcp-15f), 0x0400},      // 2^-14 - 2^-25: tie between 0x3FF and 0x400
    {Bits(0x1p-24f), 0x0001},          // smallest subnormal
    {Bits(0x1p-25f), 0x0000},          // halfway to 2^-24: tie to even 0
    {0x33000001u, 0x0001},             // just above 2^-25
    {Bits(0x1.8p-25f), 0x0001},        // 3*2^-26 -> 2^-24
    {Bits(0x1.8p-24f), 0x0002},        // 3*2^-25: tie between 1 and 2 units -> 2
    {Bits(0x1.4p-23f), 0x0002},        // 5*2^-25: tie between 2 and 3 units -> 2
    {Bits(-0x1p-25f), 0x8000},         // rounds to -0
    {0x00000001u, 0x0000},             // smallest float32 subnormal
    {Bits(-0.0f), 0x8000},
    {Bits(65504.0f), 0x7BFF},
    {Bits(65519.99f), 0x7BFF},         // below the tie at 65520
    {Bits(65520.0f), 0x7C00},          // tie, even is 2^16: overflow to inf
    {Bits(-65520.0f), 0xFC00},
    {Bits(1e10f), 0x7C00},
    {0x7F800000u, 0x7C00},             // +inf
    {0xFF800000u, 0xFC00},             // -inf
    {0x7FC00000u, 0x7E00},             // quiet NaN
    {0xFFC00000u, 0xFE00},             // negative quiet NaN keeps its sign
    {0x7F800001u, 0x7E00},             // signalling NaN, payload below float16's reach: quieted
    {0x7FA00000u, 0x7F00},             // signalling NaN: quieted, top payload bit kept
    {0x7F802000u, 0x7E01},             // lowest payload bit float16 can hold
    {0xFFFFFFFFu, 0xFFFF},
};

// bfloat16 keeps float32's exponent and 7 fraction bits: rounding drops the low 16
// bits, a tie is a low half of exactly 0x8000.
const std::vector<NarrowCase> kFloatToBFloat16Cases = {
    {Bits(1.0f), 0x3F80},
    {Bits(0x1.01p0f), 0x3F80},         // 1 + 2^-8: tie, down to even
    {Bits(0x1.03p0f), 0x3F82},         // 1 + 3*2^-8: tie, up to even 1 + 2^-6
    {Bits(0x1.010002p0f), 0x3F81},     // just above the tie
    {Bits(0x1.00fffep0f), 0x3F80},     // just below the tie
    {Bits(-0x1.03p0f), 0xBF82},
    {0x7F7F7FFFu, 0x7F7F},             // below the tie under 2^128
    {0x7F7F8000u, 0x7F80},             // tie at the top, odd lsb: rounds to inf
    {0x7F7FFFFFu, 0x7F80},             // FLT_MAX -> inf
    {0x7F7E8000u, 0x7F7E},             // tie, even lsb: stays
    {0x00008000u, 0x0000},             // subnormal tie, down to even 0
    {0x00018000u, 0x0002},             // subnormal tie, up to even
    {0x00008001u, 0x0001},
    {0x00000001u, 0x0000},
    {0x007FFFFFu, 0x0080},             // largest float32 subnormal -> smallest normal 2^-126
    {0x80008000u, 0x8000},
    {0x7F800000u, 0x7F80},
    {0xFF800000u, 0xFF80},
    {0x7FC00000u, 0x7FC0},
    {0xFF800001u, 0xFFC0},             // signalling NaN, payload below bfloat16's reach: quieted
    {0x7F810000u, 0x7FC1},             // signalling NaN: quieted, payload kept
    {0x7FFFFFFFu, 0x7FFF},
};

const std::vector<WidenCase> kHalfToFloatCases = {
    {0x0001, Bits(0x1p-24f)},
    {0x8001, Bits(-0x1p-24f)},
    {0x03FF, Bits(0x1.ff8p-15f)},      // 1023 * 2^-24, largest subnormal
    {0x0400, Bits(0x1p-14f)},
    {0x3C00, Bits(1.0f)},
    {0x3C01, Bits(0x1.004p0f)},        // 1 + 2^-10
    {0x7BFF, Bits(65504.0f)},
    {0x8000, Bits(-0.0f)},
    {0x7C00, 0x7F800000u},
    {0xFC00, 0xFF800000u},
    {0x7E00, 0x7FC00000u},
    {0xFE00, 0xFFC00000u},
    {0x7C01, 0x7FC02000u},             // signalling NaN: quieted, payload kept
    {0x7D00, 0x7FE00000u},
    {0x7FFF, 0x7FFFE000u},
};

// Widening bfloat16 is exact: the bits move up 16 places, NaNs included.
const std::vector<WidenCase> kBFloat16ToFloatCases = {
    {0x0001, 0x00010000u}, {0x3F80, Bits(1.0f)}, {0xBF81, Bits(-0x1.02p0f)}, {0x7F7F, 0x7F7F0000u},
    {0x7F80, 0x7F800000u}, {0xFF80, 0xFF800000u}, {0x7F81, 0x7F810000u},      {0xFFC0, 0xFFC00000u},
};

using NarrowFn = void (*)(ConvertPath, const float*, uint16_t*, size_t);
using WidenFn = void (*)(ConvertPath, const uint16_t*, float*, size_t);

// Runs the cases three times over in one call, so that each passes through both the
// vector body and the tail.
void CheckNarrow(ConvertPath path, NarrowFn convert, const std::vector<NarrowCase>& cases) {
  std::vector<float> src;
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (const NarrowCase& c : cases) src.push_back(std::bit_cast<float>(c.input));
  }
  std::vector<uint16_t> dst(src.size());
  convert(path, src.data(), dst.data(), src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const NarrowCase& c = cases[i % cases.size()];
    EXPECT_EQ(dst[i], c.expected) << std::hex << "input 0x" << c.input << " at " << std::dec << i;
  }
}

void CheckWiden(ConvertPath path, WidenFn convert, const std::vector<WidenCase>& cases) {
  std::vector<uint16_t> src;
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (const WidenCase& c : cases) src.push_back(c.input);
  }
  std::vector<float> dst(src.size());
  convert(path, src.data(), dst.data(), src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const WidenCase& c = cases[i % cases.size()];
    EXPECT_EQ(std::bit_cast<uint32_t>(dst[i]), c.expected) << std::hex << "input 0x" << c.input << " at "
                                                           << std::dec << i;
  }
}

TEST(Float16ScalarTest, HandDerivedCases) {
  for (const NarrowCase& c : kFloatToHalfCases) {
    EXPECT_EQ(FloatToHalfBits(std::bit_cast<float>(c.input)), c.expected) << std::hex << "input 0x" << c.input;
  }
  for (const NarrowCase& c : kFloatToBFloat16Cases) {
    EXPECT_EQ(FloatToBFloat16Bits(std::bit_cast<float>(c.input)), c.expected) << std::hex << "input 0x" << c.input;
  }
  for (const WidenCase& c : kHalfToFloatCases) {
    EXPECT_EQ(std::bit_cast<uint32_t>(HalfBitsToFloat(c.input)), c.expected) << std::hex << "input 0x" << c.input;
  }
  for (const WidenCase& c : kBFloat16ToFloatCases) {
    EXPECT_EQ(std::bit_cast<uint32_t>(BFloat16BitsToFloat(c.input)), c.expected) << std::hex << "input 0x"
                                                                                 << c.input;
  }
}

TEST(Float16ScalarTest, StorageTypesRoundTrip) {
  EXPECT_EQ(Float16::FromFloat(0x1.006p0f).bits, 0x3C02);
  EXPECT_EQ(Float16::FromBits(0x3C02).ToFloat(), 0x1.008p0f);
  EXPECT_EQ(BFloat16::FromFloat(0x1.03p0f).bits, 0x3F82);
  EXPECT_EQ(BFloat16::FromBits(0x3F82).ToFloat(), 0x1.04p0f);
}

class Float16PathTest : public ConvertPathTest {};

TEST_P(Float16PathTest, FloatToHalfHandDerived) {
  CheckNarrow(GetParam(), ConvertFloatToHalfWith, kFloatToHalfCases);
}

TEST_P(Float16PathTest, FloatToBFloat16HandDerived) {
  CheckNarrow(GetParam(), ConvertFloatToBFloat16With, kFloatToBFloat16Cases);
}

TEST_P(Float16PathTest, HalfToFloatHandDerived) {
  CheckWiden(GetParam(), ConvertHalfToFloatWith, kHalfToFloatCases);
}

TEST_P(Float16PathTest, BFloat16ToFloatHandDerived) {
  CheckWiden(GetParam(), ConvertBFloat16ToFloatWith, kBFloat16ToFloatCases);
}

std::vector<uint16_t> AllPatterns() {
  std::vector<uint16_t> patterns(1u << 16);
  for (uint32_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
  return patterns;
}

// Every float16 pattern survives float16 -> float32 -> float16: non-NaNs bit for bit,
// NaNs with their sign and payload, quieted (quiet bit 0x200 set).
TEST_P(Float16PathTest, EveryHalfRoundTrips) {
  const std::vector<uint16_t> halves = AllPatterns();
  std::vector<float> widened(halves.size());
  std::vector<uint16_t> back(halves.size());
  ConvertHalfToFloatWith(GetParam(), halves.data(), widened.data(), halves.size());
  ConvertFloatToHalfWith(GetParam(), widened.data(), back.data(), widened.size());
  size_t nan_count = 0;
  for (size_t i = 0; i < halves.size(); ++i) {
    const uint16_t h = halves[i];
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    nan_count += is_nan;
    const uint16_t expected = is_nan ? static_cast<uint16_t>(h | 0x200) : h;
    ASSERT_EQ(back[i], expected) << std::hex << "float16 0x" << h << " via float 0x"
                                 << std::bit_cast<uint32_t>(widened[i]);
  }
  EXPECT_EQ(nan_count, 2u * 1023u);  // 2 signs, 1023 nonzero payloads
}

// Every bfloat16 pattern survives bfloat16 -> float32 -> bfloat16 (NaNs quieted: 0x40).
TEST_P(Float16PathTest, EveryBFloat16RoundTrips) {
  const std::vector<uint16_t> bf16 = AllPatterns();
  std::vector<float> widened(bf16.size());
  std::vector<uint16_t> back(bf16.size());
  ConvertBFloat16ToFloatWith(GetParam(), bf16.data(), widened.data(), bf16.size());
  ConvertFloatToBFloat16With(GetParam(), widened.data(), back.data(), widened.size());
  for (size_t i = 0; i < bf16.size(); ++i) {
    const uint16_t b = bf16[i];
    const bool is_nan = (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0;
    const uint16_t expected = is_nan ? static_cast<uint16_t>(b | 0x40) : b;
    ASSERT_EQ(back[i], expected) << std::hex << "bfloat16 0x" << b;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, Float16PathTest, testing::ValuesIn(kEveryConvertPath), ConvertPathTestName);

}  // namespace
}  // namespace onnx_amp
