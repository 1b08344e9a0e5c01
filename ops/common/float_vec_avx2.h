// 8 float32 lanes of AVX2 with FMA and F16C for the loops written once over a vector type
// (the members are those of float_vec_avx512.h, and NarrowExact). Every member carries its own target, so
// the including file is compiled for any x86-64; the caller checks the CPU first
// (float_vec_isa.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "runtime/core/bfloat16_round_x86.h"
#include "runtime/core/dtype.h"

#define ONNX_AMP_AVX2_FLOATS __attribute__((target("avx2,fma,f16c")))

namespace onnx_amp {

struct Avx2Floats {
  using Type = __m256;
  static constexpr int64_t kLanes = 8;
  ONNX_AMP_AVX2_FLOATS static Type Zero() { return _mm256_setzero_ps(); }
  ONNX_AMP_AVX2_FLOATS static Type Load(const float* p) { return _mm256_loadu_ps(p); }
  template <DType kDtype>
  ONNX_AMP_AVX2_FLOATS static Type Widen(const void* values, int64_t index) {
    if constexpr (kDtype == DType::kFloat32) {
      return _mm256_loadu_ps(static_cast<const float*>(values) + index);
    } else {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(values) + index));
      if constexpr (kDtype == DType::kFloat16) return _mm256_cvtph_ps(bits);
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
  }
  ONNX_AMP_AVX2_FLOATS static Type Splat(float v) { return _mm256_set1_ps(v); }
  ONNX_AMP_AVX2_FLOATS static Type Add(Type a, Type b) { return _mm256_add_ps(a, b); }
  ONNX_AMP_AVX2_FLOATS static Type Fma(Type a, Type b, Type c) { return _mm256_fmadd_ps(a, b, c); }
  ONNX_AMP_AVX2_FLOATS static void Store(float* p, Type v) { _mm256_storeu_ps(p, v); }
  template <DType kDtype>
  ONNX_AMP_AVX2_FLOATS static Type RoundTo(Type v) {
    if constexpr (kDtype == DType::kFloat32) {
      return v;
    } else if constexpr (kDtype == DType::kFloat16) {
      return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
      return _mm256_castsi256_ps(_mm256_and_si256(RoundToBFloat16High(_mm256_castps_si256(v)), high));
    }
  }
  ONNX_AMP_AVX2_FLOATS static Type Relu(Type v) {
    const __m256 zero = _mm256_setzero_ps();
    return _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
  }
  template <DType kDtype>
  ONNX_AMP_AVX2_FLOATS static void StoreExact(void* values, int64_t index, Type v) {
    if constexpr (kDtype == DType::kFloat32) {
      _mm256_storeu_ps(static_cast<float*>(values) + index, v);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(values) + index), NarrowExact<kDtype>(v));
    }
  }
  // 8 widened float16/bfloat16 values back exactly (a NaN quieted), as NarrowExact16
  // (widen_avx512.h) does for 16.
  template <DType kDtype>
  ONNX_AMP_AVX2_FLOATS static __m128i NarrowExact(Type v) {
    if constexpr (kDtype == DType::kFloat16) {
      return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    } else {
      const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      const __m256i bits = _mm256_or_si256(_mm256_castps_si256(v), _mm256_and_si256(nan, _mm256_set1_epi32(0x400000)));
      const __m256i high = _mm256_srli_epi32(bits, 16);
      return _mm_packus_epi32(_mm256_castsi256_si128(high), _mm256_extracti128_si256(high, 1));
    }
  }
  ONNX_AMP_AVX2_FLOATS static float Sum(Type v) {
    const __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
};

}  // namespace onnx_amp
