#include "converter/paint_seeds.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <onnx/onnx_pb.h>

namespace onnx_amp {
namespace {

constexpr int32_t kInfBits = 0x7F800000;

// The float's bits without the sign: non-negative as int32.
int32_t MagnitudeBits(const float* values, size_t i) {
  int32_t bits = 0;
  std::memcpy(&bits, values + i, sizeof(bits));
  return bits & 0x7FFFFFFF;
}

// For non-NaN floats the order of the magnitude bits is the order of the magnitudes,
// and NaNs order above them all: both are integer reductions, one loop each so that
// the AVX2 clone vectorizes them.
__attribute__((target_clones("avx2", "default"))) void ReduceMagnitudes(const float* values, size_t count,
                                                                        int32_t& largest_out,
                                                                        uint32_t& smallest_minus_one_out) {
  int32_t largest = largest_out;
  for (size_t i = 0; i < count; ++i) {
    const int32_t magnitude = MagnitudeBits(values, i);
    largest = std::max(largest, magnitude < kInfBits ? magnitude : 0);
  }
  uint32_t smallest_minus_one = smallest_minus_one_out;  // zero wraps to the top
  for (size_t i = 0; i < count; ++i) {
    smallest_minus_one = std::min(smallest_minus_one, static_cast<uint32_t>(MagnitudeBits(values, i)) - 1u);
  }
  largest_out = largest;
  smallest_minus_one_out = smallest_minus_one;
}

}  // namespace

void MagnitudeSummary::Add(const float* values, size_t count) {
  size_t i = 0;
  for (; !first_seen_ && i < count; ++i) {  // the first non-zero value decides about NaN
    const int32_t magnitude = MagnitudeBits(values, i);
    if (magnitude == 0) continue;
    first_seen_ = true;
    first_is_nan_ = magnitude > kInfBits;
    break;  // and counts below
  }
  ReduceMagnitudes(values + i, count - i, largest_, smallest_minus_one_);
}

void MagnitudeSummary::AddBytes(const char* data, size_t size) {
  constexpr size_t kChunk = 4096;
  float buffer[kChunk];
  for (size_t count = size / sizeof(float); count > 0;) {
    const size_t n = std::min(count, kChunk);
    std::memcpy(buffer, data, n * sizeof(float));
    Add(buffer, n);
    data += n * sizeof(float);
    count -= n;
  }
}

ValueSummary MagnitudeSummary::Summary() const {
  ValueSummary summary;
  if (first_is_nan_) {
    summary.smallest_nonzero = std::numeric_limits<float>::quiet_NaN();
  } else if (smallest_minus_one_ != UINT32_MAX) {  // else all are zero
    const uint32_t bits = smallest_minus_one_ + 1;
    std::memcpy(&summary.smallest_nonzero, &bits, sizeof(float));
  }
  std::memcpy(&summary.largest_finite, &largest_, sizeof(float));
  return summary;
}

ValueSummary SummarizeFloatTensor(const onnx::TensorProto& tensor) {
  MagnitudeSummary summary;
  const std::string& raw = tensor.raw_data();
  if (!raw.empty() && raw.size() % sizeof(float) == 0) {
    summary.AddBytes(raw.data(), raw.size());
  } else {
    summary.Add(tensor.float_data().data(), static_cast<size_t>(tensor.float_data_size()));
  }
  return summary.Summary();
}

ValueSummary SummarizeFloatAttribute(const onnx::AttributeProto& attr) {
  MagnitudeSummary summary;
  if (attr.name() == "value_floats") {
    summary.Add(attr.floats().data(), static_cast<size_t>(attr.floats_size()));
  } else {
    const float value = attr.f();
    summary.Add(&value, 1);
  }
  return summary.Summary();
}

}  // namespace onnx_amp
