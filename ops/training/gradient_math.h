// Per-element and per-step arithmetic of unscale-and-check and global-norm clipping,
// shared by the loss scaler, the CPU update ops and their CUDA counterparts, so that
// every path rounds the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/core/host_device.h"

namespace onnx_amp {

// Whether a float's exponent field is all ones (inf or NaN).
ONNX_AMP_HD bool IsNonFinite(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits & 0x7F800000u) == 0x7F800000u;
}

// The same test as a word whose top bit is set for inf and NaN (an all-ones exponent
// plus one carries into bit 31), for loops over many values: OR-ing these words
// compiles to vector instructions, while `found |= IsNonFinite(x)` stays one element
// at a time. AnyNonFinite reads the OR of them.
ONNX_AMP_HD uint32_t NonFiniteBit(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return (bits & 0x7F800000u) + 0x00800000u;
}
ONNX_AMP_HD bool AnyNonFinite(uint32_t ored_bits) { return (ored_bits >> 31) != 0; }

// 1/scale computed in double and rounded once, as PyTorch does; exact for powers of two.
ONNX_AMP_HD float InverseLossScale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

// The factor that turns gradients summed over `micro_batches` into their mean, scaled
// down so that the mean's global L2 norm is at most `max_norm` (0: no clipping).
// `sum_of_squares` is the double sum of the summed gradients' squares, in parameter
// order. Gradients are then multiplied by it in double and rounded once.
ONNX_AMP_HD double MeanClipFactor(double sum_of_squares, int64_t micro_batches, float max_norm) {
  double factor = 1.0 / static_cast<double>(micro_batches);
  if (max_norm > 0.0f) {
    const double norm = std::sqrt(sum_of_squares) * factor;
    if (norm > max_norm) factor *= max_norm / norm;
  }
  return factor;
}

}  // namespace onnx_amp
