// MemoryPool: the first run is learnt and later runs with the same allocations come from
// one block (no fresh memory, no live bytes shared), while a run that leaves the recorded
// sequence, or meets a buffer still held from the run before, stays correct.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/executor/memory_pool.h"

namespace onnx_amp {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The sequence of the fragmentation case: 32 and 8 MiB die, then 64 MiB is asked for
// and returned to the caller (a graph output) with a 4 MiB one that dies in the run.
// The bytes a buffer covered while it was handed out.
struct Range {
  const char* begin;
  size_t bytes;
};

Range RangeOf(const Buffer& buffer) { return {static_cast<const char*>(buffer.data()), buffer.bytes()}; }

struct SequenceRun {
  std::shared_ptr<Buffer> output;
  std::vector<Range> handed;
};

SequenceRun RunSequence(MemoryPool& pool, size_t output_bytes = 64 * kMiB) {
  SequenceRun run;
  pool.StartRun();
  std::shared_ptr<Buffer> a = pool.Allocate(32 * kMiB);
  std::shared_ptr<Buffer> b = pool.Allocate(8 * kMiB);
  std::memset(a->data(), 1, a->bytes());
  std::memset(b->data(), 2, b->bytes());
  run.handed = {RangeOf(*a), RangeOf(*b)};
  a.reset();
  b.reset();
  pool.ReleaseAllUnused();
  std::shared_ptr<Buffer> scratch = pool.Allocate(4 * kMiB);
  run.output = pool.Allocate(output_bytes);
  std::memset(scratch->data(), 3, scratch->bytes());
  std::memset(run.output->data(), 4, run.output->bytes());
  EXPECT_EQ(static_cast<unsigned char*>(run.output->data())[0], 4);
  run.handed.push_back(RangeOf(*scratch));
  scratch.reset();
  pool.ReleaseAllUnused();
  return run;
}

bool Disjoint(Range a, Range b) { return a.begin + a.bytes <= b.begin || b.begin + b.bytes <= a.begin; }

TEST(MemoryPoolTest, SecondRunComesFromTheBlockWithoutFreshMemory) {
  MemoryPool pool;
  RunSequence(pool);  // the output is dropped before the next run
  RunSequence(pool);  // learnt: the dead buffers come from the block
  EXPECT_EQ(pool.allocated_bytes(), 0u);
  // 32 + 8 MiB, then 4 + 64 MiB alive at once: the block is 68 MiB, where the pool held
  // 32 + 8 + 4 + 64 (the 64 MiB output fits none of the dead buffers).
  EXPECT_EQ(pool.arena_bytes(), 68 * kMiB);
  EXPECT_EQ(pool.held_bytes(), 68 * kMiB);
  SequenceRun third = RunSequence(pool);
  EXPECT_EQ(pool.allocated_bytes(), 0u);
  EXPECT_EQ(pool.reuse_count(), 4);
}

TEST(MemoryPoolTest, OutputHeldAcrossRunsKeepsItsBytes) {
  MemoryPool pool;
  RunSequence(pool);
  SequenceRun second = RunSequence(pool);
  SequenceRun third = RunSequence(pool);  // the second run's output is still held here
  ASSERT_NE(second.output, nullptr);
  ASSERT_NE(third.output, nullptr);
  EXPECT_TRUE(Disjoint(RangeOf(*second.output), RangeOf(*third.output)));
  EXPECT_EQ(static_cast<unsigned char*>(second.output->data())[second.output->bytes() - 1], 4);
}

TEST(MemoryPoolTest, RunWithOtherSizesLeavesTheBlock) {
  MemoryPool pool;
  RunSequence(pool);
  RunSequence(pool, 80 * kMiB);  // the last allocation differs: a fresh buffer
  EXPECT_EQ(pool.allocated_bytes(), 80 * kMiB);
  RunSequence(pool);  // back to the learnt sizes
  EXPECT_EQ(pool.allocated_bytes(), 0u);
}

TEST(MemoryPoolTest, BlockBufferHeldIntoTheNextRunIsNotHandedOutAgain) {
  MemoryPool pool;
  RunSequence(pool);
  pool.StartRun();
  std::shared_ptr<Buffer> kept = pool.Allocate(32 * kMiB);  // from the block, held past the run
  std::memset(kept->data(), 7, kept->bytes());
  SequenceRun next = RunSequence(pool);  // starts while `kept` lives: everything from the pool
  for (const Range& handed : next.handed) EXPECT_TRUE(Disjoint(RangeOf(*kept), handed));
  EXPECT_TRUE(Disjoint(RangeOf(*kept), RangeOf(*next.output)));
  EXPECT_EQ(static_cast<unsigned char*>(kept->data())[kept->bytes() - 1], 7);
}

TEST(MemoryPoolTest, CapStillRefusesWhatWouldPassIt) {
  MemoryPool pool(100 * kMiB);
  pool.StartRun();
  std::shared_ptr<Buffer> a = pool.Allocate(60 * kMiB);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pool.Allocate(60 * kMiB), nullptr);
}

}  // namespace
}  // namespace onnx_amp
