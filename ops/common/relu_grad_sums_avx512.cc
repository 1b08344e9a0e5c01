// The AVX-512 (F + BW) loops of ReluGradRowsWithSumsAvx512 (relu_bits.h): dX and its sums
// down the rows in one pass. Only these functions carry the target (the file is compiled
// for any x86-64); callers check ReluGradRowsWithSumsOnAvx512().
#include "ops/common/relu_bits.h"

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
// A false positive of GCC 12: its AVX-512 headers trip -Wmaybe-uninitialized on
// their own self-initialised _mm256_undefined_si256().
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "ops/common/lane_mask_avx512.h"

#define ONNX_AMP_RELU_SUMS_TARGET __attribute__((target("avx512f,avx512bw")))

namespace onnx_amp {
namespace {

// Rows per pass over a stretch of columns: each pass loads and stores the stretch's
// sums once for all of them (the sums' loads and stores, not dX's, bound a row at a time).
constexpr int64_t kRowsPerPass = 4;

struct ReluGradBits {
  __m512i infinity, sign, quiet, default_nan;
};

// 32 lanes of ReluGradOnLowPrecisionBits: dy where y > 0, else a zero of dy's sign; an
// infinite dy times 0 the default NaN; a NaN dy quieted.
ONNX_AMP_RELU_SUMS_TARGET inline __m512i ReluGrad32(__m512i g, __m512i v, const ReluGradBits& k) {
  const __m512i magnitude = _mm512_andnot_si512(k.sign, g);
  const __mmask32 positive =
      _mm512_cmpneq_epu16_mask(v, _mm512_setzero_si512()) & _mm512_cmple_epu16_mask(v, k.infinity);
  __m512i dx = _mm512_and_si512(g, k.sign);
  dx = _mm512_mask_mov_epi16(dx, _mm512_cmpeq_epu16_mask(magnitude, k.infinity), k.default_nan);
  dx = _mm512_mask_mov_epi16(dx, positive, g);
  return _mm512_mask_mov_epi16(dx, _mm512_cmpgt_epu16_mask(magnitude, k.infinity), _mm512_or_si512(g, k.quiet));
}

// The 16 values of `half` widened to float32 exactly.
template <bool kHalf>
ONNX_AMP_RELU_SUMS_TARGET inline __m512 Widen16(__m256i half) {
  if constexpr (kHalf) return _mm512_cvtph_ps(half);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}

template <bool kHalf>
ONNX_AMP_RELU_SUMS_TARGET void RowsWithSums(const uint16_t* dy, const uint16_t* y, uint16_t* dx, int64_t rows,
                                            int64_t width, int64_t stride, float* sums) {
  const ReluGradBits k{_mm512_set1_epi16(static_cast<short>(kHalf ? 0x7c00 : 0x7f80)),
                       _mm512_set1_epi16(static_cast<short>(0x8000)),
                       _mm512_set1_epi16(static_cast<short>(kHalf ? 0x0200 : 0x0040)),
                       _mm512_set1_epi16(static_cast<short>(kHalf ? 0xfe00 : 0xffc0))};
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerPass) {
    const int64_t pass_end = std::min(rows, r0 + kRowsPerPass);
    int64_t j = 0;
    for (; j + 32 <= width; j += 32) {
      __m512 sum_low = _mm512_loadu_ps(sums + j), sum_high = _mm512_loadu_ps(sums + j + 16);
      for (int64_t r = r0; r < pass_end; ++r) {
        const int64_t at = r * stride + j;
        const __m512i out = ReluGrad32(_mm512_loadu_si512(dy + at), _mm512_loadu_si512(y + at), k);
        _mm512_storeu_si512(dx + at, out);
        sum_low = _mm512_add_ps(sum_low, Widen16<kHalf>(_mm512_castsi512_si256(out)));
        sum_high = _mm512_add_ps(sum_high, Widen16<kHalf>(_mm512_extracti64x4_epi64(out, 1)));
      }
      _mm512_storeu_ps(sums + j, sum_low);
      _mm512_storeu_ps(sums + j + 16, sum_high);
    }
    if (j == width) continue;
    // The last columns, fewer than 32, under masks.
    const int64_t count = width - j;
    const __mmask32 lanes = (__mmask32(1) << count) - 1;
    const __mmask16 low = FirstLanes(count), high = FirstLanes(count - 16);
    __m512 sum_low = _mm512_maskz_loadu_ps(low, sums + j), sum_high = _mm512_maskz_loadu_ps(high, sums + j + 16);
    for (int64_t r = r0; r < pass_end; ++r) {
      const int64_t at = r * stride + j;
      const __m512i out =
          ReluGrad32(_mm512_maskz_loadu_epi16(lanes, dy + at), _mm512_maskz_loadu_epi16(lanes, y + at), k);
      _mm512_mask_storeu_epi16(dx + at, lanes, out);
      sum_low = _mm512_add_ps(sum_low, Widen16<kHalf>(_mm512_castsi512_si256(out)));
      sum_high = _mm512_add_ps(sum_high, Widen16<kHalf>(_mm512_extracti64x4_epi64(out, 1)));
    }
    _mm512_mask_storeu_ps(sums + j, low, sum_low);
    _mm512_mask_storeu_ps(sums + j + 16, high, sum_high);
  }
}

// 16 lanes of float32 ReluGrad: dy * (y > 0 ? 1 : 0), the multiply kept (a zero of dy's
// sign, inf * 0 the default NaN, NaN quieted).
ONNX_AMP_RELU_SUMS_TARGET inline __m512 ReluGrad16(__m512 g, __m512 v) {
  const __mmask16 positive = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
  return _mm512_mul_ps(g, _mm512_mask_blend_ps(positive, _mm512_setzero_ps(), _mm512_set1_ps(1.0f)));
}

}  // namespace

ONNX_AMP_RELU_SUMS_TARGET void ReluGradRowsWithSumsAvx512(const float* dy, const float* y, float* dx, int64_t rows,
                                                          int64_t width, int64_t stride, float* sums) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsPerPass) {
    const int64_t pass_end = std::min(rows, r0 + kRowsPerPass);
    for (int64_t j = 0; j < width; j += 16) {
      const __mmask16 lanes = FirstLanes(width - j);
      __m512 sum = _mm512_maskz_loadu_ps(lanes, sums + j);
      for (int64_t r = r0; r < pass_end; ++r) {
        const int64_t at = r * stride + j;
        const __m512 out = ReluGrad16(_mm512_maskz_loadu_ps(lanes, dy + at), _mm512_maskz_loadu_ps(lanes, y + at));
        _mm512_mask_storeu_ps(dx + at, lanes, out);
        sum = _mm512_add_ps(sum, out);
      }
      _mm512_mask_storeu_ps(sums + j, lanes, sum);
    }
  }
}

ONNX_AMP_RELU_SUMS_TARGET void ReluGradRowsWithSumsAvx512(DType dtype, const uint16_t* dy, const uint16_t* y,
                                                          uint16_t* dx, int64_t rows, int64_t width, int64_t stride,
                                                          float* sums) {
  if (dtype == DType::kFloat16) RowsWithSums<true>(dy, y, dx, rows, width, stride, sums);
  else RowsWithSums<false>(dy, y, dx, rows, width, stride, sums);
}

}  // namespace onnx_amp
#endif
