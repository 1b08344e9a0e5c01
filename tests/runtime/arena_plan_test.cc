// PlanArena: allocations alive at the same time never share bytes, the block is as small
// as the hand-worked cases allow, and the sharing lists name exactly the allocations
// whose bytes meet.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "runtime/executor/arena_plan.h"

namespace onnx_amp {
namespace {

bool LivesOverlap(const RecordedAllocation& a, const RecordedAllocation& b) {
  return a.allocated_at < b.released_at && b.allocated_at < a.released_at;
}

bool BytesOverlap(const ArenaPlan& plan, const std::vector<RecordedAllocation>& allocations, size_t a, size_t b) {
  return plan.offsets[a] < plan.offsets[b] + allocations[b].bytes && plan.offsets[b] < plan.offsets[a] + allocations[a].bytes;
}

void ExpectConsistent(const ArenaPlan& plan, const std::vector<RecordedAllocation>& allocations) {
  ASSERT_EQ(plan.offsets.size(), allocations.size());
  for (size_t a = 0; a < allocations.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % kArenaAlignment, 0u) << a;
    EXPECT_LE(plan.offsets[a] + allocations[a].bytes, plan.block_bytes) << a;
    for (size_t b = 0; b < allocations.size(); ++b) {
      if (a == b) continue;
      const bool overlap = BytesOverlap(plan, allocations, a, b);
      if (LivesOverlap(allocations[a], allocations[b])) EXPECT_FALSE(overlap) << a << " and " << b << " are alive together";
      const bool listed = std::count(plan.sharing[a].begin(), plan.sharing[a].end(), b) == 1;
      EXPECT_EQ(listed, overlap) << a << " lists " << b;
    }
  }
}

// A chain: each value lives from its producer to its consumer, so two sizes alternate.
TEST(ArenaPlanTest, ChainReusesTwoSlots) {
  const size_t mib = 1 << 20;
  std::vector<RecordedAllocation> chain;
  for (int64_t i = 0; i < 6; ++i) chain.push_back({(i % 2 == 0 ? 4 : 2) * mib, 2 * i, 2 * i + 3});
  const ArenaPlan plan = PlanArena(chain);
  ExpectConsistent(plan, chain);
  EXPECT_EQ(plan.block_bytes, 6 * mib);  // one 4 MiB and one 2 MiB value alive at a time
}

// The case a pool of separate buffers handles badly: 32 and 8 MiB die, then 64 MiB is
// asked for. The block reuses their bytes; a pool would hold 104 MiB.
TEST(ArenaPlanTest, LaterLargeAllocationTakesTheBytesOfDeadSmallerOnes) {
  const size_t mib = 1 << 20;
  const std::vector<RecordedAllocation> allocations = {{32 * mib, 0, 2}, {8 * mib, 1, 3}, {64 * mib, 4, 5}};
  const ArenaPlan plan = PlanArena(allocations);
  ExpectConsistent(plan, allocations);
  EXPECT_EQ(plan.block_bytes, 64 * mib);
  EXPECT_EQ(plan.sharing[2].size(), 2u);
}

TEST(ArenaPlanTest, AllocationsOutlivingTheRunKeepTheirOwnBytes) {
  const size_t mib = 1 << 20;
  const std::vector<RecordedAllocation> allocations = {{16 * mib, 0, kOutlivesRun}, {8 * mib, 1, 2}, {8 * mib, 3, 4}};
  const ArenaPlan plan = PlanArena(allocations);
  ExpectConsistent(plan, allocations);
  EXPECT_EQ(plan.block_bytes, 24 * mib);
}

TEST(ArenaPlanTest, UnalignedSizesGetAlignedOffsets) {
  const std::vector<RecordedAllocation> allocations = {{1, 0, 10}, {100, 1, 10}, {65, 2, 10}};
  const ArenaPlan plan = PlanArena(allocations);
  ExpectConsistent(plan, allocations);
  EXPECT_EQ(plan.block_bytes, 64 + 128 + 128);
}

TEST(ArenaPlanTest, RandomLifetimesNeverShareLiveBytes) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<RecordedAllocation> allocations;
    int64_t clock = 0;
    for (int i = 0; i < 60; ++i) {
      const int64_t start = clock++;
      allocations.push_back({1 + rng() % 5000, start, start + 1 + static_cast<int64_t>(rng() % 20)});
    }
    const ArenaPlan plan = PlanArena(allocations);
    ExpectConsistent(plan, allocations);
    // Never more than every allocation side by side.
    size_t total = 0;
    for (const RecordedAllocation& allocation : allocations) total += (allocation.bytes + 63) / 64 * 64;
    EXPECT_LE(plan.block_bytes, total);
  }
}

}  // namespace
}  // namespace onnx_amp
