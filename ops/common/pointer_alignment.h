// The alignment a set of device pointers shares, which decides the GEMM and convolution
// algorithms that may run on them (vectorised loads need 16-byte alignment).
#pragma once

#include <cstdint>
#include <initializer_list>

namespace onnx_amp {

// The largest of 16, 8, 4, 2, 1 that divides every address.
inline int CommonAlignment(std::initializer_list<const void*> pointers) {
  uintptr_t bits = 0;
  for (const void* pointer : pointers) bits |= reinterpret_cast<uintptr_t>(pointer);
  for (int alignment : {16, 8, 4, 2}) {
    if (bits % static_cast<uintptr_t>(alignment) == 0) return alignment;
  }
  return 1;
}

}  // namespace onnx_amp
