// Element types. The enumerator values are ONNX's TensorProto.DataType codes, so a
// DType converts to and from the protobuf field without a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/core/float16.h"

namespace onnx_amp {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Name as ONNX spells it in type strings ("float", "float16", "bfloat16", "int64", ...).
std::string_view DTypeName(DType dtype);
// Parses DTypeName's spelling, plus "float32"/"fp32"/"fp16"/"bf16"/"f64".
std::optional<DType> ParseDType(std::string_view name);
// Maps an ONNX TensorProto.DataType code; nullopt for codes this build does not know.
std::optional<DType> DTypeFromOnnx(int32_t onnx_code);
inline int32_t ToOnnx(DType dtype) { return static_cast<int32_t>(dtype); }

// Bytes per element; 0 for kString and kUndefined (variable / none).
size_t DTypeSize(DType dtype);
bool IsFloatingPoint(DType dtype);  // float16, bfloat16, float32, float64
bool IsLowPrecision(DType dtype);   // float16, bfloat16
bool IsInteger(DType dtype);        // signed or unsigned integers (not bool)

// Compile-time mapping from a C++ storage type to its DType.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kInt16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kUInt16; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kUInt32; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kUInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// Unit roundoff u = 2^-p for a floating type with p significand bits (hidden bit
// included): 2^-11 float16, 2^-8 bfloat16, 2^-24 float32, 2^-53 float64; 0 otherwise.
double UnitRoundoff(DType dtype);

// The largest finite float16 value, the bound every float16 clamp and headroom uses.
inline constexpr float kFloat16Max = 65504.0f;
// The largest finite value and the smallest positive subnormal of a floating dtype;
// float32's for any other dtype.
double LargestFinite(DType dtype);
double SmallestSubnormal(DType dtype);

}  // namespace onnx_amp
