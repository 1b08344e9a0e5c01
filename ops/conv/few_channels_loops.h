// The vector loops behind few_channels_conv.h, one copy per instruction set
// (few_channels_avx512.cc, few_channels_avx2.cc, both from few_channels_kernels.h), and
// what they are handed. A block of maps is one register of float32 lanes: 16 maps on
// AVX-512, 8 on AVX2.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"

namespace onnx_amp {

// One output row of one block of maps (the forward): Y's float32 sums for the row's
// pixels.
struct FewChannelsRow {
  const float* corner = nullptr;  // the row's first window corner in the padded X
  const int64_t* tap_offsets = nullptr;  // of each tap's input, from a window's corner
  const float* weights = nullptr;  // [taps, M]
  const float* bias = nullptr;     // [M]
  bool bias_last = false;  // sums start from zero and take the bias last (else first)
  int64_t taps = 0, maps = 0, block = 0, out_w = 0, column_step = 0;
  float* row = nullptr;  // [OW, M]
};

// One row of 2x2 stride-2 max-pooled outputs of one block of maps (the forward, pooled):
// the sums of two output rows, each pixel's as FewChannelsRow gives it, rounded to Y's
// dtype, through Relu when `relu`, and pooled in registers, with the bits of storing both
// rows, applying Relu and pooling them (MaxPool2x2RowChannelsLast).
struct FewChannelsPooledRow {
  FewChannelsRow sums;  // `corner` that of the top output row; `row` unused
  int64_t row_step = 0;  // floats in the padded X between the corners of the two rows
  int64_t pooled_w = 0;
  bool relu = false;
  void* out = nullptr;  // [pooled_w, M] of Y's dtype
};

// One image's share of one block of maps (the weights gradient): its window sums are
// added onto `sums` (taps x lanes floats, then lanes for dB).
struct FewChannelsImage {
  const void* dy = nullptr;  // the image's dY, [OH, OW, M]
  int64_t maps = 0, block = 0;
  const float* x = nullptr;  // the image's X, widened into [C, PH, PW] with zero pads
  const int64_t* tap_offsets = nullptr;
  int64_t out_h = 0, out_w = 0;
  // Floats in x between the window corners of neighbouring output rows (stride x PW) and
  // columns (stride).
  int64_t row_step = 0, column_step = 0;
  float* sums = nullptr;
};

// Maps per block: float32 lanes of a register.
inline constexpr int64_t kFewChannelsLanesAvx512 = 16;
inline constexpr int64_t kFewChannelsLanesAvx2 = 8;

void FewChannelsSumRowAvx512(const FewChannelsRow& a);
void FewChannelsSumPooledRowAvx512(DType dtype, const FewChannelsPooledRow& a);
void FewChannelsAddImageAvx512(DType dtype, const FewChannelsImage& a, int64_t taps);
void FewChannelsSumRowAvx2(const FewChannelsRow& a);
void FewChannelsSumPooledRowAvx2(DType dtype, const FewChannelsPooledRow& a);
void FewChannelsAddImageAvx2(DType dtype, const FewChannelsImage& a, int64_t taps);

}  // namespace onnx_amp
