#include "runtime/dist/collective_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace onnx_amp {

CollectiveWatchdog::CollectiveWatchdog(std::chrono::milliseconds timeout, int rank, int ranks)
    : timeout_(timeout), rank_(rank), ranks_(ranks) {
  if (timeout_.count() > 0) thread_ = std::thread([this] { Watch(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CollectiveWatchdog::Arm(std::string_view what) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  armed_at_ = Clock::now();
  what_.assign(what);
}

void CollectiveWatchdog::Disarm() {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void CollectiveWatchdog::Watch() {
  // Checking a quarter of the timeout apart (at most a second) fires within 1.25 timeouts.
  const auto period = std::min<std::chrono::milliseconds>(timeout_ / 4 + std::chrono::milliseconds(1),
                                                          std::chrono::seconds(1));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, period);
    if (armed_ && Clock::now() - armed_at_ > timeout_) Fire(what_);
  }
}

void CollectiveWatchdog::Fire(const std::string& what) const {
  char line[512];
  const int length = std::snprintf(
      line, sizeof(line),
      "onnx-amp: error: rank %d of %d: %s did not complete within %.1f s: another rank has died or stopped "
      "responding; ending this rank\n",
      rank_, ranks_, what.c_str(), static_cast<double>(timeout_.count()) / 1000.0);
  if (length > 0) {
    const ssize_t written = write(STDERR_FILENO, line, std::min<size_t>(static_cast<size_t>(length), sizeof(line) - 1));
    (void)written;
  }
  // _exit: the main thread is blocked inside the collective; nothing it holds can be unwound.
  _exit(1);
}

}  // namespace onnx_amp
