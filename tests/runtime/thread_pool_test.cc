#include "runtime/exec/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace onnx_amp
