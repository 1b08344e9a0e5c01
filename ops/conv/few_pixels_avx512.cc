// The AVX-512 kernel of few_pixels_conv.h. Only these functions carry the target (the
// file itself is compiled for any x86-64); the caller checks the CPU first.
#include "ops/conv/few_pixels_conv.h"

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#define ONNX_AMP_FEW_PIXELS_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

namespace onnx_amp {
namespace {

// Weights this many k steps ahead are prefetched: a block's stream is sequential, but
// the hardware prefetcher alone left oneDNN's kernels (and a loop without this) a
// quarter below the rate memory delivers (measured: 4 KB ahead took a 512 -> 512 3 x 3
// layer on 4 x 4 pixels from 1.46 to 0.88 ms on one core, weights not in cache).
constexpr int64_t kPrefetchSteps = 64;

template <DType kDtype>
ONNX_AMP_FEW_PIXELS_TARGET void Prefetch(const void* packed, int64_t index) {
  const size_t bytes = kDtype == DType::kFloat32 ? 4 : 2;
  _mm_prefetch(static_cast<const char*>(packed) + static_cast<size_t>(index) * bytes, _MM_HINT_T0);
}

template <int kPixels, DType kDtype>
ONNX_AMP_FEW_PIXELS_TARGET void Blocks(const FewPixelsArgs& args) {
  const int64_t k = args.k;
  for (int64_t block = args.block_begin; block < args.block_end; ++block) {
    const int64_t base = block * k * 16;
    __m512 sums[kPixels];
    for (int i = 0; i < kPixels; ++i) sums[i] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; ++kk) {
      Prefetch<kDtype>(args.packed, base + (kk + kPrefetchSteps) * 16);
      const __m512 weights = Widen16<kDtype>(args.packed, base + kk * 16);
#pragma GCC unroll 16
      for (int i = 0; i < kPixels; ++i) {
        sums[i] = _mm512_fmadd_ps(_mm512_set1_ps(args.rows[i * k + kk]), weights, sums[i]);
      }
    }
    for (int i = 0; i < kPixels; ++i) _mm512_storeu_ps(args.sums + i * args.sums_stride + block * 16, sums[i]);
  }
}

template <DType kDtype, int... kPixels>
ONNX_AMP_FEW_PIXELS_TARGET void ForPixels(const FewPixelsArgs& args, std::integer_sequence<int, kPixels...>) {
  // One instantiation per pixel count, so each keeps its sums in registers.
  using Kernel = void (*)(const FewPixelsArgs&);
  static constexpr Kernel kKernels[] = {&Blocks<kPixels + 1, kDtype>...};
  kKernels[args.pixels - 1](args);
}

template <DType kDtype>
ONNX_AMP_FEW_PIXELS_TARGET void ForDtype(const FewPixelsArgs& args) {
  ForPixels<kDtype>(args, std::make_integer_sequence<int, kFewPixelsMax>{});
}

}  // namespace

ONNX_AMP_FEW_PIXELS_TARGET void FewPixelsAvx512(const FewPixelsArgs& args) {
  switch (args.w_dtype) {
    case DType::kFloat16: return ForDtype<DType::kFloat16>(args);
    case DType::kBFloat16: return ForDtype<DType::kBFloat16>(args);
    default: return ForDtype<DType::kFloat32>(args);
  }
}

}  // namespace onnx_amp

#endif  // x86
