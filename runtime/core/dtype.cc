#include "runtime/core/dtype.h"

#include <limits>

namespace onnx_amp {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUndefined: return "undefined";
    case DType::kFloat32: return "float";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "double";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
    case DType::kBFloat16: return "bfloat16";
  }
  return "unknown";
}

std::optional<DType> ParseDType(std::string_view name) {
  struct Alias { std::string_view name; DType dtype; };
  static constexpr Alias kAliases[] = {
      {"float32", DType::kFloat32}, {"fp32", DType::kFloat32}, {"f32", DType::kFloat32},
      {"fp16", DType::kFloat16},    {"f16", DType::kFloat16},  {"half", DType::kFloat16},
      {"bf16", DType::kBFloat16},   {"float64", DType::kFloat64}, {"f64", DType::kFloat64},
      {"fp64", DType::kFloat64},
  };
  for (const Alias& alias : kAliases) {
    if (alias.name == name) return alias.dtype;
  }
  for (int32_t code = 1; code <= ToOnnx(DType::kBFloat16); ++code) {
    const DType dtype = static_cast<DType>(code);
    if (DTypeName(dtype) == name) return dtype;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromOnnx(int32_t onnx_code) {
  if (onnx_code < ToOnnx(DType::kFloat32) || onnx_code > ToOnnx(DType::kBFloat16)) return std::nullopt;
  return static_cast<DType>(onnx_code);
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUndefined: return 0;
    case DType::kString: return 0;
    case DType::kBool: return 1;
    case DType::kUInt8: return 1;
    case DType::kInt8: return 1;
    case DType::kUInt16: return 2;
    case DType::kInt16: return 2;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kUInt32: return 4;
    case DType::kFloat32: return 4;
    case DType::kInt64: return 8;
    case DType::kUInt64: return 8;
    case DType::kFloat64: return 8;
    case DType::kComplex64: return 8;
    case DType::kComplex128: return 16;
  }
  return 0;
}

bool IsFloatingPoint(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

bool IsLowPrecision(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

bool IsInteger(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

double UnitRoundoff(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return 0x1p-11;
    case DType::kBFloat16: return 0x1p-8;
    case DType::kFloat32: return 0x1p-24;
    case DType::kFloat64: return 0x1p-53;
    default: return 0.0;
  }
}

double LargestFinite(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return kFloat16Max;
    case DType::kBFloat16: return 0x1.fep127;
    case DType::kFloat64: return std::numeric_limits<double>::max();
    default: return std::numeric_limits<float>::max();
  }
}

double SmallestSubnormal(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return 0x1p-24;
    case DType::kBFloat16: return 0x1p-133;
    case DType::kFloat64: return std::numeric_limits<double>::denorm_min();
    default: return std::numeric_limits<float>::denorm_min();
  }
}

}  // namespace onnx_amp
