// The mask of the first `count` of an AVX-512 register's 16 float lanes, for the loads
// and stores of a partial block. For x86-64 files that include <immintrin.h>.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace onnx_amp {

inline __mmask16 FirstLanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

}  // namespace onnx_amp
