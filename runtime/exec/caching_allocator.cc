#include "runtime/exec/caching_allocator.h"

#include <algorithm>

namespace onnx_amp {
namespace {

constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = size_t{2} << 20;

size_t RoundUp(size_t value, size_t step) { return (value + step - 1) / step * step; }

}  // namespace

CapturePool::~CapturePool() { allocator_->ReleasePool(id_); }

size_t CachingAllocator::RoundedSize(size_t bytes) {
  if (bytes == 0) return kSmallStep;
  return bytes < kSmallLimit ? RoundUp(bytes, kSmallStep) : RoundUp(bytes, kLargeStep);
}

std::shared_ptr<CachingAllocator> CachingAllocator::Create(std::unique_ptr<RawDeviceMemory> memory) {
  return std::shared_ptr<CachingAllocator>(new CachingAllocator(std::move(memory)));
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  EmptyCacheLocked();
}

void* CachingAllocator::TakeFit(std::multimap<size_t, void*>& free, size_t rounded) {
  auto fit = free.lower_bound(rounded);
  const size_t slack = std::max(rounded / 4, rounded < kSmallLimit ? kSmallStep : kLargeStep);
  if (fit == free.end() || fit->first > rounded + slack) return nullptr;
  void* block = fit->second;
  free.erase(fit);
  return block;
}

Expected<std::shared_ptr<Buffer>> CachingAllocator::Allocate(size_t bytes) {
  const size_t rounded = RoundedSize(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (capturing_ != kShared) block = TakeFit(pools_[capturing_].free, rounded);
    if (block == nullptr) {
      block = TakeFit(free_, rounded);
      if (block != nullptr) {
        Block& taken = blocks_[block];
        stats_.cached_bytes -= taken.size;
        if (capturing_ != kShared) {  // now the capture's for good
          taken.pool = capturing_;
          stats_.private_bytes += taken.size;
        }
      }
    }
    if (block != nullptr) {
      ++stats_.reuses;
    } else {
      Expected<void*> fresh = memory_->Allocate(rounded);
      // Not inside a capture: giving memory back (cudaFree) waits for the device.
      if (!fresh.ok() && !free_.empty() && capturing_ == kShared) {
        EmptyCacheLocked();
        fresh = memory_->Allocate(rounded);
      }
      if (!fresh.ok()) return fresh.status();
      block = *fresh;
      blocks_.emplace(block, Block{rounded, capturing_});
      stats_.reserved_bytes += rounded;
      if (capturing_ != kShared) stats_.private_bytes += rounded;
      ++stats_.raw_allocations;
    }
  }
  return Buffer::Adopt(block, bytes, memory_->kind(), shared_from_this());
}

void CachingAllocator::Release(void* data, size_t /*bytes*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(data);
  ONNX_AMP_ASSERT(it != blocks_.end(), "a block released to a pool that never handed it out");
  Block& block = it->second;
  if (block.pool != kShared) {
    auto pool = pools_.find(block.pool);
    if (pool != pools_.end()) {
      pool->second.free.emplace(block.size, data);
      return;
    }
    block.pool = kShared;  // its capture's graph is gone
    stats_.private_bytes -= block.size;
  } else if (capturing_ != kShared) {
    // The captured work may read it on every replay: it must not serve anyone else.
    block.pool = capturing_;
    stats_.private_bytes += block.size;
    pools_[capturing_].held_back.push_back(data);
    return;
  }
  free_.emplace(block.size, data);
  stats_.cached_bytes += block.size;
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (const auto& [size, block] : free_) {
    memory_->Free(block);
    blocks_.erase(block);
    stats_.reserved_bytes -= size;
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Status CachingAllocator::BeginCapture() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing_ != kShared) return InternalError("a device memory capture is already open");
  capturing_ = next_pool_++;
  pools_[capturing_];
  return Status::Ok();
}

bool CachingAllocator::capturing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capturing_ != kShared;
}

Expected<std::unique_ptr<CapturePool>> CachingAllocator::EndCapture() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capturing_ == kShared) return InternalError("no device memory capture is open");
  const int id = capturing_;
  capturing_ = kShared;
  return std::unique_ptr<CapturePool>(new CapturePool(shared_from_this(), id));
}

void CachingAllocator::ReleasePool(int id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto pool = pools_.find(id);
  if (pool == pools_.end()) return;
  std::vector<void*> released = std::move(pool->second.held_back);
  for (const auto& [size, block] : pool->second.free) released.push_back(block);
  pools_.erase(pool);
  for (void* data : released) {
    Block& block = blocks_[data];
    block.pool = kShared;
    stats_.private_bytes -= block.size;
    free_.emplace(block.size, data);
    stats_.cached_bytes += block.size;
  }
}

}  // namespace onnx_amp
