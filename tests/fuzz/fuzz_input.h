// Draws structured values from a fuzz input, front to back; once the bytes run out every
// draw returns the low end of its range, so any input decodes to something.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace onnx_amp::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }

  // Uniform-ish in [lo, hi] (hi >= lo), from as few bytes as the range needs.
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    uint64_t value = 0;
    for (uint64_t covered = 0; covered < range && pos_ < size_; covered = covered << 8 | 0xFF) {
      value = value << 8 | data_[pos_++];
    }
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + (range == UINT64_MAX ? value : value % (range + 1)));
  }
  bool Bool() { return Int(0, 1) == 1; }
  template <typename T, size_t N>
  const T& Pick(const T (&options)[N]) {
    return options[Int(0, N - 1)];
  }
  // Four raw bytes as a float: NaNs, infinities and subnormals included.
  float Float() {
    uint32_t bits = static_cast<uint32_t>(Int(0, UINT32_MAX));
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  // Up to `max` bytes, the length drawn first.
  std::string_view Bytes(size_t max) {
    const size_t length = static_cast<size_t>(Int(0, static_cast<int64_t>(max)));
    const size_t take = length < remaining() ? length : remaining();
    const std::string_view out(reinterpret_cast<const char*>(data_ + pos_), take);
    pos_ += take;
    return out;
  }
  std::string_view Rest() {
    const std::string_view out(reinterpret_cast<const char*>(data_ + pos_), remaining());
    pos_ = size_;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace onnx_amp::fuzz
