// Offsets in one block of memory for a recorded sequence of allocations whose lifetimes
// are known (a run of the executor's plan), so that allocations alive at the same time
// never share bytes: the block then needs about the most bytes ever live at once, where a
// pool of separate buffers also holds the buffers that fit no later request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnx_amp {

struct RecordedAllocation {
  size_t bytes = 0;
  int64_t allocated_at = 0;  // event clock of the allocation
  int64_t released_at = 0;   // event clock of the release (> allocated_at); kOutlivesRun for none
};

struct ArenaPlan {
  size_t block_bytes = 0;
  std::vector<size_t> offsets;  // per allocation, multiples of kArenaAlignment
  // Per allocation: the others sharing some of its bytes (never alive together with it in
  // the recorded sequence). A replay may hand out allocation k only while none of them,
  // nor k's own bytes from an earlier replay, is in use.
  std::vector<std::vector<size_t>> sharing;
};

inline constexpr size_t kArenaAlignment = 64;
inline constexpr int64_t kOutlivesRun = INT64_MAX;

// Places the largest allocations first, each at the lowest offset that keeps it clear of
// every placed allocation alive at the same time (greedy by size).
ArenaPlan PlanArena(const std::vector<RecordedAllocation>& allocations);

}  // namespace onnx_amp
