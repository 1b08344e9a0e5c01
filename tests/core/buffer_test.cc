// CPU buffers: every one is 64-byte aligned (AVX-512 loads, oneDNN), a large one starts on
// a 2 MiB boundary so that it can sit on huge pages (unless ONNX_AMP_HUGE_PAGES=0), and a
// ScratchBuffer keeps its memory until a larger request replaces it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "runtime/core/scratch_buffer.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {
namespace {

uintptr_t Address(const void* data) { return reinterpret_cast<uintptr_t>(data); }

// ONNX_AMP_HUGE_PAGES=0 turns the 2 MiB placement off.
bool HugePagesOff() {
  const char* value = std::getenv("ONNX_AMP_HUGE_PAGES");
  return value != nullptr && std::string_view(value) == "0";
}

TEST(BufferTest, SmallBuffersAre64ByteAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, size_t{3} << 20}) {
    auto buffer = Buffer::AllocateCpu(bytes);
    EXPECT_EQ(Address(buffer->data()) % 64, 0u) << bytes;
    EXPECT_EQ(buffer->bytes(), bytes);
  }
}

TEST(BufferTest, LargeBuffersStartOnA2MiBBoundaryAndAreWholeToTheirEnd) {
  constexpr size_t kBytes = (size_t{5} << 20) + 123;
  auto buffer = Buffer::AllocateCpu(kBytes);
  EXPECT_EQ(Address(buffer->data()) % (HugePagesOff() ? 64 : size_t{2} << 20), 0u);
  EXPECT_EQ(buffer->bytes(), kBytes);
  // Every byte is usable (the sanitizer build catches a short allocation).
  std::memset(buffer->data(), 0x5a, kBytes);
  EXPECT_EQ(static_cast<unsigned char*>(buffer->data())[kBytes - 1], 0x5a);
}

TEST(ScratchBufferTest, KeepsItsMemoryForSmallerRequestsAndGrowsForLarger) {
  ScratchBuffer scratch;
  char* first = scratch.Reserve(1000);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, 1000);
  EXPECT_EQ(scratch.Reserve(10), first);
  EXPECT_EQ(scratch.Reserve(1000), first);
  EXPECT_EQ(first[999], 1);  // a request it already covers leaves the contents alone
  char* grown = scratch.Reserve(size_t{5} << 20);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(Address(grown) % (HugePagesOff() ? 64 : size_t{2} << 20), 0u);
  std::memset(grown, 2, size_t{5} << 20);
  EXPECT_EQ(scratch.Reserve(4096), grown);
}

}  // namespace
}  // namespace onnx_amp
