#include "runtime/exec/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace onnx_amp {
namespace {

// Set while a thread runs chunks of a ParallelFor, so nested calls run inline instead
// of waiting on workers that are busy with the outer loop.
thread_local bool in_parallel_region = false;

}  // namespace

struct ThreadPool::State {
  int num_threads = 1;
  std::vector<std::thread> workers;

  // One job at a time: callers from different threads queue on submit_mutex.
  std::mutex submit_mutex;

  std::mutex mutex;
  std::condition_variable work_ready;
  std::condition_variable work_done;
  uint64_t generation = 0;
  bool stop = false;
  int workers_pending = 0;

  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t total = 0;
  int64_t chunk = 1;
  std::atomic<int64_t> next_begin{0};

  void RunChunks() {
    for (;;) {
      const int64_t begin = next_begin.fetch_add(chunk);
      if (begin >= total) return;
      (*fn)(begin, std::min(total, begin + chunk));
    }
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        work_ready.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      in_parallel_region = true;
      RunChunks();
      in_parallel_region = false;
      std::lock_guard<std::mutex> lock(mutex);
      if (--workers_pending == 0) work_done.notify_one();
    }
  }
};

ThreadPool::ThreadPool(int num_threads) : state_(new State) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  state_->num_threads = num_threads;
  // The calling thread works too, so n threads need n - 1 workers.
  for (int i = 1; i < num_threads; ++i) state_->workers.emplace_back([s = state_] { s->WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->work_ready.notify_all();
  for (std::thread& worker : state_->workers) worker.join();
  delete state_;
}

int ThreadPool::num_threads() const { return state_->num_threads; }

void ThreadPool::ParallelFor(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  State& s = *state_;
  if (s.workers.empty() || total <= grain || in_parallel_region) {
    fn(0, total);
    return;
  }
  // A few chunks per thread balance uneven work without much scheduling overhead.
  const int64_t max_chunks = (total + grain - 1) / grain;
  const int64_t num_chunks = std::min<int64_t>(max_chunks, int64_t{4} * s.num_threads);
  const int64_t chunk = (total + num_chunks - 1) / num_chunks;

  std::lock_guard<std::mutex> submit(s.submit_mutex);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.fn = &fn;
    s.total = total;
    s.chunk = chunk;
    s.next_begin.store(0);
    s.workers_pending = static_cast<int>(s.workers.size());
    ++s.generation;
  }
  s.work_ready.notify_all();
  in_parallel_region = true;
  s.RunChunks();
  in_parallel_region = false;
  std::unique_lock<std::mutex> lock(s.mutex);
  s.work_done.wait(lock, [&] { return s.workers_pending == 0; });
  s.fn = nullptr;
}

}  // namespace onnx_amp
