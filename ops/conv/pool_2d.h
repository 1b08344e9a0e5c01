// The 2-D MaxPool / AveragePool of CNNs (no dilation, no Indices output) as direct loops
// over each window's clipped rectangle. pool.cc's general walker decodes every tap's
// position with divisions, which made a 2x2 max pool most of a batch-1 CNN run. Taps
// are visited in the same row-major order and summed in the same order, so every
// output is bit-identical to the general path's.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv/window_geometry.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// Outputs per parallel chunk of the pools: waking a thread for less costs more than it saves.
inline constexpr int64_t kPoolOutputsPerChunk = int64_t{1} << 14;

// Whether Pool2d takes this window (rank 2, every dilation 1).
bool Pool2dApplies(const WindowGeometry& g);

// Max (NaN wins, the first of equal values kept) or average (divided by the taps inside
// the input, or inside the padded input with count_include_pad) of each window of a
// float32, float16 or bfloat16 X [N, C, H, W] into Y [N, C, OH, OW], rounded once.
Status Pool2d(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool max, bool count_include_pad,
              Tensor& y);

// The same max for a float32, float16 or bfloat16 X stored channels-last ([N, H, W, C]
// in memory), into Y stored channels-last or NCHW, as the same bits: the rule runs
// across a tap's contiguous channels.
Status MaxPool2dChannelsLast(KernelContext& context, const Tensor& x, const WindowGeometry& g, bool y_channels_last,
                             Tensor& y);

// One output row of a 2x2 stride-2 max pool of channels-last rows: `top` and `bottom`
// ([2 * out_w or more, C] each, float32, float16 or bfloat16 as `dtype`) into `out`
// ([out_w, C], the same dtype), the bits MaxPool2dChannelsLast gives. On the AVX-512
// kernels (`avx512`, which needs AVX-512F) or the AVX2 ones (PoolsRunAvx2) where C is a
// whole number of their blocks (float16/bfloat16 on AVX-512: 16; on AVX2: 8), the
// portable rule otherwise. For a kernel that pools its own output (a first layer's conv).
void MaxPool2x2RowChannelsLast(DType dtype, bool avx512, const void* top, const void* bottom, int64_t out_w,
                               int64_t channels, void* out);

// MaxPoolGrad of a 2-D pool without dilation (Pool2dApplies) for X and dX stored
// channels-last ([N, H, W, C] in memory), dY channels-last or NCHW as `dy_channels_last`
// says, dX multiplied by the Relu's slope at X with `relu_slope` (a folded ReluGrad):
// the bits of the NCHW kernels (max_pool_grad_channels_last.cc).
Status MaxPoolGradChannelsLast(KernelContext& context, const Tensor& dy, bool dy_channels_last, const Tensor& x,
                               const WindowGeometry& g, bool relu_slope, Tensor& dx);

// The taps [begin, end) of an output along one axis that lie inside the input, and how
// many lie inside the padded input.
struct TapRange {
  int64_t begin, end, padded;
};

// The windows of a plane, the same for every plane: tap ranges per output row and
// column, and the columns [interior_begin, interior_end) whose windows lie wholly inside
// the input's width, which run as strided passes over a row of outputs (vectorised).
struct PlaneWindows {
  std::vector<TapRange> rows, cols;
  int64_t interior_begin = 0, interior_end = 0;
};

PlaneWindows ResolveWindows(const WindowGeometry& g);

// Whether Pool2d takes the windows and they are 2x2 at stride 2 without padding,
// tiling the plane exactly: the max pools of CNNs, which run on kernels of their own.
bool Tiles2x2(const WindowGeometry& g);

// Whether the max pools that Tiles2x2 (forward, channels-last, and gradient) run on
// AVX-512 kernels: where the CPU has AVX-512F, unless a test turned them off to run the
// portable loops other CPUs take. Setting true needs AVX-512F; returns the previous value.
bool Pool2x2UsesAvx512();
bool SetPool2x2UsesAvx512(bool use);

// dX of such a max pool for one float32 plane x: each dY at the tap Pool2d's max picks,
// zeros at the other three (every element of dx is written). With `relu_slope` (x is a
// Relu's output, its ReluGrad folded in) each dY is first multiplied by ReluSlope of the
// picked value: ReluGrad's numbers, since the other taps' zeros stay zeros.
void MaxPool2x2GradPlane(const float* x, const float* dy, const WindowGeometry& g, bool relu_slope, float* dx);

// The offset within the plane of the tap Pool2d's max picks for each output of a float32
// plane x (-1 for a window with no tap inside the input), for MaxPoolGrad; `p` is
// ResolveWindows(g). Planes of fewer than 2^31 elements only.
void MaxPool2dArgmax(const float* x, const WindowGeometry& g, const PlaneWindows& p, int64_t* argmax);

}  // namespace onnx_amp
