// What selects a cuDNN convolution execution plan, host-only so that the CPU tests
// cover it: direction, dtype, the input and filter dims, the window geometry, the
// filter groups, TF32 and the pointer alignment. The key of the per-device plan cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx_amp {

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

struct ConvKey {
  ConvDirection direction = ConvDirection::kForward;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> x_dims;  // [N, C, spatial...]
  std::vector<int64_t> w_dims;  // [M, C / group, kernel...]
  std::vector<int64_t> y_dims;  // [N, M, out...]
  std::vector<int64_t> pads_begin, pads_end, strides, dilations;
  bool tf32 = false;
  int alignment = 16;

  bool operator==(const ConvKey& other) const;
  std::string ToString() const;
};

struct ConvKeyHash {
  size_t operator()(const ConvKey& key) const;
};

}  // namespace onnx_amp
