// A caching pool over a device's raw allocator. A dying buffer's block goes back to the
// pool's free list and a later request that fits takes it, so a training step that makes
// the same tensors every step reaches the device allocator (cudaMalloc, which also
// synchronises the device) only in its first steps. Sizes round up to 512 bytes below
// 1 MiB and to 2 MiB above, so tensors of nearby sizes share blocks. A request takes
// the smallest cached block that fits and wastes at most a quarter of it (or one
// rounding step); when the raw allocator fails, the cache is freed and the request
// tried once more. Blocks are handed out in the device's stream order: a block freed
// by one kernel and taken by the next is safe because both run on the same stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

// What the pool caches: a device's own allocate and free.
class RawDeviceMemory {
 public:
  virtual ~RawDeviceMemory() = default;
  virtual DeviceKind kind() const = 0;
  // An error (out of memory) names the request.
  virtual Expected<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* data) = 0;
};

struct CachingAllocatorStats {
  int64_t raw_allocations = 0;  // calls that reached the raw allocator
  int64_t reuses = 0;           // requests served from the cache
  size_t reserved_bytes = 0;    // held from the raw allocator (cached + in use)
  size_t cached_bytes = 0;      // free blocks held for reuse
};

class CachingAllocator final : public BufferOwner, public std::enable_shared_from_this<CachingAllocator> {
 public:
  static std::shared_ptr<CachingAllocator> Create(std::unique_ptr<RawDeviceMemory> memory);
  ~CachingAllocator() override;

  // A buffer of at least `bytes` on the device; its block returns here when it dies.
  Expected<std::shared_ptr<Buffer>> Allocate(size_t bytes);
  void Release(void* data, size_t bytes) override;
  // Gives every cached block back to the raw allocator.
  void EmptyCache();
  CachingAllocatorStats stats() const;

  // The block size a request of `bytes` rounds to.
  static size_t RoundedSize(size_t bytes);

 private:
  explicit CachingAllocator(std::unique_ptr<RawDeviceMemory> memory) : memory_(std::move(memory)) {}
  void EmptyCacheLocked();

  std::unique_ptr<RawDeviceMemory> memory_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;             // cached blocks by size
  std::unordered_map<void*, size_t> block_size_;  // every block held, by address
  CachingAllocatorStats stats_;
};

}  // namespace onnx_amp
