// 2-D convolutions with few output pixels: ResNet's last stage at batch 1 has 4 x 4
// outputs per 512 channels over 9.4 MB of weights, so it is bound by reading the weights
// once, not by arithmetic. oneDNN's kernels read such weights about a quarter slower than
// this machine's caches and memory deliver them (ONNX Runtime's MLAS about a tenth).
// This path packs a node's constant weights once, in the order one pass reads them
// ([out_channels / 16][k][16], k running over (ky, kx, in_channel), in the weights' own
// dtype), gathers the input into im2col rows, and keeps every output pixel's 16 sums in
// registers while a block of weights streams past once, prefetched ahead.
//
// Every sum accumulates in float32 in k order whichever thread computes it; float16 and
// bfloat16 operands are widened exactly first. Bias, residual and activation follow as
// on oneDNN's path: ((sum + bias) + residual), then the activation, rounded once.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv/window_geometry.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// Output pixels (batch x output height x output width) one weight pass serves at most:
// one vector of sums per pixel stays in a register. With more pixels oneDNN's blocked
// kernels reuse each weight enough to win (measured at 64 pixels).
inline constexpr int64_t kFewPixelsMax = 16;

// One kernel call: sums[i][16 * b + j] = sum over kk of rows[i][kk] * block b's weight
// (kk, j), for pixels i < pixels and blocks b in [block_begin, block_end).
struct FewPixelsArgs {
  const float* rows = nullptr;  // [pixels][k]
  int pixels = 0;
  int64_t k = 0;
  const void* packed = nullptr;  // [blocks][k][16] of w_dtype
  DType w_dtype = DType::kFloat32;
  int64_t block_begin = 0, block_end = 0;
  float* sums = nullptr;  // [pixels][sums_stride]
  int64_t sums_stride = 0;
};
void FewPixelsAvx512(const FewPixelsArgs& args);  // few_pixels_avx512.cc

// Whether the CPU runs the kernel (AVX-512 F), and whether ConvCpu takes it (tests turn
// it off to compare with oneDNN's path). SetFewPixelsConvEnabled returns the previous
// setting.
bool FewPixelsConvSupported();
bool FewPixelsConvEnabled();
bool SetFewPixelsConvEnabled(bool enabled);

// A convolution the path may take: ConvCpu's operands, already checked against each
// other. Layout flags say which tensors are stored channels-last.
struct FewPixelsConv {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;  // constant: packed once per node
  std::vector<float> bias;    // empty: none
  const Tensor* addend = nullptr;
  Tensor* y = nullptr;
  bool x_channels_last = false, y_channels_last = false, addend_channels_last = false;
  int64_t group = 1;
  const WindowGeometry* window = nullptr;
};

bool TakesFewPixels(KernelContext& context, const FewPixelsConv& conv);

// Computes y = act(((conv + bias) + addend)) with `activation`, packing W on first use.
Status RunFewPixelsConv(KernelContext& context, const FewPixelsConv& conv, const FusedActivation& activation);

}  // namespace onnx_amp
