#include "runtime/executor/memory_pool.h"

#include <algorithm>
#include <vector>

#include "runtime/exec/device.h"

namespace onnx_amp {

std::shared_ptr<Buffer> MemoryPool::Allocate(size_t bytes) {
  std::shared_ptr<Buffer> buffer;
  auto fit = free_.lower_bound(bytes);
  // Small requests may take a buffer up to one cache line larger than twice their size.
  if (fit != free_.end() && fit->first <= 2 * bytes + 64) {
    buffer = std::move(fit->second);
    free_.erase(fit);
    ++reuse_count_;
  } else {
    if (bytes > limit_bytes_ - std::min(limit_bytes_, held_bytes_)) {
      // Free buffers too large or too small to reuse go back before the cap says no.
      for (const auto& [capacity, unused] : free_) held_bytes_ -= capacity;
      free_.clear();
      if (bytes > limit_bytes_ - std::min(limit_bytes_, held_bytes_)) return nullptr;
    }
    if (device_ == nullptr) {
      buffer = Buffer::AllocateCpu(bytes);
    } else {
      Expected<std::shared_ptr<Buffer>> fresh = device_->Allocate(bytes);
      if (!fresh.ok()) return nullptr;
      buffer = std::move(fresh).value();
    }
    allocated_bytes_ += bytes;
    held_bytes_ += buffer->bytes();
  }
  live_bytes_ += buffer->bytes();
  peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  in_use_.emplace(buffer.get(), buffer);
  return buffer;
}

void MemoryPool::StartRun() {
  ReleaseAllUnused();
  peak_live_bytes_ = live_bytes_;
  allocated_bytes_ = 0;
  reuse_count_ = 0;
}

void MemoryPool::ReleaseIfUnused(const Buffer* buffer) {
  auto it = in_use_.find(buffer);
  if (it == in_use_.end() || it->second.use_count() != 1) return;
  live_bytes_ -= it->second->bytes();
  free_.emplace(it->second->bytes(), std::move(it->second));
  in_use_.erase(it);
}

void MemoryPool::ReleaseAllUnused() {
  std::vector<const Buffer*> unused;
  for (const auto& [raw, buffer] : in_use_) {
    if (buffer.use_count() == 1) unused.push_back(raw);
  }
  for (const Buffer* raw : unused) ReleaseIfUnused(raw);
}

}  // namespace onnx_amp
