// Op times summed over runs and shown per step or per run (`onnx-amp train --stats`,
// `onnx-amp run --repeat N --stats`): calls and milliseconds divided by the count, shares
// of the kernels' time, slowest first.
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
  const std::string table = FormatOpTimesPer(totals, 2, "step");
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

TEST(OpTimeTotalsTest, NamesTheUnitInTheHeaderAndTheSummary) {
  RunStats run;
  run.op_times["Gemm"] = {3, 0.006};
  run.total_seconds = 0.008;
  OpTimeTotals totals;
  totals.Add(run);
  totals.Add(run);
  totals.Add(run);
  // Three runs: 3 calls and 6 ms each.
  const std::string table = FormatOpTimesPer(totals, 3, "run");
  EXPECT_NE(table.find("calls/run     ms/run"), std::string::npos) << table;
  EXPECT_NE(table.find("Gemm                                      3      6.000  100.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("per run over 3 runs: 8.000 ms in runs, 6.000 ms in kernels"), std::string::npos) << table;
}

TEST(OpTimeTotalsTest, SaysWhenDeviceStepsCountLaunchTimes) {
  RunStats run;
  run.op_times["MatMul"] = {1, 0.001};
  run.device_steps = 1;
  OpTimeTotals totals;
  totals.Add(run);
  EXPECT_NE(FormatOpTimesPer(totals, 1, "step").find("launch times"), std::string::npos);
}

}  // namespace
}  // namespace onnx_amp
