// The data-parallel loops of our kernels. One pool per executor; ParallelFor blocks
// until every chunk is done; nested ParallelFor calls run inline.
//
// The loops run on the OpenMP runtime that oneDNN uses (Debian's oneDNN is built on
// libgomp), so one team of threads serves both our kernels and oneDNN's primitives:
// a second pool of our own would compete with oneDNN's threads, which spin for a while
// after each primitive, for the same cores.
#pragma once

#include <cstdint>
#include <functional>

namespace onnx_amp {

class ThreadPool {
 public:
  // num_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, total); chunks hold at least
  // `grain` items, so small loops stay on the calling thread. Thread t of the team takes
  // the chunks of the t-th contiguous slice first, as oneDNN splits its work.
  void ParallelFor(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Pins the calling thread's team, itself included, one thread per CPU, when the pool
  // takes every CPU the process may run on (once per calling thread; a smaller pool, or a
  // process whose CPUs cannot be read or set, is left as it is). Unpinned, a worker woken
  // after the machine idled can land on the caller's CPU while the caller spins at the
  // region's barrier for it: measured on a 2-vCPU VM, a 2-thread region after 50 ms idle
  // took 5.9 ms unpinned and 0.22 ms pinned (0.1 ms when both threads were awake).
  void PinTeamOfCallingThread();

 private:
  int num_threads_;
};

// The grain for a ParallelFor over items of `item_elements` elements each: enough items
// that a chunk holds at least `chunk_elements` elements, so that a loop over a few short
// rows (a pool over 8 small planes, a softmax over a few logits) stays on the calling
// thread instead of waking the team, which after an idle spell takes longer than the loop.
inline int64_t ItemsPerChunk(int64_t item_elements, int64_t chunk_elements) {
  if (item_elements <= 0) return chunk_elements;
  return item_elements >= chunk_elements ? 1 : (chunk_elements + item_elements - 1) / item_elements;
}

// The number of threads oneDNN's primitives use on the calling thread.
int RuntimeThreads();

// Sets the number of threads oneDNN's primitives use on the calling thread (its OpenMP
// thread count) for the scope's lifetime, and restores the previous count after.
class RuntimeThreadsScope {
 public:
  explicit RuntimeThreadsScope(int num_threads);
  ~RuntimeThreadsScope();
  RuntimeThreadsScope(const RuntimeThreadsScope&) = delete;
  RuntimeThreadsScope& operator=(const RuntimeThreadsScope&) = delete;

 private:
  int previous_;
};

}  // namespace onnx_amp
