// 2-D convolutions with few output pixels: ResNet's last stage at batch 1 has 4 x 4
// outputs per 512 channels over 9.4 MB of weights, so it is bound by reading the weights
// once, not by arithmetic. oneDNN's kernels read such weights about a quarter slower than
// this machine's caches and memory deliver them (ONNX Runtime's MLAS about a tenth).
// This path packs a node's constant weights once, in the order one pass reads them
// ([out_channels / 16][k][16], k running over (ky, kx, in_channel), in the weights' own
// dtype), gathers the input into im2col rows, and keeps every output pixel's 16 sums in
// registers while a block of weights streams past once, prefetched ahead (on AVX2, whose
// registers hold 6 pixels' sums, in tiles of pixels over runs of k kept in cache). Small
// convolutions of more pixels (kSmallConvMultiplyAdds) run tile by tile, 16 pixels at a
// time, each tile reading the weights again from cache: for them oneDNN's per-call cost,
// not the arithmetic, is what a run pays.
//
// Every sum accumulates in float32 in k order whichever thread computes it; float16 and
// bfloat16 operands are widened exactly first. Where a bfloat16 convolution takes the
// native kernels (bf16_kernel_choice.h: the CPU has AVX512_BF16 and it pays), it sums on
// VDPBF16PS instead, which does twice the multiply-adds of an FMA per instruction (the
// 512 -> 512 layers at 4 x 4 pixels are bound by the multiply-adds, not the weight reads,
// on a CPU that runs one AVX-512 FMA per cycle): k runs in pairs, each pair's odd term
// added before its even one, each product exact and each addition rounded as an FMA's,
// with bfloat16 subnormal operands read as zero and subnormal sums flushed to zero (the
// instruction's own rules); an odd k gets a zero last term. Bias, residual and activation
// follow as on oneDNN's path: ((sum + bias) + residual), then the activation, rounded once.
#pragma once

#include <cstdint>
#include <string>
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

// Convolutions of more pixels take the path too, in tiles of kFewPixelsMax pixels, while
// they are this small: their weights then fit in cache, so each tile reads them from
// there, and oneDNN's call costs more than its kernels save (a first run after a pause,
// on a bundled CNN's 16 -> 32 channels at 14 x 14 pixels: about 60 us against 13 us for
// the same call back to back).
inline constexpr double kSmallConvMultiplyAdds = 2e6;
// ... and while each output sums at least this many products: shorter sums (a first layer
// on 1 to 3 image channels) would not pay for a tile's set-up, and have loops of their
// own (few_channels_conv.h).
inline constexpr int64_t kSmallConvMinDepth = 32;

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
void FewPixelsAvx2(const FewPixelsArgs& args);    // few_pixels_avx2.cc

// The same on VDPBF16PS: k even, `rows` bfloat16 [pixels][k], `packed` bfloat16
// [blocks][k / 2][16][2] (each output channel's pair of weights side by side).
struct FewPixelsPairArgs {
  const uint16_t* rows = nullptr;
  int pixels = 0;
  int64_t k = 0;
  const uint16_t* packed = nullptr;
  int64_t block_begin = 0, block_end = 0;
  float* sums = nullptr;
  int64_t sums_stride = 0;
};
void FewPixelsAvx512Bf16(const FewPixelsPairArgs& args);  // few_pixels_avx512_bf16.cc

// Whether a bfloat16 convolution of `pixels` output pixels over `weights` weights sums
// on VDPBF16PS now (the CPU, ONNX_AMP_MAX_CPU_ISA and the bf16_kernel_choice.h setting).
bool FewPixelsSumsBf16Pairs(int64_t pixels, int64_t weights);

// What the path does on this CPU, for `onnx-amp --version`.
std::string DescribeFewPixelsConv();

// Whether the kernels run: on the path of the few-rows kernels, which stream weights the
// same way (few_rows_matmul.h: AVX-512, or AVX2 with FMA and F16C, as the CPU and
// ONNX_AMP_MAX_CPU_ISA allow, unless a test chose another); and whether ConvCpu takes
// them (tests turn it off to compare with oneDNN's path). SetFewPixelsConvEnabled returns
// the previous setting.
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

// The part of TakesFewPixels that depends on the size alone: `pixels` output pixels
// (batch x height x width), each channel's sum of `depth` products (k), `out_channels`.
bool FewPixelsSizeFits(int64_t pixels, int64_t depth, int64_t out_channels);

// Computes y = act(((conv + bias) + addend)) with `activation`, packing W on first use.
Status RunFewPixelsConv(KernelContext& context, const FewPixelsConv& conv, const FusedActivation& activation);

}  // namespace onnx_amp
