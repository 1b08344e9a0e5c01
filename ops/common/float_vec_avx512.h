// 16 float32 lanes of AVX-512 for the loops written once over a vector type and compiled
// once per instruction set (ops/common/few_rows_kernels.h, ops/conv/few_channels_kernels.h).
// Every member carries its own target, so the including file is compiled for any x86-64;
// the caller checks the CPU first (float_vec_isa.h).
//
// A vector type provides: Type; kLanes; Zero(); Load(const float*); Widen<dtype>(const
// void*, index) (kLanes values of `dtype` from element `index`, widened exactly to
// float32); Splat(float); Add(a, b); Fma(a, b, c) = a * b + c; Store(float*, v); Sum(v)
// (the lanes added in a fixed tree); RoundTo<dtype>(v) (each lane the float32 value of the
// nearest `dtype` value: the bits runtime/core/convert.h's conversions store, ties to
// even and a NaN quieted); Relu(v) (ReluOp: a negative lane +0, -0 and NaN kept);
// StoreExact<dtype>(void*, index, v) (lanes holding `dtype` values exactly, stored as
// `dtype`).
#pragma once

#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings
#include "runtime/core/bfloat16_round_x86.h"

#define ONNX_AMP_AVX512_FLOATS __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

namespace onnx_amp {

struct Avx512Floats {
  using Type = __m512;
  static constexpr int64_t kLanes = 16;
  ONNX_AMP_AVX512_FLOATS static Type Zero() { return _mm512_setzero_ps(); }
  ONNX_AMP_AVX512_FLOATS static Type Load(const float* p) { return _mm512_loadu_ps(p); }
  template <DType kDtype>
  ONNX_AMP_AVX512_FLOATS static Type Widen(const void* values, int64_t index) {
    return Widen16<kDtype>(values, index);
  }
  ONNX_AMP_AVX512_FLOATS static Type Splat(float v) { return _mm512_set1_ps(v); }
  ONNX_AMP_AVX512_FLOATS static Type Add(Type a, Type b) { return _mm512_add_ps(a, b); }
  ONNX_AMP_AVX512_FLOATS static Type Fma(Type a, Type b, Type c) { return _mm512_fmadd_ps(a, b, c); }
  ONNX_AMP_AVX512_FLOATS static void Store(float* p, Type v) { _mm512_storeu_ps(p, v); }
  template <DType kDtype>
  ONNX_AMP_AVX512_FLOATS static Type RoundTo(Type v) {
    if constexpr (kDtype == DType::kFloat32) {
      return v;
    } else if constexpr (kDtype == DType::kFloat16) {
      return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
      return _mm512_castsi512_ps(_mm512_and_si512(RoundToBFloat16High(_mm512_castps_si512(v)), high));
    }
  }
  ONNX_AMP_AVX512_FLOATS static Type Relu(Type v) {
    const __m512 zero = _mm512_setzero_ps();
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
  }
  template <DType kDtype>
  ONNX_AMP_AVX512_FLOATS static void StoreExact(void* values, int64_t index, Type v) {
    if constexpr (kDtype == DType::kFloat32) {
      _mm512_storeu_ps(static_cast<float*>(values) + index, v);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<uint16_t*>(values) + index), NarrowExact16<kDtype>(v));
    }
  }
  ONNX_AMP_AVX512_FLOATS static float Sum(Type v) {
    const __m256 halves = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
    const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
};

}  // namespace onnx_amp
