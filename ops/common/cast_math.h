// Per-element Cast between numeric types and bool. float16/bfloat16 targets round
// once from the exact source value: double sources go through float with round-to-odd,
// which makes the second rounding exact (float keeps more than 11 + 2 significand bits).
// Float to integer saturates, NaN gives 0 (ONNX leaves both undefined).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/core/float16.h"
#include "runtime/core/host_device.h"

namespace onnx_amp {

ONNX_AMP_HD float DoubleToFloatRoundToOdd(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value || value != value || std::isinf(f)) return f;
  // f was rounded: step back to the truncated value, then make it odd to mark it inexact.
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  return BitsToFloat(FloatBits(f) | 1u);
}

template <typename To>
ONNX_AMP_HD To SaturatingFromDouble(double value) {
  if (value != value) return To(0);
  constexpr int kDigits = std::numeric_limits<To>::digits;
  if (value <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
  if (value >= std::ldexp(1.0, kDigits)) return std::numeric_limits<To>::max();
  return static_cast<To>(value);
}

template <typename From, typename To>
ONNX_AMP_HD To CastValue(From value) {
  constexpr bool kFromLow = std::is_same_v<From, Float16> || std::is_same_v<From, BFloat16>;
  constexpr bool kToLow = std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>;
  if constexpr (kFromLow) {
    return CastValue<float, To>(value.ToFloat());
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (kToLow) return To::FromFloat(value ? 1.0f : 0.0f);
    else return static_cast<To>(value ? 1 : 0);
  } else if constexpr (kToLow) {
    if constexpr (std::is_same_v<From, float>) return To::FromFloat(value);
    else return To::FromFloat(DoubleToFloatRoundToOdd(static_cast<double>(value)));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return SaturatingFromDouble<To>(static_cast<double>(value));
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace onnx_amp
