// The loops of few_channels_conv.h, written once over a vector type (a block of maps to a
// register; ops/common/float_vec_avx512.h, float_vec_avx2.h) and compiled once per
// instruction set: few_channels_avx512.cc and few_channels_avx2.cc define
// ONNX_AMP_FEW_CHANNELS_TARGET (a target attribute) before including this. Only these
// functions carry the target, and all have internal linkage, so the copies never meet.
// Each sum runs in the same order whatever the lanes, so both copies give the same bits.
#ifndef ONNX_AMP_FEW_CHANNELS_TARGET
#error "define ONNX_AMP_FEW_CHANNELS_TARGET before including few_channels_kernels.h"
#endif

#include <cstdint>
#include <utility>

#include "ops/conv/few_channels_conv.h"
#include "ops/conv/few_channels_loops.h"
#include "ops/conv/max_pool_rule.h"

namespace onnx_amp {
namespace {

// The weights gradient keeps one register per window weight, dY's block of maps in
// another: taps x lanes sums, then the bias's.
template <typename Vec, int kTaps, DType kDtype>
ONNX_AMP_FEW_CHANNELS_TARGET void AddImageBlock(const FewChannelsImage& a) {
  constexpr int64_t kLanes = Vec::kLanes;
  typename Vec::Type sums[kTaps];
  for (int t = 0; t < kTaps; ++t) sums[t] = Vec::Load(a.sums + t * kLanes);
  typename Vec::Type bias = Vec::Load(a.sums + kTaps * kLanes);
  for (int64_t oh = 0; oh < a.out_h; ++oh) {
    const float* corner = a.x + oh * a.row_step;
    const int64_t pixel = oh * a.out_w;
    for (int64_t ow = 0; ow < a.out_w; ++ow, corner += a.column_step) {
      const auto g = Vec::template Widen<kDtype>(a.dy, (pixel + ow) * a.maps + a.block * kLanes);
      bias = Vec::Add(bias, g);
#pragma GCC unroll 27
      for (int t = 0; t < kTaps; ++t) sums[t] = Vec::Fma(g, Vec::Splat(corner[a.tap_offsets[t]]), sums[t]);
    }
  }
  for (int t = 0; t < kTaps; ++t) Vec::Store(a.sums + t * kLanes, sums[t]);
  Vec::Store(a.sums + kTaps * kLanes, bias);
}

// One instantiation per tap count, so each keeps its sums in registers.
template <typename Vec, DType kDtype, int... kTaps>
void AddImageBlockOf(int64_t taps, const FewChannelsImage& a, std::integer_sequence<int, kTaps...>) {
  using Kernel = void (*)(const FewChannelsImage&);
  static constexpr Kernel kKernels[] = {&AddImageBlock<Vec, kTaps + 1, kDtype>...};
  kKernels[taps - 1](a);
}

template <typename Vec, int kMaxTaps>
void AddImage(DType dtype, const FewChannelsImage& a, int64_t taps) {
  constexpr auto kAllTaps = std::make_integer_sequence<int, kMaxTaps>();
  if (dtype == DType::kFloat32) return AddImageBlockOf<Vec, DType::kFloat32>(taps, a, kAllTaps);
  if (dtype == DType::kFloat16) return AddImageBlockOf<Vec, DType::kFloat16>(taps, a, kAllTaps);
  AddImageBlockOf<Vec, DType::kBFloat16>(taps, a, kAllTaps);
}

// Pixels summed side by side: a pixel's taps add into one register in turn, so a single
// pixel waits out the latency of each multiply-add; eight keep the FMA units busy.
constexpr int64_t kRowPixels = 8;

template <typename Vec, int kPixels>
ONNX_AMP_FEW_CHANNELS_TARGET inline void SumPixels(const FewChannelsRow& a, const float* corner, float* out) {
  constexpr int64_t kLanes = Vec::kLanes;
  typename Vec::Type sums[kPixels];
  const auto bias = Vec::Load(a.bias + a.block * kLanes);
  for (int p = 0; p < kPixels; ++p) sums[p] = a.bias_last ? Vec::Zero() : bias;
  for (int64_t t = 0; t < a.taps; ++t) {
    const auto weight = Vec::Load(a.weights + t * a.maps + a.block * kLanes);
    const float* tap = corner + a.tap_offsets[t];
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) sums[p] = Vec::Fma(weight, Vec::Splat(tap[p * a.column_step]), sums[p]);
  }
  for (int p = 0; p < kPixels; ++p) Vec::Store(out + p * a.maps, a.bias_last ? Vec::Add(sums[p], bias) : sums[p]);
}

template <typename Vec>
ONNX_AMP_FEW_CHANNELS_TARGET void SumRow(const FewChannelsRow& a) {
  float* out = a.row + a.block * Vec::kLanes;
  int64_t ow = 0;
  for (; ow + kRowPixels <= a.out_w; ow += kRowPixels) {
    SumPixels<Vec, kRowPixels>(a, a.corner + ow * a.column_step, out + ow * a.maps);
  }
  // The rest in groups of 4, 2 and 1 rather than one at a time, each of which waits out
  // every multiply-add's latency (the bundled CNN's first layer at batch 32 on one core:
  // 0.206 -> 0.192 ms, its 28-wide rows leaving 4 pixels).
  if (ow + 4 <= a.out_w) {
    SumPixels<Vec, 4>(a, a.corner + ow * a.column_step, out + ow * a.maps);
    ow += 4;
  }
  if (ow + 2 <= a.out_w) {
    SumPixels<Vec, 2>(a, a.corner + ow * a.column_step, out + ow * a.maps);
    ow += 2;
  }
  if (ow < a.out_w) SumPixels<Vec, 1>(a, a.corner + ow * a.column_step, out + ow * a.maps);
}

// The pool rule (max_pool_rule.h) on a register of either width.
__attribute__((target("avx512f"))) inline __m512 TakeMaxLanes(__m512 value, __m512 result) {
  return TakeMax16(value, result);
}
__attribute__((target("avx2"))) inline __m256 TakeMaxLanes(__m256 value, __m256 result) {
  return TakeMax8(value, result);
}

// A pixel's sum as Y holds it: the bias added last where the path does, rounded to
// kDtype, then Relu.
template <typename Vec, DType kDtype>
ONNX_AMP_FEW_CHANNELS_TARGET inline typename Vec::Type Finish(const FewChannelsPooledRow& a, typename Vec::Type sum,
                                                              typename Vec::Type bias) {
  const auto value = Vec::template RoundTo<kDtype>(a.sums.bias_last ? Vec::Add(sum, bias) : sum);
  return a.relu ? Vec::Relu(value) : value;
}

// kPooled tiles of 2x2 pixels from pooled column `first`: both rows' 2 x kPooled sums side
// by side, each in SumPixels' order, then each tile's four pixels finished and pooled in
// MaxPool2x2RowChannelsLast's order (top left, top right, bottom left, bottom right).
template <typename Vec, DType kDtype, int kPooled>
ONNX_AMP_FEW_CHANNELS_TARGET inline void SumPooledTiles(const FewChannelsPooledRow& a, int64_t first) {
  constexpr int kPixels = 2 * kPooled;
  constexpr int64_t kLanes = Vec::kLanes;
  const FewChannelsRow& r = a.sums;
  typename Vec::Type top[kPixels], bottom[kPixels];
  const auto bias = Vec::Load(r.bias + r.block * kLanes);
  for (int p = 0; p < kPixels; ++p) top[p] = bottom[p] = r.bias_last ? Vec::Zero() : bias;
  const float* corner = r.corner + 2 * first * r.column_step;
  for (int64_t t = 0; t < r.taps; ++t) {
    const auto weight = Vec::Load(r.weights + t * r.maps + r.block * kLanes);
    const float* upper = corner + r.tap_offsets[t];
    const float* lower = upper + a.row_step;
#pragma GCC unroll 8
    for (int p = 0; p < kPixels; ++p) {
      top[p] = Vec::Fma(weight, Vec::Splat(upper[p * r.column_step]), top[p]);
      bottom[p] = Vec::Fma(weight, Vec::Splat(lower[p * r.column_step]), bottom[p]);
    }
  }
  for (int q = 0; q < kPooled; ++q) {
    auto max = Finish<Vec, kDtype>(a, top[2 * q], bias);
    max = TakeMaxLanes(Finish<Vec, kDtype>(a, top[2 * q + 1], bias), max);
    max = TakeMaxLanes(Finish<Vec, kDtype>(a, bottom[2 * q], bias), max);
    max = TakeMaxLanes(Finish<Vec, kDtype>(a, bottom[2 * q + 1], bias), max);
    Vec::template StoreExact<kDtype>(a.out, (first + q) * r.maps + r.block * kLanes, max);
  }
}

// A pooled row in tiles of kWidest (as many as the registers hold: 4 x kWidest sums), the
// rest in 2s and 1s.
template <typename Vec, DType kDtype, int kWidest>
ONNX_AMP_FEW_CHANNELS_TARGET void SumPooledRowOf(const FewChannelsPooledRow& a) {
  int64_t q = 0;
  for (; q + kWidest <= a.pooled_w; q += kWidest) SumPooledTiles<Vec, kDtype, kWidest>(a, q);
  if constexpr (kWidest > 2) {
    if (q + 2 <= a.pooled_w) {
      SumPooledTiles<Vec, kDtype, 2>(a, q);
      q += 2;
    }
  }
  if (q < a.pooled_w) SumPooledTiles<Vec, kDtype, 1>(a, q);
}

template <typename Vec, int kWidest>
void SumPooledRow(DType dtype, const FewChannelsPooledRow& a) {
  if (dtype == DType::kFloat32) return SumPooledRowOf<Vec, DType::kFloat32, kWidest>(a);
  if (dtype == DType::kFloat16) return SumPooledRowOf<Vec, DType::kFloat16, kWidest>(a);
  SumPooledRowOf<Vec, DType::kBFloat16, kWidest>(a);
}

}  // namespace
}  // namespace onnx_amp
