// Scalar IEEE binary16 and bfloat16 conversions (round to nearest even, subnormals
// kept, overflow to +-inf, NaN stays NaN and is quieted as IEEE convertFormat and the
// F16C/AVX-512 instructions do). The bulk, vectorised versions live in convert.h and
// must agree with these bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/host_device.h"

namespace onnx_amp {

ONNX_AMP_HD uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

ONNX_AMP_HD float BitsToFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

ONNX_AMP_HD uint16_t FloatToHalfBits(float value) {
  const uint32_t f = FloatBits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {  // NaN: keep the top payload bits, set the quiet bit
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  }
  if (abs >= 0x477FF000u) {  // rounds to a magnitude >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to 0
    // Scale into the subnormal grid: the value in units of 2^-24, rounded to nearest even.
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
  uint32_t rebased = abs - (112u << 23);
  rebased += 0xFFFu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

ONNX_AMP_HD float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) {  // inf or NaN (NaN is quieted)
    return BitsToFloat(sign | 0x7F800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u));
  }
  if (exponent == 0) {
    if (mantissa == 0) return BitsToFloat(sign);
    // Subnormal half: value = mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return BitsToFloat(sign | FloatBits(magnitude));
  }
  return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

ONNX_AMP_HD uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t f = FloatBits(value);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: truncate and set the quiet bit
    return static_cast<uint16_t>((f >> 16) | 0x40u);
  }
  const uint32_t rounded = f + 0x7FFFu + ((f >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(rounded >> 16);
}

ONNX_AMP_HD float BFloat16BitsToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

// Storage types: a distinct C++ type per dtype so kernels can be templated on them.
struct Float16 {
  uint16_t bits = 0;
  ONNX_AMP_HD static Float16 FromBits(uint16_t b) { Float16 h; h.bits = b; return h; }
  ONNX_AMP_HD static Float16 FromFloat(float f) { return FromBits(FloatToHalfBits(f)); }
  ONNX_AMP_HD float ToFloat() const { return HalfBitsToFloat(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  ONNX_AMP_HD static BFloat16 FromBits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  ONNX_AMP_HD static BFloat16 FromFloat(float f) { return FromBits(FloatToBFloat16Bits(f)); }
  ONNX_AMP_HD float ToFloat() const { return BFloat16BitsToFloat(bits); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "low-precision types are 2 bytes");

}  // namespace onnx_amp
