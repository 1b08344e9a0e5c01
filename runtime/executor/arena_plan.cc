#include "runtime/executor/arena_plan.h"

#include <algorithm>
#include <numeric>

namespace onnx_amp {
namespace {

size_t Rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool LivesOverlap(const RecordedAllocation& a, const RecordedAllocation& b) {
  return a.allocated_at < b.released_at && b.allocated_at < a.released_at;
}

}  // namespace

ArenaPlan PlanArena(const std::vector<RecordedAllocation>& allocations) {
  const size_t count = allocations.size();
  std::vector<size_t> by_size(count);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return allocations[a].bytes > allocations[b].bytes; });

  ArenaPlan plan;
  plan.offsets.assign(count, 0);
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of placed allocations alive with this one
  for (size_t index : by_size) {
    const size_t size = Rounded(allocations[index].bytes);
    taken.clear();
    for (size_t other : placed) {
      if (LivesOverlap(allocations[index], allocations[other])) {
        taken.emplace_back(plan.offsets[other], plan.offsets[other] + Rounded(allocations[other].bytes));
      }
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;  // the lowest gap of `size` bytes between the taken ranges
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + size) break;
      offset = std::max(offset, end);
    }
    plan.offsets[index] = offset;
    plan.block_bytes = std::max(plan.block_bytes, offset + size);
    placed.push_back(index);
  }

  plan.sharing.assign(count, {});
  for (size_t k = 0; k < count; ++k) {
    const size_t k_end = plan.offsets[k] + Rounded(allocations[k].bytes);
    for (size_t j = 0; j < count; ++j) {
      const size_t j_end = plan.offsets[j] + Rounded(allocations[j].bytes);
      if (j != k && plan.offsets[j] < k_end && plan.offsets[k] < j_end) plan.sharing[k].push_back(j);
    }
  }
  return plan;
}

}  // namespace onnx_amp
