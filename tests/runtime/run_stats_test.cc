// Op times summed over runs and shown per step (`onnx-amp train --stats`): calls and
// milliseconds divided by the step count, shares of the kernels' time, slowest first.
#include <gtest/gtest.h>

#include <string>

#include "runtime/executor/run_stats.h"

namespace onnx_amp {
namespace {

TEST(OpTimeTotalsTest, SumsRunsAndFormatsPerStep) {
  RunStats first;
  first.op_times["Conv"] = {2, 0.004};
  first.total_seconds = 0.005;
  RunStats second;
  second.op_times["Conv"] = {2, 0.002};
  second.op_times["Relu"] = {1, 0.002};
  second.total_seconds = 0.0045;
  OpTimeTotals totals;
  totals.Add(first);
  totals.Add(second);
  EXPECT_EQ(totals.op_times["Conv"].calls, 4);
  EXPECT_DOUBLE_EQ(totals.op_times["Conv"].seconds, 0.006);
  EXPECT_EQ(totals.op_times["Relu"].calls, 1);
  EXPECT_DOUBLE_EQ(totals.run_seconds, 0.0095);

  // Over two steps: Conv 4 calls, 6 ms -> 2 a step, 3 ms, 75% of the 8 kernel ms; Relu 0.5, 1 ms, 25%.
  const std::string table = FormatOpTimesPerStep(totals, 2);
  const size_t conv = table.find("Conv");
  const size_t relu = table.find("Relu");
  ASSERT_NE(conv, std::string::npos) << table;
  ASSERT_NE(relu, std::string::npos) << table;
  EXPECT_LT(conv, relu) << "slowest first:\n" << table;
  EXPECT_NE(table.find("Conv                                      2      3.000   75.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("Relu                                    0.5      1.000   25.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("per step over 2 steps: 4.750 ms in runs, 4.000 ms in kernels"), std::string::npos) << table;
  EXPECT_EQ(table.find("device"), std::string::npos);
}

TEST(OpTimeTotalsTest, SaysWhenDeviceStepsCountLaunchTimes) {
  RunStats run;
  run.op_times["MatMul"] = {1, 0.001};
  run.device_steps = 1;
  OpTimeTotals totals;
  totals.Add(run);
  EXPECT_NE(FormatOpTimesPerStep(totals, 1).find("launch times"), std::string::npos);
}

}  // namespace
}  // namespace onnx_amp
