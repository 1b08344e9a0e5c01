// A fixed pool of worker threads for data-parallel kernels. One pool per executor;
// ParallelFor blocks until every chunk is done. Nested ParallelFor calls run inline.
#pragma once

#include <cstdint>
#include <functional>

namespace onnx_amp {

class ThreadPool {
 public:
  // num_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const;

  // Calls fn(begin, end) over disjoint chunks covering [0, total); chunks hold at least
  // `grain` items, so small loops stay on the calling thread.
  void ParallelFor(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct State;
  State* state_;
};

}  // namespace onnx_amp
