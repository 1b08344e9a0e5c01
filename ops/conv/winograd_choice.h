// Which convolutions take oneDNN's Winograd kernels (F(4x4, 3x3) and F(2x2, 3x3) on
// AVX-512): 2-D 3x3 stride-1 convolutions of many channels on float32 operands
// (float32, or float16/bfloat16 widened exactly), forward (conv.cc) and backward
// (conv_grad_cpu.cc). Fixed by the shape, never timed, so a model gives the same bits
// from run to run. Where oneDNN has no such kernel (CPUs without AVX-512) the callers
// fall back to the direct ones.
#pragma once

#include <cstdint>
#include <string>

#include "ops/conv/window_geometry.h"

namespace onnx_amp {

// Whether a convolution of this shape takes the Winograd kernels, unless turned off.
bool WinogradApplies(int64_t in_channels, int64_t out_channels, int64_t group, const WindowGeometry& g);

// Whether oneDNN has Winograd kernels on this CPU (asked once, by building one).
bool WinogradKernelsAvailable();

// One line for `onnx-amp --version`: which kernels those convolutions take here, and why.
std::string DescribeWinograd();

// On by default, off with ONNX_AMP_CONV_WINOGRAD=0. The setter returns the previous value
// (for tests).
bool ConvUsesWinograd();
bool SetConvUsesWinograd(bool use);

}  // namespace onnx_amp
