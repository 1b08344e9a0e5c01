// 8 float32 lanes of AVX2 with FMA and F16C for the loops written once over a vector type
// (the members are those of float_vec_avx512.h). Every member carries its own target, so
// the including file is compiled for any x86-64; the caller checks the CPU first
// (float_vec_isa.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

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
  ONNX_AMP_AVX2_FLOATS static float Sum(Type v) {
    const __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
};

}  // namespace onnx_amp
