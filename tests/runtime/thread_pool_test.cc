#include "runtime/exec/thread_pool.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace onnx_amp {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.num_threads(), 4);
  for (int64_t total : {1, 7, 100, 10007}) {
    std::vector<std::atomic<int>> hits(total);
    pool.ParallelFor(total, 3, [&](int64_t begin, int64_t end) {
      EXPECT_LT(begin, end);
      for (int64_t i = begin; i < end; ++i) ++hits[i];
    });
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 1) << "total " << total << " index " << i;
  }
}

// Thread t starts on the t-th slice of the items, as oneDNN splits a primitive's work,
// so a pass after a primitive finds its items in its own core's cache. Each thread's first
// chunk waits until both have taken one, so neither can take the other's first.
TEST(ThreadPoolTest, EachThreadStartsOnItsOwnSliceOfTheItems) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::map<std::thread::id, int64_t> first_begin;
  std::atomic<int> started{0};
  pool.ParallelFor(8, 1, [&](int64_t begin, int64_t) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      first = first_begin.emplace(std::this_thread::get_id(), begin).second;
    }
    if (!first) return;
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  ASSERT_EQ(started.load(), 2) << "the second thread never took a chunk";
  std::set<int64_t> begins;
  for (const auto& [thread, begin] : first_begin) begins.insert(begin);
  EXPECT_EQ(begins, (std::set<int64_t>{0, 4}));
}

TEST(ThreadPoolTest, ItemsPerChunkHoldsAtLeastTheElementsAsked) {
  EXPECT_EQ(ItemsPerChunk(256, 1 << 14), 64);     // 8 planes of 16x16 stay in one chunk
  EXPECT_EQ(ItemsPerChunk(1000, 4096), 5);        // rounded up: 5000 elements, not 4000
  EXPECT_EQ(ItemsPerChunk(1 << 14, 1 << 14), 1);
  EXPECT_EQ(ItemsPerChunk(1 << 20, 1 << 14), 1);  // long items: one per chunk
  EXPECT_EQ(ItemsPerChunk(0, 4096), 4096);        // empty items do not divide by zero
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.ParallelFor(100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
    }
  });
  EXPECT_EQ(sum.load(), 800);
}

TEST(ThreadPoolTest, ZeroAndSmallWork) {
  ThreadPool pool(2);
  int calls = 0;
  pool.ParallelFor(0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  // Below the grain everything runs on the calling thread in one chunk.
  pool.ParallelFor(10, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 10);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, ManyJobsInSequence) {
  ThreadPool pool(3);
  int64_t total = 0;
  for (int job = 0; job < 2000; ++job) {
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(64, 1, [&](int64_t begin, int64_t end) { sum += end - begin; });
    total += sum;
  }
  EXPECT_EQ(total, 2000 * 64);
}

// The CPUs this process may run on.
int ProcessCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

// The CPU of each of this process's threads that may run on one CPU only.
std::multiset<std::string> SingleCpuThreads() {
  std::multiset<std::string> cpus;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
      const std::string list = line.substr(line.find_first_not_of(" \t", 18));
      if (list.find_first_of(",-") == std::string::npos) cpus.insert(list);
    }
  }
  return cpus;
}

TEST(ThreadPoolTest, ATeamTakingEveryCpuIsPinnedOneThreadPerCpu) {
  const int cpus = ProcessCpuCount();
  if (cpus < 2) GTEST_SKIP() << "the process may run on " << cpus << " CPU(s): nothing to pin apart";
  const std::multiset<std::string> before = SingleCpuThreads();
  std::multiset<std::string> pinned;
  // A thread of its own: pinning holds for the calling thread's team.
  std::thread([&] {
    ThreadPool pool(cpus);
    pool.PinTeamOfCallingThread();
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(1 << 16, 1, [&](int64_t begin, int64_t end) { sum += end - begin; });
    EXPECT_EQ(sum, 1 << 16);
    pinned = SingleCpuThreads();
  }).join();
  for (const std::string& cpu : before) pinned.erase(pinned.find(cpu));
  EXPECT_EQ(pinned.size(), static_cast<size_t>(cpus));
  EXPECT_EQ(std::set<std::string>(pinned.begin(), pinned.end()).size(), static_cast<size_t>(cpus))
      << "two threads of the team share a CPU";
}

TEST(ThreadPoolTest, ATeamSmallerThanTheCpusIsNotPinned) {
  const int cpus = ProcessCpuCount();
  if (cpus < 2) GTEST_SKIP() << "the process may run on " << cpus << " CPU(s)";
  std::thread([&] {
    ThreadPool pool(1);
    pool.PinTeamOfCallingThread();
    EXPECT_EQ(ProcessCpuCount(), cpus) << "a one-thread pool pinned its caller";
  }).join();
}

}  // namespace
}  // namespace onnx_amp
