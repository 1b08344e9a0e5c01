// FixHeapThresholds: after it, blocks of a MiB and more are mapped on their own however
// large a block was freed before (glibc's default would raise its threshold to that
// block's size and serve the next ones from the heap, which keeps freed space).
#include "runtime/exec/host_heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onnx_amp {
namespace {

#if defined(__GLIBC__)
// Bytes glibc holds in separately mapped blocks.
size_t MappedBytes() { return mallinfo2().hblkhd; }

// Allocates `bytes`, touches them, and returns how much the mapped bytes grew meanwhile.
size_t MappedGrowthOf(size_t bytes) {
  const size_t before = MappedBytes();
  void* block = std::malloc(bytes);
  std::memset(block, 1, bytes);
  asm volatile("" : : "r"(block) : "memory");  // keeps the compiler from eliding the block
  const size_t growth = MappedBytes() - before;
  std::free(block);
  return growth;
}
#endif

TEST(HostHeapTest, LargeBlocksStayMappedAfterALargerOneIsFreed) {
  if (!FixHeapThresholds()) GTEST_SKIP() << "the C library is not glibc's heap (or AddressSanitizer replaces it)";
#if defined(__GLIBC__)
  constexpr size_t kMiB = size_t{1} << 20;
  EXPECT_GE(MappedGrowthOf(16 * kMiB), 16 * kMiB);
  // glibc's dynamic threshold would now be 16 MiB, and these would come from the heap.
  EXPECT_GE(MappedGrowthOf(2 * kMiB), 2 * kMiB);
  EXPECT_GE(MappedGrowthOf(8 * kMiB), 8 * kMiB);
  // Below the threshold blocks come from the heap.
  EXPECT_EQ(MappedGrowthOf(kMiB / 2), 0u);
#endif
}

}  // namespace
}  // namespace onnx_amp
