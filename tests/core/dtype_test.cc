#include "runtime/core/dtype.h"

#include <gtest/gtest.h>

#include <complex>
#include <limits>

namespace onnx_amp {
namespace {

TEST(DTypeTest, NameRoundTripsThroughParse) {
  for (int32_t code = 1; code <= 16; ++code) {
    const std::optional<DType> dtype = DTypeFromOnnx(code);
    ASSERT_TRUE(dtype.has_value()) << code;
    EXPECT_EQ(ToOnnx(*dtype), code);
    EXPECT_EQ(ParseDType(DTypeName(*dtype)), dtype) << DTypeName(*dtype);
  }
  EXPECT_EQ(DTypeName(DType::kFloat32), "float");
  EXPECT_EQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(DTypeName(DType::kFloat64), "double");
}

TEST(DTypeTest, ParsesAliasesAndRejectsUnknownNames) {
  EXPECT_EQ(ParseDType("float32"), DType::kFloat32);
  EXPECT_EQ(ParseDType("fp32"), DType::kFloat32);
  EXPECT_EQ(ParseDType("fp16"), DType::kFloat16);
  EXPECT_EQ(ParseDType("half"), DType::kFloat16);
  EXPECT_EQ(ParseDType("bf16"), DType::kBFloat16);
  EXPECT_EQ(ParseDType("f64"), DType::kFloat64);
  EXPECT_EQ(ParseDType("int64"), DType::kInt64);
  EXPECT_EQ(ParseDType(""), std::nullopt);
  EXPECT_EQ(ParseDType("undefined"), std::nullopt);
  EXPECT_EQ(ParseDType("Float16"), std::nullopt);  // names are case-sensitive, as in ONNX
  EXPECT_EQ(ParseDType("float8"), std::nullopt);
}

TEST(DTypeTest, RejectsUnknownOnnxCodes) {
  EXPECT_EQ(DTypeFromOnnx(0), std::nullopt);
  EXPECT_EQ(DTypeFromOnnx(17), std::nullopt);  // float8e4m3fn: not supported by this build
  EXPECT_EQ(DTypeFromOnnx(-1), std::nullopt);
}

template <typename T>
void ExpectSizeMatches() {
  EXPECT_EQ(DTypeSize(DTypeOf<T>::value), sizeof(T)) << DTypeName(DTypeOf<T>::value);
}

TEST(DTypeTest, SizesMatchStorageTypes) {
  ExpectSizeMatches<float>();
  ExpectSizeMatches<double>();
  ExpectSizeMatches<Float16>();
  ExpectSizeMatches<BFloat16>();
  ExpectSizeMatches<int8_t>();
  ExpectSizeMatches<int16_t>();
  ExpectSizeMatches<int32_t>();
  ExpectSizeMatches<int64_t>();
  ExpectSizeMatches<uint8_t>();
  ExpectSizeMatches<uint16_t>();
  ExpectSizeMatches<uint32_t>();
  ExpectSizeMatches<uint64_t>();
  ExpectSizeMatches<bool>();
  EXPECT_EQ(DTypeSize(DType::kComplex64), sizeof(std::complex<float>));
  EXPECT_EQ(DTypeSize(DType::kComplex128), sizeof(std::complex<double>));
  EXPECT_EQ(DTypeSize(DType::kString), 0u);
  EXPECT_EQ(DTypeSize(DType::kUndefined), 0u);
}

TEST(DTypeTest, Classification) {
  EXPECT_TRUE(IsFloatingPoint(DType::kFloat16));
  EXPECT_TRUE(IsFloatingPoint(DType::kBFloat16));
  EXPECT_FALSE(IsFloatingPoint(DType::kInt32));
  EXPECT_TRUE(IsLowPrecision(DType::kBFloat16));
  EXPECT_FALSE(IsLowPrecision(DType::kFloat32));
  EXPECT_TRUE(IsInteger(DType::kUInt64));
  EXPECT_FALSE(IsInteger(DType::kBool));
  EXPECT_FALSE(IsInteger(DType::kFloat16));
}

// Unit roundoff is half the distance from 1 to the next representable number.
TEST(DTypeTest, UnitRoundoffIsHalfTheGapAboveOne) {
  EXPECT_EQ(UnitRoundoff(DType::kFloat32), std::numeric_limits<float>::epsilon() / 2);
  EXPECT_EQ(UnitRoundoff(DType::kFloat64), std::numeric_limits<double>::epsilon() / 2);
  // 0x3C01 and 0x3F81: the float16 and bfloat16 successors of 1.0.
  EXPECT_EQ(UnitRoundoff(DType::kFloat16), (Float16::FromBits(0x3C01).ToFloat() - 1.0) / 2);
  EXPECT_EQ(UnitRoundoff(DType::kBFloat16), (BFloat16::FromBits(0x3F81).ToFloat() - 1.0) / 2);
  EXPECT_EQ(UnitRoundoff(DType::kFloat16), 0x1p-11);
  EXPECT_EQ(UnitRoundoff(DType::kBFloat16), 0x1p-8);
  EXPECT_EQ(UnitRoundoff(DType::kInt32), 0.0);
}

}  // namespace
}  // namespace onnx_amp
