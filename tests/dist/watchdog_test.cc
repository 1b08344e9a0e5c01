// The collective watchdog ends a rank stuck in a collective past its timeout, with a line
// naming the rank and the collective, and leaves a completed collective alone.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/dist/collective_watchdog.h"

namespace onnx_amp {
namespace {

using namespace std::chrono_literals;

TEST(CollectiveWatchdog, EndsARankStuckPastTheTimeout) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CollectiveWatchdog watchdog(200ms, 1, 2);
        watchdog.Arm("the gradient all-reduce of step 3 (bucket 1 of 1)");
        std::this_thread::sleep_for(10s);  // never reached: the watchdog ends the process first
      },
      ::testing::ExitedWithCode(1),
      "rank 1 of 2: the gradient all-reduce of step 3 \\(bucket 1 of 1\\) did not complete within 0.2 s: another "
      "rank has died or stopped responding");
}

TEST(CollectiveWatchdog, LeavesCompletedCollectivesAlone) {
  CollectiveWatchdog watchdog(100ms, 0, 2);
  for (int i = 0; i < 5; ++i) {
    watchdog.Arm("a quick all-reduce");
    std::this_thread::sleep_for(30ms);
    watchdog.Disarm();
  }
  std::this_thread::sleep_for(300ms);  // disarmed: three timeouts pass quietly
  SUCCEED();
}

}  // namespace
}  // namespace onnx_amp
