// The AVX2 kernel of few_pixels_conv.h (with FMA and F16C). Its 16 registers hold the sums
// of at most 6 pixels for a block of 16 channels (two vectors each), beside the block's
// two weight vectors and a pixel's splat: the pixels go past each block's weights in
// tiles, k cut into runs whose weights stay in cache for every tile, the running sums
// kept in the output between runs. Each sum still adds its products in k order, one FMA
// at a time, as on AVX-512: the same bits. Only these functions carry the target (the
// file itself is compiled for any x86-64); the caller checks the CPU first.
#include "ops/conv/few_pixels_conv.h"

#include <algorithm>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include "ops/common/float_vec_avx2.h"

namespace onnx_amp {
namespace {

constexpr int kTilePixels = 6;
// k per run: 256 steps of a block's 16 weights, 8-16 KiB, stay in L1 for every tile.
constexpr int64_t kRunSteps = 256;
// Weights this many k steps ahead are prefetched (the first tile of a run streams them).
constexpr int64_t kPrefetchSteps = 64;

template <int kPixels, DType kDtype>
ONNX_AMP_AVX2_FLOATS void TileRun(const FewPixelsArgs& args, int64_t block, int64_t k_begin, int64_t k_end,
                                  int first_pixel) {
  using V = Avx2Floats;
  const int64_t base = block * args.k * 16;
  const size_t bytes = kDtype == DType::kFloat32 ? 4 : 2;
  __m256 low[kPixels], high[kPixels];
  for (int i = 0; i < kPixels; ++i) {
    float* sums = args.sums + (first_pixel + i) * args.sums_stride + block * 16;
    low[i] = k_begin == 0 ? V::Zero() : V::Load(sums);
    high[i] = k_begin == 0 ? V::Zero() : V::Load(sums + 8);
  }
  const float* rows = args.rows + first_pixel * args.k;
  for (int64_t kk = k_begin; kk < k_end; ++kk) {
    _mm_prefetch(static_cast<const char*>(args.packed) + static_cast<size_t>(base + (kk + kPrefetchSteps) * 16) * bytes,
                 _MM_HINT_T0);
    const __m256 w_low = V::Widen<kDtype>(args.packed, base + kk * 16);
    const __m256 w_high = V::Widen<kDtype>(args.packed, base + kk * 16 + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kPixels; ++i) {
      const __m256 tap = V::Splat(rows[i * args.k + kk]);
      low[i] = V::Fma(tap, w_low, low[i]);
      high[i] = V::Fma(tap, w_high, high[i]);
    }
  }
  for (int i = 0; i < kPixels; ++i) {
    float* sums = args.sums + (first_pixel + i) * args.sums_stride + block * 16;
    V::Store(sums, low[i]);
    V::Store(sums + 8, high[i]);
  }
}

template <DType kDtype, int... kPixels>
ONNX_AMP_AVX2_FLOATS void Blocks(const FewPixelsArgs& args, std::integer_sequence<int, kPixels...>) {
  // One instantiation per tile size, so each keeps its sums in registers.
  using Kernel = void (*)(const FewPixelsArgs&, int64_t, int64_t, int64_t, int);
  static constexpr Kernel kKernels[] = {&TileRun<kPixels + 1, kDtype>...};
  for (int64_t block = args.block_begin; block < args.block_end; ++block) {
    for (int64_t k_begin = 0; k_begin < args.k; k_begin += kRunSteps) {
      const int64_t k_end = std::min(args.k, k_begin + kRunSteps);
      for (int first = 0; first < args.pixels; first += kTilePixels) {
        kKernels[std::min(kTilePixels, args.pixels - first) - 1](args, block, k_begin, k_end, first);
      }
    }
  }
}

}  // namespace

ONNX_AMP_AVX2_FLOATS void FewPixelsAvx2(const FewPixelsArgs& args) {
  constexpr auto kTiles = std::make_integer_sequence<int, kTilePixels>{};
  switch (args.w_dtype) {
    case DType::kFloat16: return Blocks<DType::kFloat16>(args, kTiles);
    case DType::kBFloat16: return Blocks<DType::kBFloat16>(args, kTiles);
    default: return Blocks<DType::kFloat32>(args, kTiles);
  }
}

}  // namespace onnx_amp

#endif  // x86
