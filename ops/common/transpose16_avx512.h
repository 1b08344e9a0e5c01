// A 16 x 16 transpose of 32-bit values in AVX-512 registers, for the x86-64 files that
// build AVX-512 functions with target attributes (they include <immintrin.h>). It only
// shuffles lanes, so every bit pattern (float, or two 16-bit values) survives.
#pragma once

#include <immintrin.h>

namespace onnx_amp {

// Transposes the 16 x 16 values of r (row i in r[i]) in place: 32-bit, then 64-bit
// interleaves within 128-bit lanes, then two rounds of 128-bit lane shuffles.
__attribute__((target("avx512f"), always_inline)) inline void Transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d low = _mm512_castps_pd(t[4 * i]), low_next = _mm512_castps_pd(t[4 * i + 2]);
    const __m512d high = _mm512_castps_pd(t[4 * i + 1]), high_next = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(low, low_next));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(low, low_next));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(high, high_next));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(high, high_next));
  }
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
    t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xdd);
  }
}

}  // namespace onnx_amp
