// Dispatch on a runtime DType to a kernel body templated on the storage type. The set
// of accepted dtypes is a compile-time mask, so a body is only instantiated for the
// types it supports; every other dtype returns the context's Unsupported status.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

template <typename T>
struct TypeTag {
  using type = T;
};

enum DTypeMask : uint32_t {
  kMaskFloat32 = 1u << 0,
  kMaskFloat64 = 1u << 1,
  kMaskFloat16 = 1u << 2,
  kMaskBFloat16 = 1u << 3,
  kMaskInt8 = 1u << 4,
  kMaskInt16 = 1u << 5,
  kMaskInt32 = 1u << 6,
  kMaskInt64 = 1u << 7,
  kMaskUInt8 = 1u << 8,
  kMaskUInt16 = 1u << 9,
  kMaskUInt32 = 1u << 10,
  kMaskUInt64 = 1u << 11,
  kMaskBool = 1u << 12,

  kMaskFloats = kMaskFloat32 | kMaskFloat64 | kMaskFloat16 | kMaskBFloat16,
  kMaskSigned = kMaskInt8 | kMaskInt16 | kMaskInt32 | kMaskInt64,
  kMaskUnsigned = kMaskUInt8 | kMaskUInt16 | kMaskUInt32 | kMaskUInt64,
  kMaskIntegers = kMaskSigned | kMaskUnsigned,
  kMaskNumeric = kMaskFloats | kMaskIntegers,
  kMaskAll = kMaskNumeric | kMaskBool,
};

// Calls body(TypeTag<T>{}) for the storage type T of `dtype` when it is in kMask.
template <uint32_t kMask, typename Body>
Status DispatchDType(const KernelContext& context, DType dtype, Body&& body) {
  switch (dtype) {
    case DType::kFloat32:
      if constexpr ((kMask & kMaskFloat32) != 0) return body(TypeTag<float>{});
      break;
    case DType::kFloat64:
      if constexpr ((kMask & kMaskFloat64) != 0) return body(TypeTag<double>{});
      break;
    case DType::kFloat16:
      if constexpr ((kMask & kMaskFloat16) != 0) return body(TypeTag<Float16>{});
      break;
    case DType::kBFloat16:
      if constexpr ((kMask & kMaskBFloat16) != 0) return body(TypeTag<BFloat16>{});
      break;
    case DType::kInt8:
      if constexpr ((kMask & kMaskInt8) != 0) return body(TypeTag<int8_t>{});
      break;
    case DType::kInt16:
      if constexpr ((kMask & kMaskInt16) != 0) return body(TypeTag<int16_t>{});
      break;
    case DType::kInt32:
      if constexpr ((kMask & kMaskInt32) != 0) return body(TypeTag<int32_t>{});
      break;
    case DType::kInt64:
      if constexpr ((kMask & kMaskInt64) != 0) return body(TypeTag<int64_t>{});
      break;
    case DType::kUInt8:
      if constexpr ((kMask & kMaskUInt8) != 0) return body(TypeTag<uint8_t>{});
      break;
    case DType::kUInt16:
      if constexpr ((kMask & kMaskUInt16) != 0) return body(TypeTag<uint16_t>{});
      break;
    case DType::kUInt32:
      if constexpr ((kMask & kMaskUInt32) != 0) return body(TypeTag<uint32_t>{});
      break;
    case DType::kUInt64:
      if constexpr ((kMask & kMaskUInt64) != 0) return body(TypeTag<uint64_t>{});
      break;
    case DType::kBool:
      if constexpr ((kMask & kMaskBool) != 0) return body(TypeTag<bool>{});
      break;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128:
      break;
  }
  return context.UnsupportedDType(dtype);
}

}  // namespace onnx_amp
