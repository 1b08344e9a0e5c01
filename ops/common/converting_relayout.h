// Moves an [N, C, spatial...] activation between a float16/bfloat16 tensor and a
// float32 one in the layout a oneDNN primitive computes on, converting on the way: one
// pass where a widening (or rounding) pass and oneDNN's reorder took two (the bundled
// CNN's mixed_bfloat16 training step went from 17.5 to 16.2 ms).
//
// Two cases run in one pass:
// - both sides stored in the same order (a plain conversion), and
// - a row-major low-precision side against a float32 side holding 16 consecutive
//   channels of a pixel together (oneDNN's nChw16c and its 1-D and 3-D kin, or
//   channels-last with C a multiple of 16): blocks of 16 channels are converted row by
//   row and transposed in registers (AVX-512 only).
// Widening is exact and rounding goes through runtime/core/convert.h, so the bits are
// those of the two passes.
#pragma once

#include <cstdint>

#include <dnnl.hpp>

namespace onnx_amp::dnn {

// Whether ConvertBetween moves `from` into `to`: the same dims, one side float32 and the
// other float16/bfloat16, in one of the two cases above.
bool ConvertsBetween(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

// Converts `from_data` (described by `from`) into `to_data` (described by `to`) on up to
// `threads` threads. ConvertsBetween(from, to) must hold.
void ConvertBetween(const dnnl::memory::desc& from, const void* from_data, const dnnl::memory::desc& to,
                    void* to_data, int threads);

// The 16 x 16 transposes of the second case, on AVX-512 (converting_relayout_avx512.cc):
// out[j * out_stride + i] = in[i * in_stride + j], for i < 16 and j < count
// (RowsToPixels: 16 channel rows of `count` pixels into `count` pixel groups of 16), and
// for i < count and j < 16 (PixelsToRows, the way back).
bool TransposesSupported();
void RowsToPixels16(const float* in, int64_t in_stride, int64_t count, float* out, int64_t out_stride);
void PixelsToRows16(const float* in, int64_t in_stride, int64_t count, float* out, int64_t out_stride);
// PixelsToRows16 on 16-bit values (float16/bfloat16 bits), moved as they are.
void PixelsToRows16Bits(const uint16_t* in, int64_t in_stride, int64_t count, uint16_t* out, int64_t out_stride);

}  // namespace onnx_amp::dnn
