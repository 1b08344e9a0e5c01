// The numeric contract for element-wise ops: a float16/bfloat16 kernel equals the
// float32 kernel run on the same (rounded) inputs, rounded once -- bit for bit. One
// case table row per op; inputs mix edge values of the low type with random values.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/common/relu_bits.h"
#include "runtime/core/float16.h"
#include "runtime/core/onnx_domain.h"
#include "tests/ops/single_node_harness.h"

namespace onnx_amp::testing {
namespace {

enum class Inputs {
  kUnary,    // x
  kBinary,   // a, b (same shape, broadcast, scalar)
  kTernary,  // Sum/Mean/Max/Min with three operands
  kWhere,    // bool condition, x, y
  kClip,     // x, scalar min, scalar max
};

struct EwCase {
  const char* op;
  Inputs inputs;
  std::function<void(SingleNode&)> attributes = nullptr;
  int opset = 18;
};

std::string CaseName(const ::testing::TestParamInfo<EwCase>& info) {
  static std::map<std::string, int> seen;
  std::string name = info.param.op;
  const int count = seen[name]++;
  return count == 0 ? name : name + "_" + std::to_string(count);
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Edge values of the low type: signed zeros, subnormals, infinities, NaN, values at
// the top of the float16 range, ties for rounding, and ordinary values.
std::vector<double> EdgeValues(DType dtype) {
  std::vector<double> values = {0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5,
                                3.0, 0.75, 100.0, -100.0, 1e-3, 0.999, -0.999, 7.0, -7.0, 20.0, -20.0};
  if (dtype == DType::kFloat16) {
    const double tiny = std::ldexp(1.0, -24);  // smallest float16 subnormal
    for (double v : {tiny, -tiny, 3 * tiny, std::ldexp(1.0, -15), -std::ldexp(1.0, -20), std::ldexp(1.0, -14),
                     65504.0, -65504.0, 65000.0, 60000.0, 32768.0, 255.875}) {
      values.push_back(v);
    }
  } else {
    const double tiny = std::ldexp(1.0, -133);  // smallest bfloat16 subnormal
    for (double v : {tiny, -tiny, 5 * tiny, std::ldexp(1.0, -127), -std::ldexp(1.0, -126), 3.3e38, -3.3e38,
                     1e30, 65504.0, 65536.0}) {
      values.push_back(v);
    }
  }
  return values;
}

// `count` values: the edge values rotated by `shift`, then random ones (half in
// [-8, 8], half log-uniform over many binades with random sign).
std::vector<double> MakeValues(DType dtype, int64_t count, int shift, std::mt19937& rng) {
  const std::vector<double> edges = EdgeValues(dtype);
  std::uniform_real_distribution<double> small(-8.0, 8.0);
  std::uniform_real_distribution<double> exponent(-20.0, 14.0);
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    if (i < static_cast<int64_t>(edges.size())) {
      values[i] = edges[(i + shift) % edges.size()];
    } else if (i % 2 == 0) {
      values[i] = small(rng);
    } else {
      values[i] = std::exp2(exponent(rng)) * (rng() % 2 ? 1.0 : -1.0);
    }
  }
  return values;
}

// The same values in the low dtype (rounded once) and exactly in float32.
struct Operand {
  Tensor low;
  Tensor f32;
};

Operand MakeOperand(DType dtype, const Shape& shape, int shift, std::mt19937& rng) {
  Operand operand;
  operand.low = MakeFloatTensor(dtype, shape, MakeValues(dtype, NumElements(shape), shift, rng));
  operand.f32 = MakeFloatTensor(DType::kFloat32, shape, ToDoubles(operand.low));
  return operand;
}

uint16_t RoundToBits(DType dtype, float value) {
  return dtype == DType::kFloat16 ? FloatToHalfBits(value) : FloatToBFloat16Bits(value);
}

// Runs the node with low-precision and with float32 operands and compares bits.
void ExpectBitExact(const EwCase& c, DType dtype, const std::vector<Operand>& operands, const Tensor& condition) {
  SingleNode low(c.op, c.opset);
  SingleNode f32(c.op, c.opset);
  if (c.attributes) {
    c.attributes(low);
    c.attributes(f32);
  }
  if (condition.defined()) {
    low.Input(condition);
    f32.Input(condition);
  }
  for (const Operand& operand : operands) {
    low.Input(operand.low);
    f32.Input(operand.f32);
  }
  Expected<std::vector<Tensor>> low_out = low.Run();
  Expected<std::vector<Tensor>> f32_out = f32.Run();
  ASSERT_TRUE(low_out.ok()) << low_out.status().message();
  ASSERT_TRUE(f32_out.ok()) << f32_out.status().message();
  const Tensor& got = low_out->at(0);
  const Tensor& ref = f32_out->at(0);
  ASSERT_EQ(got.shape(), ref.shape());
  const int64_t n = ref.num_elements();
  if (ref.dtype() == DType::kBool) {
    ASSERT_EQ(got.dtype(), DType::kBool);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got.data<bool>()[i], ref.data<bool>()[i]) << "element " << i;
    return;
  }
  ASSERT_EQ(ref.dtype(), DType::kFloat32);
  ASSERT_EQ(got.dtype(), dtype);
  int mismatches = 0;
  for (int64_t i = 0; i < n && mismatches < 5; ++i) {
    const uint16_t expected = RoundToBits(dtype, ref.data<float>()[i]);
    uint16_t actual;
    std::memcpy(&actual, static_cast<const char*>(got.raw_data()) + 2 * i, 2);
    if (expected != actual) {
      ++mismatches;
      ADD_FAILURE() << c.op << " " << DTypeName(dtype) << " element " << i << ": got bits " << std::hex << actual
                    << ", float32 kernel rounded gives " << expected << std::dec << " (float32 value "
                    << ref.data<float>()[i] << ")";
    }
  }
}

class ElementwiseLowPrecision : public ::testing::TestWithParam<EwCase> {};

TEST_P(ElementwiseLowPrecision, MatchesFloat32KernelRoundedOnce) {
  const EwCase& c = GetParam();
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    std::mt19937 rng(1234);
    switch (c.inputs) {
      case Inputs::kUnary:
        // Long enough for several conversion blocks and both threads.
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {2, 20011}, 0, rng)}, Tensor());
        break;
      case Inputs::kBinary:
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {2, 20011}, 0, rng), MakeOperand(dtype, {2, 20011}, 7, rng)},
                       Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {5, 3, 41}, 0, rng), MakeOperand(dtype, {3, 1}, 3, rng)},
                       Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {}, 9, rng), MakeOperand(dtype, {7, 33}, 0, rng)}, Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {7, 33}, 0, rng), MakeOperand(dtype, {}, 9, rng)}, Tensor());
        // A bias row under many short rows, conversion blocks spanning several rows on both
        // threads; both operands broadcast; a broadcast operand too large to widen whole.
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {300, 129}, 0, rng), MakeOperand(dtype, {129}, 2, rng)},
                       Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {5, 1, 7}, 0, rng), MakeOperand(dtype, {1, 4, 1}, 6, rng)},
                       Tensor());
        // Rows read in place from a repeated copy: the first operand's, of 1000 (blocks
        // starting anywhere in a row), and one of exactly a block.
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {1000}, 8, rng), MakeOperand(dtype, {40, 1000}, 0, rng)},
                       Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {5, 1024}, 0, rng), MakeOperand(dtype, {1024}, 10, rng)},
                       Tensor());
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {70001}, 1, rng), MakeOperand(dtype, {2, 70001}, 0, rng)},
                       Tensor());
        break;
      case Inputs::kTernary:
        ExpectBitExact(c, dtype,
                       {MakeOperand(dtype, {4, 37}, 0, rng), MakeOperand(dtype, {37}, 5, rng),
                        MakeOperand(dtype, {4, 1}, 11, rng)},
                       Tensor());
        // No operand broadcasts: the blocked fold, over several blocks on both threads.
        ExpectBitExact(c, dtype,
                       {MakeOperand(dtype, {7, 5003}, 0, rng), MakeOperand(dtype, {7, 5003}, 5, rng),
                        MakeOperand(dtype, {7, 5003}, 11, rng)},
                       Tensor());
        break;
      case Inputs::kWhere: {
        std::vector<bool> mask(3 * 41);
        for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 3 == 0;
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {3, 41}, 0, rng), MakeOperand(dtype, {41}, 4, rng)},
                       MakeTensor<bool>({3, 41}, mask));
        break;
      }
      case Inputs::kClip: {
        // Bounds are scalars rounded to the low type like every operand.
        auto bound = [dtype](double value) {
          Operand operand{MakeFloatTensor(dtype, {}, {value}), Tensor()};
          operand.f32 = MakeFloatTensor(DType::kFloat32, {}, ToDoubles(operand.low));
          return operand;
        };
        ExpectBitExact(c, dtype, {MakeOperand(dtype, {2, 20011}, 0, rng), bound(-2.75), bound(3.3)}, Tensor());
        break;
      }
    }
  }
}

template <typename T>
std::function<void(SingleNode&)> With(const std::string& name, T value) {
  return [name, value](SingleNode& node) { node.Attr(name, value); };
}

const EwCase kCases[] = {
    // unary math
    {"Abs", Inputs::kUnary},
    {"Neg", Inputs::kUnary},
    {"Sign", Inputs::kUnary},
    {"Floor", Inputs::kUnary},
    {"Ceil", Inputs::kUnary},
    {"Round", Inputs::kUnary},
    {"Reciprocal", Inputs::kUnary},
    {"Sqrt", Inputs::kUnary},
    {"Exp", Inputs::kUnary},
    {"Log", Inputs::kUnary},
    {"Sin", Inputs::kUnary},
    {"Cos", Inputs::kUnary},
    {"Tan", Inputs::kUnary},
    {"Asin", Inputs::kUnary},
    {"Acos", Inputs::kUnary},
    {"Atan", Inputs::kUnary},
    {"Sinh", Inputs::kUnary},
    {"Cosh", Inputs::kUnary},
    {"Asinh", Inputs::kUnary},
    {"Acosh", Inputs::kUnary},
    {"Atanh", Inputs::kUnary},
    {"Erf", Inputs::kUnary},
    {"IsNaN", Inputs::kUnary},
    {"IsInf", Inputs::kUnary},
    {"IsInf", Inputs::kUnary, With("detect_negative", int64_t{0})},
    // activations
    {"Relu", Inputs::kUnary},
    {"LeakyRelu", Inputs::kUnary, With("alpha", 0.1f)},
    {"PRelu", Inputs::kBinary},
    {"Elu", Inputs::kUnary, With("alpha", 0.5f)},
    {"Selu", Inputs::kUnary},
    {"Celu", Inputs::kUnary, With("alpha", 2.0f)},
    {"Sigmoid", Inputs::kUnary},
    {"HardSigmoid", Inputs::kUnary, With("alpha", 0.3f)},
    {"HardSwish", Inputs::kUnary},
    {"Softplus", Inputs::kUnary},
    {"Softsign", Inputs::kUnary},
    {"Tanh", Inputs::kUnary},
    {"ThresholdedRelu", Inputs::kUnary, With("alpha", 0.7f)},
    {"Gelu", Inputs::kUnary, nullptr, 20},
    {"Gelu", Inputs::kUnary, With("approximate", std::string("tanh")), 20},
    {"Mish", Inputs::kUnary},
    {"Shrink", Inputs::kUnary, [](SingleNode& n) { n.Attr("bias", 0.3f).Attr("lambd", 1.2f); }},
    // binary arithmetic and comparisons
    {"Add", Inputs::kBinary},
    {"Sub", Inputs::kBinary},
    {"Mul", Inputs::kBinary},
    {"Div", Inputs::kBinary},
    {"Pow", Inputs::kBinary},
    {"Mod", Inputs::kBinary, With("fmod", int64_t{1})},
    {"Equal", Inputs::kBinary},
    {"Less", Inputs::kBinary},
    {"LessOrEqual", Inputs::kBinary},
    {"Greater", Inputs::kBinary},
    {"GreaterOrEqual", Inputs::kBinary},
    // variadic, selection, clipping
    {"Max", Inputs::kTernary},
    {"Min", Inputs::kTernary},
    {"Sum", Inputs::kTernary},
    {"Mean", Inputs::kTernary},
    {"Where", Inputs::kWhere},
    {"Clip", Inputs::kClip},
};

INSTANTIATE_TEST_SUITE_P(AllOps, ElementwiseLowPrecision, ::testing::ValuesIn(kCases), CaseName);

// Relu runs on float16/bfloat16 bits: over every bit pattern, a value below zero becomes
// +0 and every other pattern (-0, NaN, signalling NaN included) passes unchanged.
TEST(ElementwiseLowPrecisionRelu, EveryBitPattern) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    Tensor x = Tensor::Empty(dtype, {2, 32768});
    uint16_t* bits = static_cast<uint16_t*>(x.raw_data());
    for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
    Expected<std::vector<Tensor>> y = SingleNode("Relu", 14).Input(x).Run();
    ASSERT_TRUE(y.ok()) << y.status().message();
    ASSERT_EQ(y->at(0).dtype(), dtype);
    const uint16_t* out = static_cast<const uint16_t*>(y->at(0).raw_data());
    for (uint32_t i = 0; i < 65536; ++i) {
      const uint16_t h = static_cast<uint16_t>(i);
      const float value = dtype == DType::kFloat16 ? HalfBitsToFloat(h) : BFloat16BitsToFloat(h);
      const uint16_t expected = value < 0.0f ? uint16_t{0} : h;
      ASSERT_EQ(out[i], expected) << DTypeName(dtype) << " bits " << std::hex << i;
    }
  }
}

// ReluGrad on float16/bfloat16 gives what widening dY and Y, dY * (Y > 0 ? 1 : 0) in
// float32 and rounding back give, over every dY bit pattern against Y of each class
// (zeros, subnormals, normals, infinities, NaNs of either sign): dY where Y > 0, else a
// zero of dY's sign; a NaN dY comes back quieted, an infinite one times 0 as the default
// NaN (negative, quiet).
TEST(ElementwiseLowPrecisionReluGrad, EveryGradientBitPattern) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool half = dtype == DType::kFloat16;
    const uint16_t quiet = half ? 0x0200 : 0x0040, infinity = half ? 0x7c00 : 0x7f80;
    const uint16_t default_nan = half ? 0xfe00 : 0xffc0;
    const std::vector<uint16_t> ys = {0x0000, 0x8000, 0x0001, 0x8001, 0x3c00, 0xbc00, 0x3f80, 0xbf80, infinity,
                                      static_cast<uint16_t>(infinity | 0x8000), static_cast<uint16_t>(infinity | 1),
                                      static_cast<uint16_t>(infinity | quiet | 0x8000)};
    for (const uint16_t y_bits : ys) {
      Tensor dy = Tensor::Empty(dtype, {2, 32768}), y = Tensor::Empty(dtype, {2, 32768});
      uint16_t* dy_data = static_cast<uint16_t*>(dy.raw_data());
      uint16_t* y_data = static_cast<uint16_t*>(y.raw_data());
      for (uint32_t i = 0; i < 65536; ++i) {
        dy_data[i] = static_cast<uint16_t>(i);
        y_data[i] = y_bits;
      }
      Expected<std::vector<Tensor>> dx = SingleNode("ReluGrad", 1, std::string(kOnnxAmpDomain)).Input(dy).Input(y).Run();
      ASSERT_TRUE(dx.ok()) << dx.status().message();
      ASSERT_EQ(dx->at(0).dtype(), dtype);
      const uint16_t* out = static_cast<const uint16_t*>(dx->at(0).raw_data());
      const float y_value = half ? HalfBitsToFloat(y_bits) : BFloat16BitsToFloat(y_bits);
      for (uint32_t i = 0; i < 65536; ++i) {
        const uint16_t g = static_cast<uint16_t>(i);
        const uint16_t magnitude = g & 0x7fff;
        const uint16_t expected = magnitude > infinity ? static_cast<uint16_t>(g | quiet)
                                  : y_value > 0.0f     ? g
                                  : magnitude == infinity ? default_nan
                                                          : static_cast<uint16_t>(g & 0x8000);
        ASSERT_EQ(out[i], expected) << DTypeName(dtype) << " dY bits " << std::hex << i << ", Y bits " << y_bits;
      }
    }
  }
}

// The one-pass AVX-512 loop of ReluGrad with its sums down the rows (a bias gradient
// folded in): every dY bit pattern against Y of each class, in 64 rows of 1021 values
// 1024 apart (the last columns under masks), row counts ending inside a pass of four;
// dX as the definition above gives it, the columns past the width untouched, and each
// sum the float32 sum of its column's dX in row order.
TEST(ElementwiseLowPrecisionReluGrad, RowsWithSumsOnAvx512GiveTheDefinitionsBits) {
  if (!ReluGradRowsWithSumsOnAvx512()) GTEST_SKIP() << "this CPU has no AVX512BW (or ONNX_AMP_MAX_CPU_ISA holds it)";
  constexpr int64_t kStride = 1024, kWidth = 1021;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const bool half = dtype == DType::kFloat16;
    const auto value_of = [&](uint16_t bits) { return half ? HalfBitsToFloat(bits) : BFloat16BitsToFloat(bits); };
    const uint16_t quiet = half ? 0x0200 : 0x0040, infinity = half ? 0x7c00 : 0x7f80;
    const uint16_t default_nan = half ? 0xfe00 : 0xffc0;
    for (const int64_t rows : {int64_t{64}, int64_t{63}, int64_t{2}}) {
      for (const uint16_t y_class : {uint16_t{0x8000}, uint16_t{0x0001}, uint16_t{0x3c00}, infinity, uint16_t{0xffff}}) {
        std::vector<uint16_t> dy(rows * kStride), y(rows * kStride), dx(rows * kStride, 0x1234);
        for (size_t i = 0; i < dy.size(); ++i) {
          dy[i] = static_cast<uint16_t>(i * 40503u);  // every pattern once over 64 rows
          y[i] = static_cast<uint16_t>(y_class ^ (i % 3 == 0 ? 0x8000 : 0));
        }
        std::vector<float> sums(kWidth, 0.0f);
        ReluGradRowsWithSumsAvx512(dtype, dy.data(), y.data(), dx.data(), rows, kWidth, kStride, sums.data());
        std::vector<float> expected_sums(kWidth, 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < kStride; ++j) {
            const size_t i = static_cast<size_t>(r * kStride + j);
            if (j >= kWidth) {
              ASSERT_EQ(dx[i], 0x1234) << "row " << r << " column " << j << " past the width was written";
              continue;
            }
            const uint16_t g = dy[i], magnitude = g & 0x7fff;
            const uint16_t expected = magnitude > infinity ? static_cast<uint16_t>(g | quiet)
                                      : value_of(y[i]) > 0.0f ? g
                                      : magnitude == infinity ? default_nan
                                                              : static_cast<uint16_t>(g & 0x8000);
            ASSERT_EQ(dx[i], expected) << DTypeName(dtype) << " dY bits " << std::hex << g << ", Y bits " << y[i];
            expected_sums[j] += value_of(expected);
          }
        }
        // Which of two NaNs a sum keeps is the adder's operand order, not the contract.
        for (int64_t j = 0; j < kWidth; ++j) {
          uint32_t got, want;
          std::memcpy(&got, &sums[j], 4);
          std::memcpy(&want, &expected_sums[j], 4);
          if (std::isnan(expected_sums[j])) ASSERT_TRUE(std::isnan(sums[j])) << "column " << j;
          else ASSERT_EQ(got, want) << DTypeName(dtype) << " rows " << rows << " column " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp::testing
