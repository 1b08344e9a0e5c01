// The executor's memory cap (ExecutorOptions::max_memory_bytes, `--max-memory`): a run
// that would allocate more for node outputs fails with an error naming the node and the
// output, and output shapes from the data (ConstantOfShape) whose element count passes
// the limit or whose bytes pass the cap fail the same way instead of exhausting memory.
#include <gtest/gtest.h>

#include "runtime/core/limits.h"
#include "runtime/executor/executor.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::MakeModel;
using testing::TensorValue;

constexpr int64_t kRows = 256;
constexpr int64_t kCols = 1024;
constexpr size_t kTensorBytes = kRows * kCols * sizeof(float);  // 1 MiB

// v1 = Relu(x); v2 = Relu(v1); y = Add(v1, v2). v1 is still needed when v2 is made, so
// two 1 MiB outputs are live at once (Add then writes into one of them in place).
onnx::ModelProto TwoLiveOutputs() {
  onnx::GraphProto graph;
  graph.set_name("two_live");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kRows, kCols});
  AddNode(graph, "Relu", {"x"}, {"v1"}, "first");
  AddNode(graph, "Relu", {"v1"}, {"v2"}, "second");
  AddNode(graph, "Add", {"v1", "v2"}, {"y"}, "sum");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kRows, kCols});
  return MakeModel(graph);
}

Expected<RunResult> RunWithCap(const onnx::ModelProto& model, size_t cap, std::map<std::string, Tensor> feeds) {
  ExecutorOptions options;
  options.num_threads = 1;
  options.max_memory_bytes = cap;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(model, options));
  return executor->Run(feeds);
}

TEST(MemoryCapTest, RunWithinTheCapSucceeds) {
  Expected<RunResult> result =
      RunWithCap(TwoLiveOutputs(), 2 * kTensorBytes, {{"x", Tensor::Zeros(DType::kFloat32, {kRows, kCols})}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->stats.allocated_bytes, 2 * kTensorBytes);
}

TEST(MemoryCapTest, OutputPastTheCapNamesNodeAndOutput) {
  Expected<RunResult> result =
      RunWithCap(TwoLiveOutputs(), 2 * kTensorBytes - 1, {{"x", Tensor::Zeros(DType::kFloat32, {kRows, kCols})}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnsupported);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("node 'second' (Relu)"), std::string::npos) << message;
  EXPECT_NE(message.find("output 'v2' [256,1024] needs 1048576 bytes more; the run has allocated 1048576"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--max-memory"), std::string::npos) << message;
}

// y = ConstantOfShape(shape), the shape an initializer.
onnx::ModelProto ConstantOfShapeModel(std::initializer_list<int64_t> dims) {
  onnx::GraphProto graph;
  graph.set_name("constant_of_shape");
  onnx::TensorProto* shape = graph.add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) shape->add_int64_data(d);
  AddNode(graph, "ConstantOfShape", {"shape"}, {"y"}, "fill");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {});
  graph.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  return MakeModel(graph);
}

TEST(MemoryCapTest, ElementCountPastTheLimitIsAnError) {
  // 2^63 elements: the unchecked byte count would overflow.
  const int64_t big = int64_t{1} << 21;
  Expected<RunResult> result = RunWithCap(ConstantOfShapeModel({big, big, big}), 0, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kInvalidModel);
  EXPECT_NE(result.status().message().find("node 'fill' (ConstantOfShape)"), std::string::npos);
  EXPECT_NE(result.status().message().find("elements"), std::string::npos) << result.status().message();
}

TEST(MemoryCapTest, OutputLargerThanMemoryIsAnErrorByDefault) {
  // 2^40 float32 elements = 4 TiB, past any machine's physical memory (the default cap).
  ASSERT_LT(PhysicalMemoryBytes(), size_t{4} << 40);
  Expected<RunResult> result = RunWithCap(ConstantOfShapeModel({int64_t{1} << 20, int64_t{1} << 20}), 0, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(result.status().message().find("output 'y' [1048576,1048576] needs 4398046511104 bytes more"),
            std::string::npos)
      << result.status().message();
}

}  // namespace
}  // namespace onnx_amp
