#include "runtime/exec/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

// libgomp's entry points (the OpenMP runtime libdnnl links). GOMP_parallel is the call
// GCC emits for `#pragma omp parallel`; calling it directly keeps the pool on that one
// runtime whatever compiler builds this file (clang would otherwise bring its own).
extern "C" {
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
int omp_get_max_threads(void);
void omp_set_num_threads(int num_threads);
int omp_get_thread_num(void);
}

namespace onnx_amp {
namespace {

// Set while a thread runs chunks of a ParallelFor, so nested calls run inline instead
// of opening a team inside a team.
thread_local bool in_parallel_region = false;

// The chunks of one ParallelFor, in one contiguous range per thread of the team. Each
// thread takes its own range's chunks in order, then takes what is left of the others'
// ranges (uneven chunks, or a thread that started late, still balance). Thread t owning
// the t-th slice of the items is how oneDNN splits its primitives' work too, so an
// element-wise pass after a convolution finds most of its items in its own core's cache;
// handing chunks out first come, first served sent half of them across cores.
struct Job {
  static constexpr int kMaxRanges = 64;
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t total;
  int64_t chunk;
  int ranges;
  int64_t range_end[kMaxRanges];            // chunk index after each range's last
  std::atomic<int64_t> next[kMaxRanges];  // each range's next chunk to take
};

void RunChunks(void* data) {
  Job& job = *static_cast<Job*>(data);
  const bool was_inside = in_parallel_region;
  in_parallel_region = true;
  const int own = omp_get_thread_num() % job.ranges;
  for (int i = 0; i < job.ranges; ++i) {
    const int range = (own + i) % job.ranges;
    for (;;) {
      const int64_t index = job.next[range].fetch_add(1, std::memory_order_relaxed);
      if (index >= job.range_end[range]) break;
      const int64_t begin = index * job.chunk;
      (*job.fn)(begin, std::min(job.total, begin + job.chunk));
    }
  }
  in_parallel_region = was_inside;
}

// The CPUs the process may run on, read once, before any thread is pinned.
const std::vector<int>& ProcessCpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> list;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return list;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) list.push_back(cpu);
    }
    return list;
  }();
  return cpus;
}

// Each thread of the team pins itself to the CPU of its thread number.
void PinToTeamCpu(void* data) {
  const std::vector<int>& cpus = *static_cast<const std::vector<int>*>(data);
  const int index = omp_get_thread_num();
  if (index < 0 || static_cast<size_t>(index) >= cpus.size()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[index], &set);
  sched_setaffinity(0, sizeof(set), &set);  // a refusal leaves the thread as it was
}

}  // namespace

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads > 0 ? num_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

void ThreadPool::ParallelFor(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (num_threads_ == 1 || total <= grain || in_parallel_region) {
    fn(0, total);
    return;
  }
  // A few chunks per thread balance uneven work without much scheduling overhead.
  const int64_t max_chunks = (total + grain - 1) / grain;
  const int64_t num_chunks = std::min<int64_t>(max_chunks, int64_t{4} * num_threads_);
  const int64_t threads = std::min<int64_t>({num_threads_, num_chunks, Job::kMaxRanges});
  Job job;
  job.fn = &fn;
  job.total = total;
  job.chunk = (total + num_chunks - 1) / num_chunks;
  job.ranges = static_cast<int>(threads);
  const int64_t chunks = (total + job.chunk - 1) / job.chunk;
  for (int t = 0; t < job.ranges; ++t) {
    job.next[t].store(chunks * t / threads, std::memory_order_relaxed);
    job.range_end[t] = chunks * (t + 1) / threads;
  }
  GOMP_parallel(RunChunks, &job, static_cast<unsigned>(threads), 0);
}

void ThreadPool::PinTeamOfCallingThread() {
  // libgomp keeps a team's threads per calling thread and reuses them for every later
  // region of that thread, ours and oneDNN's alike, so pinning them once holds.
  thread_local bool pinned = false;
  if (pinned) return;
  pinned = true;
  const std::vector<int>& cpus = ProcessCpus();
  if (num_threads_ < 2 || static_cast<size_t>(num_threads_) != cpus.size() || in_parallel_region) return;
  GOMP_parallel(PinToTeamCpu, const_cast<std::vector<int>*>(&cpus), static_cast<unsigned>(num_threads_), 0);
}

int RuntimeThreads() { return omp_get_max_threads(); }

RuntimeThreadsScope::RuntimeThreadsScope(int num_threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(num_threads);
}

RuntimeThreadsScope::~RuntimeThreadsScope() { omp_set_num_threads(previous_); }

}  // namespace onnx_amp
