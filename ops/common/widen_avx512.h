// 16 consecutive float32, float16 or bfloat16 values as one AVX-512 register of float32,
// widened exactly: the weight loads of the kernels that stream weights
// (few_rows_avx512.cc, ops/conv/few_pixels_avx512.cc). For x86-64 files that include
// <immintrin.h>; the caller checks the CPU has AVX-512F first.
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

}  // namespace onnx_amp
