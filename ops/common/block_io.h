// Storage <-> compute conversions for element-wise kernels. float16 and bfloat16 are
// computed in float32: a kernel converts a block of kBlockSize inputs with the bulk
// converters, runs the same float32 loop as the float32 kernel, and rounds once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/common/cast_math.h"
#include "runtime/core/convert.h"
#include "runtime/core/float16.h"

namespace onnx_amp {

inline constexpr int64_t kBlockSize = 1024;

template <typename T>
inline constexpr bool kIsLowPrecision = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type a storage type is computed in: float for float16/bfloat16, itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<kIsLowPrecision<T>, float, T>;

// dst[i] = src[i] converted to C. A floating-point value beyond an integer C saturates and
// NaN gives 0, as in Cast (a plain conversion would be undefined behaviour): integer Pow,
// computed in double, overflows this way.
template <typename S, typename C>
inline void LoadAs(const S* src, C* dst, int64_t n) {
  if constexpr (kIsLowPrecision<S>) {
    if constexpr (std::is_same_v<C, float>) {
      if constexpr (std::is_same_v<S, Float16>) {
        ConvertHalfToFloat(reinterpret_cast<const uint16_t*>(src), dst, static_cast<size_t>(n));
      } else {
        ConvertBFloat16ToFloat(reinterpret_cast<const uint16_t*>(src), dst, static_cast<size_t>(n));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = CastValue<S, C>(src[i]);
    }
  } else if constexpr (kIsLowPrecision<C>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = C::FromFloat(static_cast<float>(src[i]));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = CastValue<S, C>(src[i]);
  }
}

// dst[i] = src[i] stored as D, rounding once for float16/bfloat16.
template <typename C, typename D>
inline void StoreAs(const C* src, D* dst, int64_t n) {
  if constexpr (kIsLowPrecision<D> && std::is_same_v<C, float>) {
    if constexpr (std::is_same_v<D, Float16>) {
      ConvertFloatToHalf(src, reinterpret_cast<uint16_t*>(dst), static_cast<size_t>(n));
    } else {
      ConvertFloatToBFloat16(src, reinterpret_cast<uint16_t*>(dst), static_cast<size_t>(n));
    }
  } else {
    LoadAs(src, dst, n);
  }
}

}  // namespace onnx_amp
