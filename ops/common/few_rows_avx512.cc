// few_rows_kernels.h on AVX-512: 16 lanes.
#include "ops/common/few_rows_matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#define ONNX_AMP_FEW_ROWS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

namespace onnx_amp {
namespace {

struct Avx512Vec {
  using Type = __m512;
  static constexpr int64_t kLanes = 16;
  ONNX_AMP_FEW_ROWS_TARGET static Type Zero() { return _mm512_setzero_ps(); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Load(const float* p) { return _mm512_loadu_ps(p); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Splat(float v) { return _mm512_set1_ps(v); }
  ONNX_AMP_FEW_ROWS_TARGET static Type Fma(Type a, Type b, Type c) { return _mm512_fmadd_ps(a, b, c); }
  ONNX_AMP_FEW_ROWS_TARGET static void Store(float* p, Type v) { _mm512_storeu_ps(p, v); }
  ONNX_AMP_FEW_ROWS_TARGET static float Sum(Type v) {
    const __m256 halves = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 quarters = _mm_add_ps(_mm256_castps256_ps128(halves), _mm256_extractf128_ps(halves, 1));
    const __m128 pairs = _mm_add_ps(quarters, _mm_movehl_ps(quarters, quarters));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
  template <DType kDtype>
  ONNX_AMP_FEW_ROWS_TARGET static Type LoadWeights(const void* w, int64_t index) {
    return Widen16<kDtype>(w, index);
  }
};

}  // namespace
}  // namespace onnx_amp

#include "ops/common/few_rows_kernels.h"

namespace onnx_amp {

ONNX_AMP_FEW_ROWS_TARGET void FewRowsAvx512(const FewRowsArgs& args) { RunFewRows<Avx512Vec>(args); }

}  // namespace onnx_amp

#endif  // x86
