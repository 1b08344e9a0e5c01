// The sliding-window geometry shared by Conv, ConvTranspose and the pools: kernel
// size, strides, dilations and begin/end pads per spatial dim, resolved from the ONNX
// attributes (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv/window_taps.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

struct WindowGeometry {
  std::vector<int64_t> in;  // input spatial dims
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads_begin, pads_end;
  std::vector<int64_t> out;  // output spatial dims

  size_t rank() const { return in.size(); }
  // Extent of a dilated window: (k - 1) * d + 1.
  int64_t DilatedKernel(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// WalkWindowTaps (window_taps.h) over a WindowGeometry: visit(tap, offset) for each tap
// of the window at `out_index` inside the input; returns the taps inside the padded input.
template <typename Visit>
int64_t ForEachWindowTap(const WindowGeometry& g, const int64_t* out_index, Visit&& visit) {
  return WalkWindowTaps(g, static_cast<int>(g.rank()), out_index, visit);
}

// Geometry of a forward window (Conv, MaxPool, AveragePool, LpPool) over input spatial
// dims `in`. The kernel comes from kernel_shape, else `kernel_fallback` (Conv's weight
// dims). ceil_mode rounds the output size up but drops a last window that would start
// in the end padding, as ONNX Runtime and PyTorch do.
Expected<WindowGeometry> ForwardWindow(const KernelContext& context, const Shape& in,
                                       const std::vector<int64_t>& kernel_fallback, bool ceil_mode);

// Geometry of ConvTranspose: out = s * (in - 1) + output_padding + dilated kernel -
// pads, or pads derived from output_shape (auto_pad SAME_UPPER puts the odd pad at the
// end, otherwise at the beginning, as the ONNX reference does).
Expected<WindowGeometry> TransposedWindow(const KernelContext& context, const Shape& in,
                                          const std::vector<int64_t>& kernel);

}  // namespace onnx_amp
