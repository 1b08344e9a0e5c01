#include "runtime/core/limits.h"

#include <unistd.h>

#include <charconv>

namespace onnx_amp {

Expected<int64_t> CheckedElementCount(std::span<const int64_t> dims, std::string_view what) {
  if (static_cast<int64_t>(dims.size()) > kMaxTensorRank) {
    return InvalidArgument(std::string(what) + ": rank " + std::to_string(dims.size()) + " exceeds the limit of " +
                           std::to_string(kMaxTensorRank));
  }
  int64_t count = 1;
  for (const int64_t d : dims) {
    if (d < 0) return InvalidArgument(std::string(what) + ": negative dimension " + std::to_string(d));
    if (d > kMaxTensorElements) {
      return InvalidArgument(std::string(what) + ": dimension " + std::to_string(d) + " is too large");
    }
    if (d > 0 && count > kMaxTensorElements / d) {
      return InvalidArgument(std::string(what) + ": more than " + std::to_string(kMaxTensorElements) + " elements");
    }
    count *= d;
  }
  return count;
}

size_t PhysicalMemoryBytes() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return SIZE_MAX;
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }();
  return bytes;
}

Status CheckMemoryCap(size_t bytes, size_t cap, const std::string& what, const std::string& cap_name) {
  if (bytes <= cap) return Status::Ok();
  return Unsupported(what + " needs " + std::to_string(bytes) + " bytes, more than the " + std::to_string(cap) +
                     " bytes " + cap_name + " allows");
}

Expected<size_t> ParseByteSize(const std::string& text, const std::string& flag) {
  const Status bad = InvalidArgument(flag + " '" + text + "': expected a byte count such as 4096, 512M or 8G");
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr == text.data()) return bad;
  int shift = 0;
  if (ptr != end) {
    if (ptr + 1 != end) return bad;
    switch (*ptr) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: return bad;
    }
  }
  if (value == 0 || value > (UINT64_MAX >> shift)) return bad;
  return static_cast<size_t>(value << shift);
}

}  // namespace onnx_amp
