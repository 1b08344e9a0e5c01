// The sliding-window geometry shared by Conv, ConvTranspose and the pools: kernel
// size, strides, dilations and begin/end pads per spatial dim, resolved from the ONNX
// attributes (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode).
#pragma once

#include <cstdint>
#include <vector>

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

// Walks the taps of the window at output position `out_index` (one index per spatial
// dim) in row-major kernel order, calling visit(tap, offset) for each tap inside the
// input with its row-major offset within an input plane. Returns how many taps lie
// inside the padded input (AveragePool's divisor with count_include_pad).
template <typename Visit>
int64_t ForEachWindowTap(const WindowGeometry& g, const int64_t* out_index, Visit&& visit) {
  const size_t rank = g.rank();
  int64_t kernel_size = 1;
  for (size_t i = 0; i < rank; ++i) kernel_size *= g.kernel[i];
  int64_t padded_taps = 0;
  for (int64_t k = 0; k < kernel_size; ++k) {
    int64_t offset = 0, rest = k;
    bool inside = true, inside_padded = true;
    int64_t divisor = kernel_size;
    for (size_t i = 0; i < rank; ++i) {
      divisor /= g.kernel[i];
      const int64_t k_i = rest / divisor;
      rest %= divisor;
      const int64_t pos = out_index[i] * g.strides[i] - g.pads_begin[i] + k_i * g.dilations[i];
      inside = inside && pos >= 0 && pos < g.in[i];
      inside_padded = inside_padded && pos >= -g.pads_begin[i] && pos < g.in[i] + g.pads_end[i];
      offset = offset * g.in[i] + pos;
    }
    padded_taps += inside_padded ? 1 : 0;
    if (inside) visit(k, offset);
  }
  return padded_taps;
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
