// Boolean tensors read from files hold one byte per element; any byte other than 0 or 1
// would make every later bool load undefined behaviour, so readers reject it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

inline Status CheckBoolBytes(const void* data, size_t bytes, const std::string& label) {
  const uint8_t* raw = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    if (raw[i] > 1) return InvalidArgument(label + ": boolean array holds a byte other than 0 or 1");
  }
  return Status::Ok();
}

}  // namespace onnx_amp
