// 16 consecutive float32, float16 or bfloat16 values as one AVX-512 register of float32,
// widened exactly: the weight loads of the kernels that stream weights
// (few_rows_avx512.cc, ops/conv/few_pixels_avx512.cc) and the max pools' loads
// (ops/conv/pool_2d.cc, max_pool_grad_channels_last.cc); and the exact way back. For
// x86-64 files that include <immintrin.h>; the caller checks the CPU has AVX-512F first.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
// A false positive of GCC 12: its AVX-512 headers trip -Wmaybe-uninitialized on their own
// self-initialised _mm256_undefined_si256(), in the functions that inline Widen16. Off for
// the rest of the including file, where those functions are.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "runtime/core/dtype.h"

namespace onnx_amp {

template <DType kDtype>
__attribute__((target("avx512f"))) inline __m512 Widen16(const void* values, int64_t index) {
  if constexpr (kDtype == DType::kFloat32) {
    return _mm512_loadu_ps(static_cast<const float*>(values) + index);
  } else {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(values) + index));
    if constexpr (kDtype == DType::kFloat16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
}

// The way back for float16/bfloat16 values that were widened exactly and only moved or
// compared since (a max, a copy): the same bits as the converting stores of
// runtime/core/convert.cc give them (exact, a NaN quieted), without their rounding.
template <DType kDtype>
__attribute__((target("avx512f"))) inline __m256i NarrowExact16(__m512 values) {
  static_assert(kDtype == DType::kFloat16 || kDtype == DType::kBFloat16);
  if constexpr (kDtype == DType::kFloat16) {
    return _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT);
  } else {
    const __m512i bits = _mm512_castps_si512(values);
    const __mmask16 is_nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
    const __m512i quieted = _mm512_mask_or_epi32(bits, is_nan, bits, _mm512_set1_epi32(0x400000));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(quieted, 16));
  }
}

}  // namespace onnx_amp
