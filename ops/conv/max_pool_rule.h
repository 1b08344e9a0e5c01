// The max pools' rule, shared by the NCHW and channels-last max pool kernels: a larger
// value, or the first NaN, takes the window; on one value, on 16 lanes of AVX-512 and on
// 8 of AVX2.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/common/lane_mask_avx512.h"
#endif

namespace onnx_amp {

// Whether `value` takes the window over the max so far, `result`.
inline bool Takes(float value, float result) { return (value > result) | (std::isnan(value) & !std::isnan(result)); }

inline float TakeMax(float value, float result) { return Takes(value, result) ? value : result; }

#if defined(__x86_64__)

// Whether each lane of `value` takes the window over `result`.
__attribute__((target("avx512f"))) inline __mmask16 Takes16(__m512 value, __m512 result) {
  return _mm512_cmp_ps_mask(value, result, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(result, result, _CMP_ORD_Q));
}

__attribute__((target("avx512f"))) inline __m512 TakeMax16(__m512 value, __m512 result) {
  return _mm512_mask_mov_ps(result, Takes16(value, result), value);
}

// Whether each lane of `value` takes the window over `result`, as a lane mask.
__attribute__((target("avx2"))) inline __m256 Takes8(__m256 value, __m256 result) {
  return _mm256_or_ps(_mm256_cmp_ps(value, result, _CMP_GT_OQ),
                      _mm256_and_ps(_mm256_cmp_ps(value, value, _CMP_UNORD_Q), _mm256_cmp_ps(result, result, _CMP_ORD_Q)));
}

__attribute__((target("avx2"))) inline __m256 TakeMax8(__m256 value, __m256 result) {
  return _mm256_blendv_ps(result, value, Takes8(value, result));
}

// Whether the AVX2 pool kernels may run (CpuHasFloatVecAvx2: AVX2, FMA and F16C, as
// ONNX_AMP_MAX_CPU_ISA allows).
bool PoolsRunAvx2();

#endif

}  // namespace onnx_amp
