// ConvGrad's dW and dB for a float16/bfloat16 first layer: dX not wanted, X of a few
// channels (an image's 1 to 3), a 2-D window of at most kMaxWeightGradTaps weights per
// output map, dY stored channels-last with a multiple of 16 maps. oneDNN's
// backward-weights kernels read a low-precision dY only widened whole into float32 first
// (3.2 M elements for the bundled CNN's first layer at batch 256: that pass cost more
// than the gradient itself); this loop reads dY as stored, 16 maps to an AVX-512
// register, and adds each window tap's products into a register of its own. Sums are
// float32, over chunks of kWeightGradImages images whose partial sums are added in chunk
// order, so one thread and two give the same bits. The pads are read as zeros, so a
// non-finite dY beside the border makes a tap NaN where skipping the pad would leave it
// infinite: either way the gradient is not finite. float32 stays on oneDNN, which reads
// it as it is and was as fast.
#pragma once

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"
#include "ops/conv/window_geometry.h"

namespace onnx_amp {

inline constexpr int64_t kMaxWeightGradTaps = 27;  // 3 channels of a 3 x 3 window
inline constexpr int64_t kWeightGradImages = 4;

// Whether FewChannelsWeightGrad runs this problem on this CPU: X [N, C, H, W] and dY
// [N, M, OH, OW] both float16 or both bfloat16, group 1, C x KH x KW <=
// kMaxWeightGradTaps, M a multiple of 16, dY channels-last, AVX-512F.
bool TakesFewChannelsWeightGrad(const Tensor& dy, bool dy_channels_last, const Tensor& x, int64_t group,
                                const WindowGeometry& g);

// dW ([M, C, KH, KW], float32) and dB ([M], float32) of the convolution; X is read in
// NCHW or channels-last order (`x_channels_last`).
Status FewChannelsWeightGrad(KernelContext& context, const Tensor& dy, const Tensor& x, bool x_channels_last,
                             const WindowGeometry& g, float* dw, float* db);

}  // namespace onnx_amp
