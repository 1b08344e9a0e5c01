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
#include "ops/common/transpose16_avx512.h"

#define ONNX_AMP_TRANSPOSE_TARGET __attribute__((target("avx512f")))

namespace onnx_amp::dnn {

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
