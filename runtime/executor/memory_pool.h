// The executor's buffer pool for intermediate tensors. A buffer comes back to the pool
// when the last tensor referring to it dies (the pool then holds the only reference);
// a later allocation takes the smallest free buffer that fits without wasting more than
// half of it. The pool lives as long as its executor, so a run reuses the buffers of the
// runs before it instead of mapping (and page-faulting) fresh memory every time. It also
// counts the bytes live at once and the fresh allocations of each run, for the run
// statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>

#include "runtime/core/tensor.h"

namespace onnx_amp {

class Device;

class MemoryPool {
 public:
  // `limit_bytes` caps the bytes the pool holds at once (buffers in use and free ones);
  // within one run from an empty pool that is the sum of the run's fresh allocations.
  // Fresh buffers come from `device` (its caching pool), or from the host when it is nullptr.
  explicit MemoryPool(size_t limit_bytes = SIZE_MAX, Device* device = nullptr)
      : limit_bytes_(limit_bytes), device_(device) {}

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

 private:
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> in_use_;
  std::multimap<size_t, std::shared_ptr<Buffer>> free_;  // by capacity
  size_t live_bytes_ = 0;
  size_t peak_live_bytes_ = 0;
  size_t allocated_bytes_ = 0;
  size_t held_bytes_ = 0;  // every buffer the pool owns, in use or free
  size_t limit_bytes_;
  Device* device_;
  int64_t reuse_count_ = 0;
};

}  // namespace onnx_amp
