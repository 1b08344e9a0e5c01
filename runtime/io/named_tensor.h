// A tensor with the name it carries in a file (an .npz entry, a TensorProto's name).
#pragma once

#include <string>

#include "runtime/core/tensor.h"

namespace onnx_amp {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace onnx_amp
