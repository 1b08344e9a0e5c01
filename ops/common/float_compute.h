// Moving between a floating tensor's storage type and its compute type, shared by the
// kernel families. The numeric contract: float16/bfloat16 values are read into float32,
// all arithmetic and accumulation is float32 (float64 for float64 tensors), and each
// output element is rounded to its storage type once.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "runtime/core/dtype.h"
#include "runtime/core/float16.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// float64 tensors compute in double; everything else in float.
template <typename T> struct ComputeTypeOf { using type = float; };
template <> struct ComputeTypeOf<double> { using type = double; };
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T> ComputeType<T> LoadValue(T value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return value.ToFloat();
  } else {
    return value;
  }
}

template <typename T> T StoreValue(ComputeType<T> value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T::FromFloat(value);
  } else {
    return static_cast<T>(value);
  }
}

// Calls fn(T{}) with the storage type of a floating dtype (float, double, Float16,
// BFloat16) and returns its Status; other dtypes are Unsupported, naming the node.
template <typename Fn>
Status DispatchFloat(const KernelContext& context, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kFloat16: return fn(Float16{});
    case DType::kBFloat16: return fn(BFloat16{});
    case DType::kUndefined:
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kString:
    case DType::kBool:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kComplex64:
    case DType::kComplex128:
      return context.UnsupportedDType(dtype);
  }
  return context.UnsupportedDType(dtype);
}

}  // namespace onnx_amp
