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

}  // namespace
}  // namespace onnx_amp
