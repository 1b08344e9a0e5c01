// The VDPBF16PS kernel of few_pixels_conv.h. Only these functions carry the target (the
// file itself is compiled for any x86-64); the caller checks the CPU first.
#include "ops/conv/few_pixels_conv.h"

#include <cstring>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/widen_avx512.h"  // first: it turns off GCC 12's false intrinsics warnings

#define ONNX_AMP_FEW_PIXELS_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace onnx_amp {
namespace {

// Pairs of k this far ahead are prefetched: 4 KiB, as the float32 kernel's distance in
// bytes was measured best (few_pixels_avx512.cc).
constexpr int64_t kPrefetchPairs = 64;
constexpr int64_t kPairWords = 32;  // 16 output channels x 2 weights

template <int kPixels>
ONNX_AMP_FEW_PIXELS_BF16_TARGET void PairBlocks(const FewPixelsPairArgs& args) {
  const int64_t pairs = args.k / 2;
  for (int64_t block = args.block_begin; block < args.block_end; ++block) {
    const uint16_t* weights = args.packed + block * pairs * kPairWords;
    __m512 sums[kPixels];
    for (int i = 0; i < kPixels; ++i) sums[i] = _mm512_setzero_ps();
    for (int64_t pair = 0; pair < pairs; ++pair) {
      _mm_prefetch(reinterpret_cast<const char*>(weights + (pair + kPrefetchPairs) * kPairWords), _MM_HINT_T0);
      const __m512bh w = (__m512bh)_mm512_loadu_si512(weights + pair * kPairWords);
#pragma GCC unroll 16
      for (int i = 0; i < kPixels; ++i) {
        int32_t taps;  // the pixel's two bfloat16 inputs, the even one in the low half
        std::memcpy(&taps, args.rows + i * args.k + 2 * pair, sizeof(taps));
        sums[i] = _mm512_dpbf16_ps(sums[i], (__m512bh)_mm512_set1_epi32(taps), w);
      }
    }
    for (int i = 0; i < kPixels; ++i) _mm512_storeu_ps(args.sums + i * args.sums_stride + block * 16, sums[i]);
  }
}

template <int... kPixels>
ONNX_AMP_FEW_PIXELS_BF16_TARGET void ForPixels(const FewPixelsPairArgs& args, std::integer_sequence<int, kPixels...>) {
  // One instantiation per pixel count, so each keeps its sums in registers.
  using Kernel = void (*)(const FewPixelsPairArgs&);
  static constexpr Kernel kKernels[] = {&PairBlocks<kPixels + 1>...};
  kKernels[args.pixels - 1](args);
}

}  // namespace

ONNX_AMP_FEW_PIXELS_BF16_TARGET void FewPixelsAvx512Bf16(const FewPixelsPairArgs& args) {
  ForPixels(args, std::make_integer_sequence<int, kFewPixelsMax>{});
}

}  // namespace onnx_amp

#endif  // x86
