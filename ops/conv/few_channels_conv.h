// A first layer's convolution and weights gradient on loops of their own: X of a few
// channels (an image's 1 to 3; at most kMaxFewChannels), a 2-D window of at most
// kMaxFewChannelsTaps weights per output map (C x KH x KW), Y and dY stored channels-last
// with a multiple of 16 maps. oneDNN's kernels take such a layer only in float32, so its
// float16/bfloat16 activations used to be converted whole on the way: the forward's Y
// (3.2 M elements for the bundled CNN's first layer at batch 256) rounded out of a
// float32 copy, and dY widened into one for the weights gradient, each pass costing more
// than the layer's arithmetic. These loops read dY and write Y as stored, a block of maps
// to a register (16 on AVX-512, 8 on AVX2; few_channels_loops.h): the forward sums 8
// pixels side by side, the weights gradient keeps one register per window weight. Sums
// are float32. The forward's run in the order of oneDNN's direct kernel for the path's
// instruction set (few_channels_conv.cc, SumsBiasLast), so a plan that runs the layer on
// oneDNN (Y in NCHW) gets the same float32 sums; the weights gradient's are the same on
// either path.
//
// float32 takes the loops on AVX2: oneDNN's AVX2 kernels for such a layer are slow (the
// bundled CNN's float32 step at batch 256 with oneDNN held to AVX2: ConvGrad 12.7 -> 7.4
// ms, Conv 4.8 -> 4.3 ms, the step 23.4 -> 17.1 ms on the loops). Its AVX-512 ones were as
// fast as the loops (step 10.1-10.7 against 10.7-11.5 ms), so there float32 takes the
// loops only where they also pool Y (FewChannelsConvPoolsOutput). Larger windows stay on
// oneDNN too (ResNet's 7 x 7 stem on 3 channels ran no faster on the forward loop than on
// oneDNN with its conversions).
//
// Both read X widened into an image-sized buffer whose pads are zeros, so a non-finite
// value beside the border makes a sum NaN where skipping the pad would leave it infinite:
// either way the result is not finite.
#pragma once

#include <string>

#include "ops/common/fused_activation.h"
#include "ops/conv/window_geometry.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

inline constexpr int64_t kMaxFewChannels = 4;
inline constexpr int64_t kMaxFewChannelsTaps = 27;  // 3 channels of a 3 x 3 window
// AVX2's 16 registers hold 12 weights' sums beside dY's block, its splat and dB's sums.
inline constexpr int64_t kMaxFewChannelsTapsAvx2 = 12;

// The loops' instruction sets; kNone where the CPU has neither.
enum class FewChannelsPath { kNone, kAvx2, kAvx512 };
bool FewChannelsPathSupported(FewChannelsPath path);

// The path the loops take: the widest the CPU has, unless SetFewChannelsPath chose
// another (tests run each path the CPU has). Returns the previous choice.
FewChannelsPath CurrentFewChannelsPath();
FewChannelsPath SetFewChannelsPath(FewChannelsPath path);

// What the current path does, for `onnx-amp --version`.
std::string DescribeFewChannelsConv();

// Whether these loops take a convolution of X [N, C, H, W] with W [M, C, KH, KW] into
// [N, M, OH, OW] (not pooled) on the current path: X and the weights both float16 or both
// bfloat16 (or float32, on AVX2), group 1, C <= kMaxFewChannels, C x KH x KW <= kMaxFewChannelsTaps (on AVX2
// kMaxFewChannelsTapsAvx2), M a multiple of 16, the M-channel side (Y, or dY) stored
// channels-last.
bool TakesFewChannelsConv(DType dtype, const Shape& x, const Shape& w, int64_t group, bool maps_channels_last,
                          const WindowGeometry& g);

// Whether the loops take such a convolution with constant weights `w` and `group` when
// they also pool its output (FewChannelsConv's `pooled`), for KernelDef::pools_output: as
// TakesFewChannelsConv with Y channels-last, and float32 on AVX-512 too, where oneDNN
// would write the whole Y for a separate pool to read back (the bundled CNN's float32
// inference at batch 1: 0.195 -> 0.152 ms a run after a pause, at batch 32 0.79 -> 0.76).
bool FewChannelsConvPoolsOutput(const Tensor& w, int64_t group);

// Y (channels-last, X's dtype) = round(B + the window sums), then `activation` on the
// rounded values as the separate node would apply it. X is read in NCHW or channels-last
// order (`x_channels_last`); `bias` has M floats or is null. With `pooled`, Y is instead
// the 2x2 stride-2 max pool of those values ([N, M, OH / 2, OW / 2], the MaxPool's bits):
// each pair of rows is pooled as it is computed, and the rows are never stored; with no
// activation or a Relu, the sums are rounded, pooled and stored from registers (the
// bundled CNN's first layer at batch 32 in bfloat16: 0.145-0.169 -> 0.095-0.113 ms a run).
Status FewChannelsConv(KernelContext& context, const Tensor& x, bool x_channels_last, const Tensor& w,
                       const float* bias, const WindowGeometry& g, const FusedActivation& activation, bool pooled,
                       Tensor& y);

// Images per chunk of the weights gradient: each chunk's partial sums are added in chunk
// order, so one thread and two give the same bits.
inline constexpr int64_t kWeightGradImages = 4;

// ConvGrad's dW ([M, C, KH, KW], float32) and dB ([M], float32) when dX is not wanted:
// dY channels-last, X in NCHW or channels-last order (`x_channels_last`).
Status FewChannelsWeightGrad(KernelContext& context, const Tensor& dy, const Tensor& x, bool x_channels_last,
                             const WindowGeometry& g, float* dw, float* db);

}  // namespace onnx_amp
