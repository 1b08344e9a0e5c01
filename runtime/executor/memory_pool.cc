#include "runtime/executor/memory_pool.h"

#include <algorithm>
#include <vector>

#include "runtime/exec/device.h"
#include "runtime/exec/host_heap.h"

namespace onnx_amp {
namespace {

// Owner of the buffers carved from the block: they give nothing back on their own (the
// pool tracks which parts are live) but keep the block alive.
class ArenaOwner final : public BufferOwner {
 public:
  explicit ArenaOwner(std::shared_ptr<Buffer> block) : block_(std::move(block)) {}
  void Release(void*, size_t) override {}

 private:
  std::shared_ptr<Buffer> block_;
};

}  // namespace

MemoryPool::MemoryPool(size_t limit_bytes, Device* device)
    : limit_bytes_(limit_bytes), device_(device), phase_(device == nullptr ? Phase::kRecording : Phase::kOff) {}

std::shared_ptr<Buffer> MemoryPool::Allocate(size_t bytes) {
  const size_t event = next_event_++;
  std::shared_ptr<Buffer> buffer = FromArena(event, bytes);
  const bool in_arena = buffer != nullptr;
  if (in_arena) {
    ++reuse_count_;
  } else {
    buffer = FromPool(bytes);
    if (buffer == nullptr) {
      --next_event_;  // a failed allocation takes no place in the sequence
      return nullptr;
    }
  }
  if (phase_ == Phase::kRecording && runs_started_ == 1) recorded_.push_back({bytes, clock_, -1});
  ++clock_;
  live_bytes_ += buffer->bytes();
  peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  in_use_.emplace(buffer.get(), Handed{buffer, event, in_arena});
  return buffer;
}

std::shared_ptr<Buffer> MemoryPool::FromArena(size_t event, size_t bytes) {
  if (!following_) return nullptr;
  if (event >= recorded_.size() || recorded_[event].bytes != bytes) {
    following_ = false;
    return nullptr;
  }
  if (arena_live_[event]) return nullptr;  // the same allocation of an earlier run is still held
  for (size_t other : arena_sharing_[event]) {
    if (arena_live_[other]) return nullptr;
  }
  arena_live_[event] = true;
  char* data = static_cast<char*>(arena_->data()) + arena_offsets_[event];
  return Buffer::Adopt(data, bytes, DeviceKind::kCpu, arena_owner_);
}

std::shared_ptr<Buffer> MemoryPool::FromPool(size_t bytes) {
  auto fit = free_.lower_bound(bytes);
  // Small requests may take a buffer up to one cache line larger than twice their size.
  if (fit != free_.end() && fit->first <= 2 * bytes + 64) {
    std::shared_ptr<Buffer> buffer = std::move(fit->second);
    free_.erase(fit);
    ++reuse_count_;
    return buffer;
  }
  // While the first run is learnt, free buffers that fit nothing go back before a fresh
  // one is mapped, so that run peaks near its live bytes too.
  if (phase_ == Phase::kRecording || bytes > limit_bytes_ - std::min(limit_bytes_, held_bytes_)) ReleaseFreeBuffers();
  if (bytes > limit_bytes_ - std::min(limit_bytes_, held_bytes_)) return nullptr;
  std::shared_ptr<Buffer> buffer;
  if (device_ == nullptr) {
    buffer = Buffer::AllocateCpu(bytes);
  } else {
    Expected<std::shared_ptr<Buffer>> fresh = device_->Allocate(bytes);
    if (!fresh.ok()) return nullptr;
    buffer = std::move(fresh).value();
  }
  allocated_bytes_ += bytes;
  held_bytes_ += buffer->bytes();
  return buffer;
}

void MemoryPool::ReleaseFreeBuffers() {
  for (const auto& [capacity, unused] : free_) held_bytes_ -= capacity;
  free_.clear();
}

void MemoryPool::StartRun() {
  const int64_t run_end = clock_;
  ReleaseAllUnused();
  if (phase_ == Phase::kRecording && runs_started_ == 1) BuildArena(run_end);
  ++runs_started_;
  next_event_ = 0;
  following_ = phase_ == Phase::kReplaying;
  peak_live_bytes_ = live_bytes_;
  allocated_bytes_ = 0;
  reuse_count_ = 0;
}

void MemoryPool::BuildArena(int64_t run_end) {
  phase_ = Phase::kOff;
  if (recorded_.empty()) return;
  for (RecordedAllocation& allocation : recorded_) {
    if (allocation.released_at < 0 || allocation.released_at >= run_end) allocation.released_at = kOutlivesRun;
  }
  ArenaPlan plan = PlanArena(recorded_);
  ReleaseFreeBuffers();
  ReturnFreedHeapPages();  // the buffers' pages go back before the block maps its own
  if (plan.block_bytes > limit_bytes_ - std::min(limit_bytes_, held_bytes_)) return;
  arena_ = Buffer::AllocateCpu(plan.block_bytes);
  arena_owner_ = std::make_shared<ArenaOwner>(arena_);
  held_bytes_ += arena_->bytes();
  arena_offsets_ = std::move(plan.offsets);
  arena_sharing_ = std::move(plan.sharing);
  arena_live_.assign(recorded_.size(), false);
  phase_ = Phase::kReplaying;
}

void MemoryPool::ReleaseIfUnused(const Buffer* buffer) {
  auto it = in_use_.find(buffer);
  if (it == in_use_.end() || it->second.buffer.use_count() != 1) return;
  Handed& handed = it->second;
  live_bytes_ -= handed.buffer->bytes();
  if (phase_ == Phase::kRecording && runs_started_ == 1 && handed.event < recorded_.size()) {
    recorded_[handed.event].released_at = clock_;
  }
  ++clock_;
  if (handed.in_arena) {
    arena_live_[handed.event] = false;
  } else {
    free_.emplace(handed.buffer->bytes(), std::move(handed.buffer));
  }
  in_use_.erase(it);
}

void MemoryPool::ReleaseAllUnused() {
  std::vector<const Buffer*> unused;
  for (const auto& [raw, handed] : in_use_) {
    if (handed.buffer.use_count() == 1) unused.push_back(raw);
  }
  for (const Buffer* raw : unused) ReleaseIfUnused(raw);
}

}  // namespace onnx_amp
