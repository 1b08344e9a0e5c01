#include "ops/common/column_sums.h"

#include <algorithm>
#include <cstring>

#include "ops/common/cpu_clones.h"
#include "runtime/core/convert.h"

namespace onnx_amp {

ONNX_AMP_CPU_CLONES void AddRowToSums(const float* row, float* sums, int64_t n) {
  for (int64_t i = 0; i < n; ++i) sums[i] += row[i];
}

// A bfloat16 value is the high half of its float32 bits.
ONNX_AMP_CPU_CLONES void AddRowToSums(const BFloat16* row, float* sums, int64_t n) {
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(row);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t wide = static_cast<uint32_t>(bits[i]) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof(value));
    sums[i] += value;
  }
}

void AddRowToSums(const Float16* row, float* sums, int64_t n) {
  constexpr int64_t kBlock = 1024;
  float widened[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t count = std::min(kBlock, n - i0);
    ConvertHalfToFloat(reinterpret_cast<const uint16_t*>(row + i0), widened, static_cast<size_t>(count));
    AddRowToSums(widened, sums + i0, count);
  }
}

}  // namespace onnx_amp
