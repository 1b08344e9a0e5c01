// A caching pool over a device's raw allocator. A dying buffer's block goes back to the
// pool's free list and a later request that fits takes it, so a training step that makes
// the same tensors every step reaches the device allocator (cudaMalloc, which also
// synchronises the device) only in its first steps. Sizes round up to 512 bytes below
// 1 MiB and to 2 MiB above, so tensors of nearby sizes share blocks. A request takes
// the smallest cached block that fits and wastes at most a quarter of it (or one
// rounding step); when the raw allocator fails, the cache is freed and the request
// tried once more. Blocks are handed out in the device's stream order: a block freed
// by one kernel and taken by the next is safe because both run on the same stream.
//
// Capture mode (CUDA graphs, device.h): a captured graph replays its kernels on the
// device addresses they had at capture, so every block the captured work touches must
// stay the graph's for as long as the graph lives. Between BeginCapture and EndCapture
// every request is served from a private pool: its own free blocks first (freed earlier
// in the same capture: the captured work is stream-ordered), then blocks moved over from
// the shared free list, then the raw allocator. A private block released later goes
// back to its pool, never to the shared list, and a shared block released during the
// capture (the captured work may still read it on replay) is held back too. The
// CapturePool handle EndCapture returns keeps all of that; when it dies, the free
// blocks go back to the shared list and the blocks still in use go there when they die.
// One capture at a time, whatever thread allocates: the trainer captures from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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
  size_t cached_bytes = 0;      // free blocks of the shared list, held for reuse
  size_t private_bytes = 0;     // blocks that belong to capture pools (in use or free)
};

class CachingAllocator;

// The blocks of one capture, reserved for its graph while this handle lives.
class CapturePool {
 public:
  ~CapturePool();
  CapturePool(const CapturePool&) = delete;
  CapturePool& operator=(const CapturePool&) = delete;

 private:
  friend class CachingAllocator;
  CapturePool(std::shared_ptr<CachingAllocator> allocator, int id) : allocator_(std::move(allocator)), id_(id) {}
  std::shared_ptr<CachingAllocator> allocator_;
  int id_;
};

class CachingAllocator final : public BufferOwner, public std::enable_shared_from_this<CachingAllocator> {
 public:
  static std::shared_ptr<CachingAllocator> Create(std::unique_ptr<RawDeviceMemory> memory);
  ~CachingAllocator() override;

  // A buffer of at least `bytes` on the device; its block returns here when it dies.
  Expected<std::shared_ptr<Buffer>> Allocate(size_t bytes);
  void Release(void* data, size_t bytes) override;
  // Gives every block of the shared free list back to the raw allocator.
  void EmptyCache();
  CachingAllocatorStats stats() const;

  // Capture mode (see the top of this file). Error: a capture is already open.
  Status BeginCapture();
  bool capturing() const;
  // Ends the capture; the handle reserves its blocks. Internal error without one open.
  Expected<std::unique_ptr<CapturePool>> EndCapture();

  // The block size a request of `bytes` rounds to.
  static size_t RoundedSize(size_t bytes);

 private:
  friend class CapturePool;
  static constexpr int kShared = 0;

  struct PrivatePool {
    std::multimap<size_t, void*> free;
    std::vector<void*> held_back;  // shared blocks released during the capture
  };
  struct Block {
    size_t size = 0;
    int pool = kShared;
  };

  explicit CachingAllocator(std::unique_ptr<RawDeviceMemory> memory) : memory_(std::move(memory)) {}
  void EmptyCacheLocked();
  // The smallest block of `free` that fits `rounded` within the allowed waste, removed
  // from it; nullptr when none does.
  static void* TakeFit(std::multimap<size_t, void*>& free, size_t rounded);
  // Hands a capture pool's blocks over to the shared list.
  void ReleasePool(int id);

  std::unique_ptr<RawDeviceMemory> memory_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;        // the shared list: cached blocks by size
  std::unordered_map<void*, Block> blocks_;  // every block held, by address
  std::map<int, PrivatePool> pools_;         // live capture pools by id
  int capturing_ = kShared;                  // the id of the open capture's pool
  int next_pool_ = 1;
  CachingAllocatorStats stats_;
};

}  // namespace onnx_amp
