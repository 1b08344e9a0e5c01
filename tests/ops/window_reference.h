// The output geometry of a window op (Conv, the pools) per spatial dim, derived here from
// the ONNX spec's formulas for the tests' references (conv_test.cc, pool_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/tensor.h"

namespace onnx_amp::testing {

struct Geometry {
  std::vector<int64_t> in, k, s, d, pb, out;
};

inline Geometry Resolve(const Shape& in, const std::vector<int64_t>& kernel, std::vector<int64_t> strides,
                        std::vector<int64_t> dilations, std::vector<int64_t> pads, const std::string& auto_pad,
                        bool ceil_mode = false) {
  const size_t r = in.size();
  if (strides.empty()) strides.assign(r, 1);
  if (dilations.empty()) dilations.assign(r, 1);
  if (pads.empty()) pads.assign(2 * r, 0);
  Geometry g{in, kernel, strides, dilations, std::vector<int64_t>(r), std::vector<int64_t>(r)};
  for (size_t i = 0; i < r; ++i) {
    const int64_t dk = (kernel[i] - 1) * dilations[i] + 1;
    int64_t pb = pads[i], pe = pads[i + r];
    if (auto_pad == "VALID") pb = pe = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in[i] + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + dk - in[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    }
    const double span = static_cast<double>(in[i] + pb + pe - dk) / strides[i];
    int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (ceil_mode && (out - 1) * strides[i] >= in[i] + pb) --out;
    g.pb[i] = pb;
    g.out[i] = out;
  }
  return g;
}

}  // namespace onnx_amp::testing
