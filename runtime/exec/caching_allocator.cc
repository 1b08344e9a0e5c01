#include "runtime/exec/caching_allocator.h"

#include <algorithm>

namespace onnx_amp {
namespace {

constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = size_t{2} << 20;

size_t RoundUp(size_t value, size_t step) { return (value + step - 1) / step * step; }

}  // namespace

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

Expected<std::shared_ptr<Buffer>> CachingAllocator::Allocate(size_t bytes) {
  const size_t rounded = RoundedSize(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto fit = free_.lower_bound(rounded);
    const size_t slack = std::max(rounded / 4, rounded < kSmallLimit ? kSmallStep : kLargeStep);
    if (fit != free_.end() && fit->first <= rounded + slack) {
      block = fit->second;
      stats_.cached_bytes -= fit->first;
      free_.erase(fit);
      ++stats_.reuses;
    } else {
      Expected<void*> fresh = memory_->Allocate(rounded);
      if (!fresh.ok() && !free_.empty()) {
        EmptyCacheLocked();
        fresh = memory_->Allocate(rounded);
      }
      if (!fresh.ok()) return fresh.status();
      block = *fresh;
      block_size_.emplace(block, rounded);
      stats_.reserved_bytes += rounded;
      ++stats_.raw_allocations;
    }
  }
  return Buffer::Adopt(block, bytes, memory_->kind(), shared_from_this());
}

void CachingAllocator::Release(void* data, size_t /*bytes*/) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = block_size_.find(data);
  ONNX_AMP_ASSERT(it != block_size_.end(), "a block released to a pool that never handed it out");
  free_.emplace(it->second, data);
  stats_.cached_bytes += it->second;
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (const auto& [size, block] : free_) {
    memory_->Free(block);
    block_size_.erase(block);
    stats_.reserved_bytes -= size;
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace onnx_amp
