// few_rows_kernels.h on AVX2 with FMA and F16C: 8 lanes.
#include "ops/common/few_rows_matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define ONNX_AMP_FEW_ROWS_TARGET __attribute__((target("avx2,fma,f16c")))

namespace onnx_amp {
namespace {

struct Avx2Vec {
  using Type = __m256;
  static constexpr int64_t kLanes = 8;
  ONNX_AMP_FEW_ROWS_TARGET static Type Zero() { return _mm256_setzero_ps(); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Load(const float* p) { return _mm256_loadu_ps(p); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Splat(float v) { return _mm256_set1_ps(v); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Fma(Type a, Type b, Type c) { return _mm256_fmadd_ps(a, b, c); }
  ONNX_AMP_FEW_ROWS_TARGET static void Store(float* p, Type v) { _mm256_storeu_ps(p, v); }
  ONNX_AMP_FEW_ROWS_TARGET static float Sum(Type v) {
    const __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
  template <DType kDtype>
  ONNX_AMP_FEW_ROWS_TARGET static Type LoadWeights(const void* w, int64_t index) {
    if constexpr (kDtype == DType::kFloat32) {
      return _mm256_loadu_ps(static_cast<const float*>(w) + index);
    } else {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + index));
      if constexpr (kDtype == DType::kFloat16) return _mm256_cvtph_ps(bits);
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
  }
};

}  // namespace
}  // namespace onnx_amp

#include "ops/common/few_rows_kernels.h"

namespace onnx_amp {

ONNX_AMP_FEW_ROWS_TARGET void FewRowsAvx2(const FewRowsArgs& args) { RunFewRows<Avx2Vec>(args); }

}  // namespace onnx_amp

#endif  // x86
