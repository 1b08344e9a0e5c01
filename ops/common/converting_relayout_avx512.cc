// The AVX-512 transposes of converting_relayout.h. Only these functions carry the target
// (the file itself is compiled for any x86-64); callers check TransposesSupported().
#include "ops/common/converting_relayout.h"

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
// A false positive of GCC 12: its AVX-512 headers trip -Wmaybe-uninitialized on
// their own self-initialised _mm256_undefined_si256().
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "ops/common/lane_mask_avx512.h"

#define ONNX_AMP_TRANSPOSE_TARGET __attribute__((target("avx512f")))

namespace onnx_amp::dnn {
namespace {

// Transposes the 16 x 16 floats of r (row i in r[i]) in place: 32-bit, then 64-bit
// interleaves within 128-bit lanes, then two rounds of 128-bit lane shuffles.
ONNX_AMP_TRANSPOSE_TARGET void Transpose16(__m512 r[16]) {
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

}  // namespace

ONNX_AMP_TRANSPOSE_TARGET void RowsToPixels16(const float* in, int64_t in_stride, int64_t count, float* out,
                                              int64_t out_stride) {
  for (int64_t j0 = 0; j0 < count; j0 += 16) {
    const int64_t width = count - j0 < 16 ? count - j0 : 16;
    const __mmask16 mask = FirstLanes(width);
    __m512 r[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_maskz_loadu_ps(mask, in + i * in_stride + j0);
    Transpose16(r);
    for (int64_t j = 0; j < width; ++j) _mm512_storeu_ps(out + (j0 + j) * out_stride, r[j]);
  }
}

ONNX_AMP_TRANSPOSE_TARGET void PixelsToRows16(const float* in, int64_t in_stride, int64_t count, float* out,
                                              int64_t out_stride) {
  for (int64_t i0 = 0; i0 < count; i0 += 16) {
    const int64_t height = count - i0 < 16 ? count - i0 : 16;
    const __mmask16 mask = FirstLanes(height);
    __m512 r[16];
    for (int64_t i = 0; i < 16; ++i) r[i] = i < height ? _mm512_loadu_ps(in + (i0 + i) * in_stride) : _mm512_setzero_ps();
    Transpose16(r);
    for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(out + j * out_stride + i0, mask, r[j]);
  }
}

ONNX_AMP_TRANSPOSE_TARGET void PixelsToRows16Bits(const uint16_t* in, int64_t in_stride, int64_t count,
                                                  uint16_t* out, int64_t out_stride) {
  for (int64_t i0 = 0; i0 < count; i0 += 16) {
    const int64_t height = count - i0 < 16 ? count - i0 : 16;
    const __mmask16 mask = FirstLanes(height);
    // Each 16-bit value zero-extended into a 32-bit lane, moved as float bits, and
    // narrowed back: the transpose only shuffles lanes, so every bit pattern survives.
    __m512 r[16];
    for (int64_t i = 0; i < 16; ++i) {
      r[i] = i < height ? _mm512_castsi512_ps(_mm512_cvtepu16_epi32(
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + (i0 + i) * in_stride))))
                        : _mm512_setzero_ps();
    }
    Transpose16(r);
    for (int j = 0; j < 16; ++j) _mm512_mask_cvtepi32_storeu_epi16(out + j * out_stride + i0, mask, _mm512_castps_si512(r[j]));
  }
}

}  // namespace onnx_amp::dnn

#endif  // x86
