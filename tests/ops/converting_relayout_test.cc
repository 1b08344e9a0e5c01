// The one-pass conversions between float16/bfloat16 activations and float32 ones in a
// oneDNN primitive's layout (ops/common/converting_relayout.h) give the bits of the two
// passes they replace: the conversion of runtime/core/convert.h in the plain layout and
// oneDNN's reorder. Values include NaN, infinities, signed zeros, subnormals and halfway
// cases; shapes have pixel counts below, at and past 16 and 1-D to 3-D spatial dims.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/common/converting_relayout.h"
#include "ops/common/onednn_utils.h"
#include "runtime/core/convert.h"

namespace onnx_amp::dnn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// float32 values with the cases rounding must get right among random ones.
std::vector<float> Float32Values(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(rng);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity(), -0.0f, 1e-40f, -3e-39f, 1.00390625f,
                            1.0f + 1.0f / 2048.0f, 65520.0f, 6e-8f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && i * 7 < count; ++i) values[i * 7] = specials[i];
  return values;
}

std::vector<uint16_t> LowPrecisionBits(const std::vector<float>& values, dt type) {
  std::vector<uint16_t> bits(values.size());
  if (type == dt::bf16) {
    ConvertFloatToBFloat16(values.data(), bits.data(), values.size());
  } else {
    ConvertFloatToHalf(values.data(), bits.data(), values.size());
  }
  return bits;
}

// The two passes: converted in the plain layout, then reordered by oneDNN (or the reverse).
std::vector<char> TwoPasses(const dnnl::memory::desc& from, const void* from_data, const dnnl::memory::desc& to) {
  const dnnl::engine& engine = CpuEngine();
  dnnl::stream stream(engine);
  std::vector<char> result(to.get_size());
  const bool widening = from.data_type() != dt::f32;
  const dnnl::memory::desc& low = widening ? from : to;
  const dnnl::memory::desc plain = WithDataType(low, dt::f32);
  std::vector<float> wide(plain.get_size() / sizeof(float));
  if (widening) {
    if (from.data_type() == dt::bf16) {
      ConvertBFloat16ToFloat(static_cast<const uint16_t*>(from_data), wide.data(), wide.size());
    } else {
      ConvertHalfToFloat(static_cast<const uint16_t*>(from_data), wide.data(), wide.size());
    }
    dnnl::memory source(plain, engine, wide.data()), target(to, engine, result.data());
    dnnl::reorder(source, target).execute(stream, source, target);
    stream.wait();
    return result;
  }
  dnnl::memory source(from, engine, const_cast<void*>(from_data)), target(plain, engine, wide.data());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  const std::vector<uint16_t> bits = LowPrecisionBits(wide, to.data_type());
  std::memcpy(result.data(), bits.data(), result.size());
  return result;
}

void ExpectSameAsTwoPasses(const dnnl::memory::desc& from, const dnnl::memory::desc& to, std::mt19937_64& rng) {
  ASSERT_TRUE(ConvertsBetween(from, to));
  const size_t elements = from.get_size() / dnnl::memory::data_type_size(from.data_type());
  std::vector<char> source(from.get_size());
  if (from.data_type() == dt::f32) {
    const std::vector<float> values = Float32Values(elements, rng);
    std::memcpy(source.data(), values.data(), source.size());
  } else {
    const std::vector<uint16_t> bits = LowPrecisionBits(Float32Values(elements, rng), from.data_type());
    std::memcpy(source.data(), bits.data(), source.size());
  }
  std::vector<char> converted(to.get_size(), 0x55);
  ConvertBetween(from, source.data(), to, converted.data(), 2);
  const std::vector<char> expected = TwoPasses(from, source.data(), to);
  ASSERT_EQ(converted.size(), expected.size());
  EXPECT_EQ(std::memcmp(converted.data(), expected.data(), expected.size()), 0);
}

dnnl::memory::desc Blocked16(const dnnl::memory::dims& dims) {
  const tag blocked = dims.size() == 3 ? tag::nCw16c : dims.size() == 4 ? tag::nChw16c : tag::nCdhw16c;
  return dnnl::memory::desc(dims, dt::f32, blocked);
}

const std::vector<dnnl::memory::dims>& Shapes() {
  static const std::vector<dnnl::memory::dims> shapes = {
      {2, 16, 5, 5},     // 25 pixels: one full tile and a tail
      {1, 32, 3, 4},     // 12 pixels: a tail only
      {3, 48, 28, 28},   // 784 pixels: several units of 256
      {2, 16, 300},      // 1-D, a unit tail past 256
      {1, 32, 2, 3, 5},  // 3-D
  };
  return shapes;
}

class ConvertingRelayoutTest : public ::testing::TestWithParam<dt> {};

TEST_P(ConvertingRelayoutTest, RowMajorToPixelGroupsAndBack) {
  if (!TransposesSupported()) GTEST_SKIP() << "this CPU lacks AVX-512: relayouts take two passes";
  std::mt19937_64 rng(71);
  for (const dnnl::memory::dims& dims : Shapes()) {
    SCOPED_TRACE(DimsKey(dims));
    const dnnl::memory::desc low = PlainDesc(dims, GetParam());
    for (const dnnl::memory::desc& wide : {Blocked16(dims), ActivationDesc(dims, dt::f32, true)}) {
      ExpectSameAsTwoPasses(low, wide, rng);
      ExpectSameAsTwoPasses(wide, low, rng);
    }
  }
}

TEST_P(ConvertingRelayoutTest, SameOrderConverts) {
  std::mt19937_64 rng(72);
  for (const dnnl::memory::dims& dims : Shapes()) {
    SCOPED_TRACE(DimsKey(dims));
    for (const bool channels_last : {false, true}) {
      const dnnl::memory::desc low = ActivationDesc(dims, GetParam(), channels_last);
      const dnnl::memory::desc wide = ActivationDesc(dims, dt::f32, channels_last);
      ExpectSameAsTwoPasses(low, wide, rng);
      ExpectSameAsTwoPasses(wide, low, rng);
    }
  }
}

TEST_P(ConvertingRelayoutTest, OtherPairsTakeTwoPasses) {
  const dt type = GetParam();
  // Channels not a multiple of 16, a channels-last low-precision side against blocked
  // float32, two float32 sides, and different dims.
  EXPECT_FALSE(ConvertsBetween(PlainDesc({1, 8, 4, 4}, type), dnnl::memory::desc({1, 8, 4, 4}, dt::f32, tag::nChw8c)));
  EXPECT_FALSE(ConvertsBetween(ActivationDesc({1, 32, 4, 4}, type, true), Blocked16({1, 32, 4, 4})));
  EXPECT_FALSE(ConvertsBetween(PlainDesc({1, 16, 4, 4}, dt::f32), Blocked16({1, 16, 4, 4})));
  EXPECT_FALSE(ConvertsBetween(PlainDesc({1, 16, 4, 4}, type), PlainDesc({1, 16, 4, 5}, dt::f32)));
}

INSTANTIATE_TEST_SUITE_P(LowPrecisionTypes, ConvertingRelayoutTest, ::testing::Values(dt::f16, dt::bf16),
                         [](const ::testing::TestParamInfo<dt>& info) {
                           return info.param == dt::f16 ? "float16" : "bfloat16";
                         });

// The pixel-to-row transposes alone, against a plain index loop: pixel counts below, at
// and past 16, strides wider than the data, and for the 16-bit one every bit pattern
// (NaN payloads, signed zeros) moved as it is.
TEST(PixelTransposeTest, PixelsToRowsMatchesTheIndexLoop) {
  if (!TransposesSupported()) GTEST_SKIP() << "this CPU lacks AVX-512: the pools gather element by element";
  constexpr int64_t kInStride = 37, kOutStride = 45;
  for (const int64_t count : {1, 7, 16, 23, 40}) {
    std::vector<float> in(static_cast<size_t>(count * kInStride));
    std::vector<uint16_t> in_bits(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = static_cast<float>(i) - 0.5f;
      in_bits[i] = static_cast<uint16_t>(i * 40503u);
    }
    std::vector<float> out(static_cast<size_t>(16 * kOutStride), -1.0f);
    std::vector<uint16_t> out_bits(out.size(), 0xabcd);
    PixelsToRows16(in.data(), kInStride, count, out.data(), kOutStride);
    PixelsToRows16Bits(in_bits.data(), kInStride, count, out_bits.data(), kOutStride);
    for (int64_t j = 0; j < 16; ++j) {
      for (int64_t i = 0; i < kOutStride; ++i) {
        const size_t at = static_cast<size_t>(j * kOutStride + i);
        const bool written = i < count;
        ASSERT_EQ(out[at], written ? in[i * kInStride + j] : -1.0f) << "count " << count << " (" << i << ", " << j << ")";
        ASSERT_EQ(out_bits[at], written ? in_bits[i * kInStride + j] : 0xabcd)
            << "count " << count << " (" << i << ", " << j << ")";
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp::dnn
