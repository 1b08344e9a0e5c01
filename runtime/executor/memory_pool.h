// The executor's buffer pool for intermediate tensors. A buffer comes back to the pool
// when the last tensor referring to it dies (the pool then holds the only reference);
// a later allocation takes the smallest free buffer that fits without wasting more than
// half of it. The pool lives as long as its executor, so a run reuses the buffers of the
// runs before it instead of mapping (and page-faulting) fresh memory every time. It also
// counts the bytes live at once and the fresh allocations of each run, for the run
// statistics.
//
// Host pools also learn the first run's allocations: their sizes, in order, and when each
// was released (outputs: never, within the run). From the second run on, allocations
// come from one block at offsets planned for those lifetimes (arena_plan.h), so the pool
// holds about the most bytes live at once instead of every buffer that once fitted no
// request. An allocation whose bytes are still in use (an output the caller kept from an
// earlier run) comes from the pool instead, and so does the rest of a run whose
// allocations differ from the recorded ones (other shapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/core/tensor.h"
#include "runtime/executor/arena_plan.h"

namespace onnx_amp {

class Device;

class MemoryPool {
 public:
  // `limit_bytes` caps the bytes the pool holds at once (buffers in use and free ones);
  // within one run from an empty pool that is the sum of the run's fresh allocations.
  // Fresh buffers come from `device` (its caching pool), or from the host when it is nullptr.
  explicit MemoryPool(size_t limit_bytes = SIZE_MAX, Device* device = nullptr);

  // Starts a run's statistics and takes back every buffer nothing refers to any more.
  void StartRun();
  // nullptr when a fresh allocation is needed and would pass the limit even after the
  // free buffers are given back (or the device is out of memory).
  std::shared_ptr<Buffer> Allocate(size_t bytes);
  size_t limit_bytes() const { return limit_bytes_; }
  // Whether `buffer` was handed out by this pool.
  bool Owns(const Buffer* buffer) const { return in_use_.count(buffer) > 0; }
  // Takes `buffer` back if nothing outside the pool refers to it any more.
  void ReleaseIfUnused(const Buffer* buffer);
  // Takes back every handed-out buffer nothing refers to (after subgraph runs, whose
  // tensors die inside the control-flow kernels).
  void ReleaseAllUnused();

  size_t live_bytes() const { return live_bytes_; }
  size_t peak_live_bytes() const { return peak_live_bytes_; }
  size_t allocated_bytes() const { return allocated_bytes_; }  // fresh allocations of this run
  int64_t reuse_count() const { return reuse_count_; }             // reused buffers in this run
  size_t held_bytes() const { return held_bytes_; }                // buffers, free ones and the block
  size_t arena_bytes() const { return arena_ ? arena_->bytes() : 0; }

 private:
  struct Handed {
    std::shared_ptr<Buffer> buffer;
    size_t event;   // its place in its run's sequence of allocations
    bool in_arena;  // carved from the block
  };
  enum class Phase { kRecording, kReplaying, kOff };

  // Allocation `event` of this run from the block, or nullptr (its bytes are in use, or
  // this run has left the recorded sequence).
  std::shared_ptr<Buffer> FromArena(size_t event, size_t bytes);
  std::shared_ptr<Buffer> FromPool(size_t bytes);
  // Plans the block from the recorded run that ended at `run_end` and gives back the
  // free buffers it replaces.
  void BuildArena(int64_t run_end);
  void ReleaseFreeBuffers();

  std::unordered_map<const Buffer*, Handed> in_use_;
  std::multimap<size_t, std::shared_ptr<Buffer>> free_;  // by capacity
  size_t live_bytes_ = 0;
  size_t peak_live_bytes_ = 0;
  size_t allocated_bytes_ = 0;
  size_t held_bytes_ = 0;  // every buffer the pool owns, in use or free, and the block
  size_t limit_bytes_;
  Device* device_;
  int64_t reuse_count_ = 0;

  Phase phase_;
  int64_t runs_started_ = 0;
  int64_t clock_ = 0;                       // counts allocations and releases
  size_t next_event_ = 0;                   // allocations made in this run
  std::vector<RecordedAllocation> recorded_;  // the first run's, released_at -1 while live
  bool following_ = false;                  // this run still matches the recorded sequence
  std::vector<size_t> arena_offsets_;       // per recorded allocation
  std::vector<std::vector<size_t>> arena_sharing_;
  std::vector<bool> arena_live_;
  std::shared_ptr<Buffer> arena_;
  std::shared_ptr<BufferOwner> arena_owner_;  // keeps the block alive while carved buffers live
};

}  // namespace onnx_amp
