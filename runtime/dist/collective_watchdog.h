// Bounds how long a rank waits in a collective. A rank that dies is normally noticed by the
// launcher (mpirun ends the others, see stop_message.h); a rank that hangs, is stopped, or was
// started by a launcher that does not watch its children would leave the others waiting in
// an all-reduce forever. The watchdog thread sees a collective that has been running longer
// than the timeout, writes one line naming it to stderr and ends the process with exit code
// 1, so the launcher (or the user) sees a failed rank instead of a hang.
//
// Arm() / Disarm() cost one uncontended lock each; the thread wakes a few times per timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace onnx_amp {

class CollectiveWatchdog {
 public:
  // timeout <= 0: never fires (no thread). `rank` and `ranks` go into the message.
  CollectiveWatchdog(std::chrono::milliseconds timeout, int rank, int ranks);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  std::chrono::milliseconds timeout() const { return timeout_; }
  // A collective named `what` starts / has completed.
  void Arm(std::string_view what);
  void Disarm();

 private:
  using Clock = std::chrono::steady_clock;
  void Watch();
  [[noreturn]] void Fire(const std::string& what) const;

  const std::chrono::milliseconds timeout_;
  const int rank_;
  const int ranks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool armed_ = false;
  Clock::time_point armed_at_;
  std::string what_;
  std::thread thread_;
};

}  // namespace onnx_amp
