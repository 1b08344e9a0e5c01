// ExecutorRunOptions::output_ready: each graph output is reported once, as soon as the
// step producing it (or, for an Identity, the value it views) has finished, with the value
// the run hands back; an error from the callback stops the run.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/executor/executor.h"
#include "tests/runtime/test_graphs.h"
#include "tests/runtime/test_kernels.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::MakeModel;
using testing::TensorValue;
using testing::test_kernel_calls;

constexpr int64_t kLength = 64;

// x -> n1 -> v1 -> n2 -> v2 -> ... -> n6 -> y (test.AddOne, which may run in place), and
// w = Identity(v1) as the last node. Outputs in declaration order: y, v2, x, w.
onnx::ModelProto ReportedModel() {
  onnx::GraphProto graph;
  graph.set_name("reported");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kLength});
  std::string previous = "x";
  for (int i = 1; i <= 6; ++i) {
    const std::string out = i == 6 ? "y" : "v" + std::to_string(i);
    AddNode(graph, "AddOne", {previous}, {out}, "n" + std::to_string(i), "test");
    previous = out;
  }
  AddNode(graph, "Identity", {"v1"}, {"w"}, "last");
  for (const char* name : {"y", "v2", "x", "w"}) *graph.add_output() = TensorValue(name, DType::kFloat32, {kLength});
  return MakeModel(graph);
}

Tensor Zeros() { return Tensor::Zeros(DType::kFloat32, {kLength}); }

struct Report {
  size_t index;
  int kernel_calls;  // test kernels run in this run before the report
  Tensor value;      // a copy taken in the callback
};

class OutputReadyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExecutorOptions options;
    options.kernels = &registry_;
    options.num_threads = 1;
    auto executor = Executor::Create(ReportedModel(), options);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    executor_ = std::move(executor).value();
  }

  // Runs on zeros, recording each report; `fail_at` makes that output's report an error.
  Expected<RunResult> Run(std::vector<Report>& reports, size_t fail_at = SIZE_MAX) {
    const int base = test_kernel_calls.load();
    ExecutorRunOptions options;
    options.output_ready = [&, base](size_t index, const Tensor& value) -> Status {
      Tensor copy = Tensor::Empty(value.dtype(), value.shape());
      std::memcpy(copy.raw_data(), value.raw_data(), value.bytes());
      reports.push_back({index, test_kernel_calls.load() - base, copy});
      if (index == fail_at) return InvalidArgument("stop at output " + std::to_string(index));
      return Status::Ok();
    };
    return executor_->Run({{"x", Zeros()}}, options);
  }

  KernelRegistry registry_ = testing::MakeTestRegistry();
  std::unique_ptr<Executor> executor_;
};

TEST_F(OutputReadyTest, ReportsEachOutputWhenItsValueIsFinal) {
  std::vector<Report> reports;
  Expected<RunResult> run = Run(reports);
  ASSERT_TRUE(run.ok()) << run.status().message();
  // x before any node; w (a view of v1) after n1, long before its Identity, the last node,
  // runs; v2 after n2; y after n6.
  ASSERT_EQ(reports.size(), 4u);
  const std::vector<size_t> want_order = {2, 3, 1, 0};
  const std::vector<int> want_calls = {0, 1, 2, 6};
  const std::vector<float> want_value = {0, 1, 2, 6};
  std::vector<size_t> order;
  for (size_t k = 0; k < reports.size(); ++k) {
    order.push_back(reports[k].index);
    EXPECT_EQ(reports[k].kernel_calls, want_calls[k]) << "report " << k;
    EXPECT_EQ(reports[k].value.data<float>()[kLength - 1], want_value[k]) << "report " << k;
    // The value reported is the value handed back: nothing (an in-place AddOne) wrote it later.
    const Tensor& final_value = run->outputs[reports[k].index].tensor;
    EXPECT_EQ(std::memcmp(final_value.raw_data(), reports[k].value.raw_data(), final_value.bytes()), 0)
        << "output " << run->outputs[reports[k].index].name << " changed after its report";
  }
  EXPECT_EQ(order, want_order);
  EXPECT_EQ(executor_->output_completion_order(), want_order);
}

TEST_F(OutputReadyTest, AnErrorFromTheCallbackStopsTheRun) {
  std::vector<Report> reports;
  Expected<RunResult> run = Run(reports, /*fail_at=*/1);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("stop at output 1"), std::string::npos) << run.status().message();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports.back().kernel_calls, 2) << "no node runs after the failing report";
  // The executor runs normally afterwards, without a callback.
  Expected<RunResult> again = executor_->Run({{"x", Zeros()}});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->outputs[0].tensor.data<float>()[0], 6.0f);
}

}  // namespace
}  // namespace onnx_amp
