// The tap walk of one sliding window, shared by the CPU kernels (WindowGeometry,
// window_geometry.h) and the CUDA kernels (CudaWindow, conv_cuda.h): both geometries
// index kernel, strides, dilations, pads_begin, pads_end and in by spatial dim. Kept free
// of host-only headers so that nvcc compiles it too.
#pragma once

#include <cstdint>

#include "runtime/core/host_device.h"

namespace onnx_amp {

// Walks the taps of the window at output position `out_index` (one index per spatial
// dim, `rank` dims) in row-major kernel order, calling visit(tap, offset) for each tap
// inside the input with its row-major offset within an input plane. Returns how many
// taps lie inside the padded input (AveragePool's divisor with count_include_pad).
template <typename Geometry, typename Visit>
ONNX_AMP_HD int64_t WalkWindowTaps(const Geometry& g, int rank, const int64_t* out_index, Visit&& visit) {
  int64_t kernel_size = 1;
  for (int i = 0; i < rank; ++i) kernel_size *= g.kernel[i];
  int64_t padded_taps = 0;
  for (int64_t k = 0; k < kernel_size; ++k) {
    int64_t offset = 0, rest = k;
    bool inside = true, inside_padded = true;
    int64_t divisor = kernel_size;
    for (int i = 0; i < rank; ++i) {
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

}  // namespace onnx_amp
