// Executor: plan building, input checks, buffer reuse, capture, unsupported ops.
#include "runtime/executor/executor.h"

#include <gtest/gtest.h>

#include "tests/runtime/test_graphs.h"
#include "tests/runtime/test_kernels.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::MakeModel;
using testing::TensorValue;

constexpr int64_t kLength = 1024;
constexpr size_t kBytes = kLength * sizeof(float);

// x -> op -> v1 -> op -> v2 ... -> v<n> = y
onnx::ModelProto ChainModel(const std::string& op, int length) {
  onnx::GraphProto graph;
  graph.set_name("chain");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kLength});
  std::string previous = "x";
  for (int i = 1; i <= length; ++i) {
    const std::string out = i == length ? "y" : "v" + std::to_string(i);
    AddNode(graph, op, {previous}, {out}, "n" + std::to_string(i), "test");
    previous = out;
  }
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kLength});
  return MakeModel(graph);
}

Tensor Iota(int64_t length, float start = 0) {
  Tensor t = Tensor::Empty(DType::kFloat32, {length});
  for (int64_t i = 0; i < length; ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

class ExecutorTest : public ::testing::Test {
 protected:
  // The executor takes its own copy of the model.
  std::unique_ptr<Executor> Make(onnx::ModelProto model, ExecutorOptions options = {}) {
    options.kernels = &registry_;
    options.num_threads = 2;
    auto executor = Executor::Create(std::move(model), options);
    EXPECT_TRUE(executor.ok()) << executor.status().message();
    return executor.ok() ? std::move(executor).value() : nullptr;
  }
  KernelRegistry registry_ = testing::MakeTestRegistry();
};

TEST_F(ExecutorTest, ChainReusesTwoBuffers) {
  const onnx::ModelProto model = ChainModel("AddOneCopy", 10);
  auto executor = Make(model);
  ASSERT_NE(executor, nullptr);
  auto result = executor->Run({{"x", Iota(kLength)}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->outputs.size(), 1u);
  EXPECT_EQ(result->outputs[0].name, "y");
  const Tensor& y = result->outputs[0].tensor;
  for (int64_t i = 0; i < kLength; ++i) ASSERT_EQ(y.data<float>()[i], static_cast<float>(i) + 10.0f);
  // Each step reads one dying tensor and writes a new one: two buffers alternate.
  EXPECT_EQ(result->stats.peak_live_bytes, 2 * kBytes);
  EXPECT_EQ(result->stats.allocated_bytes, 2 * kBytes);
  EXPECT_EQ(result->stats.sum_tensor_bytes, 10 * kBytes);
  EXPECT_EQ(result->stats.buffer_reuses, 8);
  EXPECT_EQ(result->stats.inplace_reuses, 0);
  EXPECT_EQ(result->stats.op_times.at("AddOneCopy").calls, 10);
}

TEST_F(ExecutorTest, ChainRunsInPlace) {
  const onnx::ModelProto model = ChainModel("AddOne", 10);
  auto executor = Make(model);
  ASSERT_NE(executor, nullptr);
  const Tensor x = Iota(kLength);
  auto result = executor->Run({{"x", x}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const Tensor& y = result->outputs[0].tensor;
  for (int64_t i = 0; i < kLength; ++i) ASSERT_EQ(y.data<float>()[i], static_cast<float>(i) + 10.0f);
  // The first step must not overwrite the caller's input; the nine after it run in place.
  for (int64_t i = 0; i < kLength; ++i) ASSERT_EQ(x.data<float>()[i], static_cast<float>(i));
  EXPECT_EQ(result->stats.inplace_reuses, 9);
  EXPECT_EQ(result->stats.peak_live_bytes, kBytes);
  EXPECT_EQ(result->stats.allocated_bytes, kBytes);
}

TEST_F(ExecutorTest, SecondRunGivesSameResult) {
  const onnx::ModelProto model = ChainModel("AddOne", 4);
  auto executor = Make(model);
  ASSERT_NE(executor, nullptr);
  for (int run = 0; run < 2; ++run) {
    auto result = executor->Run({{"x", Iota(kLength, 5)}});
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->outputs[0].tensor.data<float>()[3], 12.0f);
  }
}

TEST_F(ExecutorTest, CaptureAllKeepsEveryIntermediate) {
  const onnx::ModelProto model = ChainModel("AddOne", 5);
  ExecutorOptions options;
  options.capture_all = true;
  auto executor = Make(model, options);
  ASSERT_NE(executor, nullptr);
  auto result = executor->Run({{"x", Iota(kLength)}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  // x, v1..v4, y
  ASSERT_EQ(result->captured.size(), 6u);
  for (int k = 1; k <= 4; ++k) {
    const Tensor& v = result->captured.at("v" + std::to_string(k));
    for (int64_t i = 0; i < kLength; ++i) ASSERT_EQ(v.data<float>()[i], static_cast<float>(i + k)) << "v" << k;
  }
  EXPECT_EQ(result->captured.at("y").data<float>()[7], 12.0f);
  // Captured tensors stay alive, so nothing is overwritten in place.
  EXPECT_EQ(result->stats.inplace_reuses, 0);
  EXPECT_EQ(result->stats.peak_live_bytes, 5 * kBytes);
}

TEST_F(ExecutorTest, CaptureByName) {
  const onnx::ModelProto model = ChainModel("AddOne", 5);
  ExecutorOptions options;
  options.capture = {"v2"};
  auto executor = Make(model, options);
  ASSERT_NE(executor, nullptr);
  auto result = executor->Run({{"x", Iota(kLength)}});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->captured.size(), 1u);
  const Tensor& v2 = result->captured.at("v2");
  for (int64_t i = 0; i < kLength; ++i) ASSERT_EQ(v2.data<float>()[i], static_cast<float>(i + 2));
  EXPECT_EQ(result->outputs[0].tensor.data<float>()[0], 5.0f);
}

TEST_F(ExecutorTest, CaptureOfUnknownNameFails) {
  ExecutorOptions options;
  options.kernels = &registry_;
  options.capture = {"nope"};
  auto executor = Executor::Create(ChainModel("AddOne", 2), options);
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(executor.status().message().find("'nope'"), std::string::npos);
}

TEST_F(ExecutorTest, UnsupportedOpsAreAllListedBeforeRunning) {
  onnx::GraphProto graph;
  graph.set_name("g");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {4});
  AddNode(graph, "AddOne", {"x"}, {"a"}, "ok1", "test");
  AddNode(graph, "Frobnicate", {"a"}, {"b"}, "bad1", "test");
  AddNode(graph, "AddOne", {"b"}, {"c"}, "ok2", "test");
  AddNode(graph, "Twiddle", {"c"}, {"y"}, "bad2", "test");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {4});
  const int calls_before = testing::test_kernel_calls;
  ExecutorOptions options;
  options.kernels = &registry_;
  auto executor = Executor::Create(MakeModel(graph), options);
  ASSERT_FALSE(executor.ok());
  EXPECT_EQ(executor.status().code(), ErrorCode::kUnsupported);
  const std::string& message = executor.status().message();
  EXPECT_NE(message.find("2 nodes"), std::string::npos) << message;
  EXPECT_NE(message.find("'bad1' (Frobnicate, domain test)"), std::string::npos) << message;
  EXPECT_NE(message.find("'bad2' (Twiddle, domain test)"), std::string::npos) << message;
  EXPECT_EQ(message.find("ok1"), std::string::npos) << message;
  EXPECT_EQ(testing::test_kernel_calls, calls_before);
}

TEST_F(ExecutorTest, KernelErrorNamesTheNode) {
  onnx::GraphProto graph;
  graph.set_name("g");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {4});
  AddNode(graph, "Fail", {"x"}, {"y"}, "breaker", "test");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {4});
  auto executor = Make(MakeModel(graph));
  ASSERT_NE(executor, nullptr);
  auto result = executor->Run({{"x", Iota(4)}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kNumeric);
  EXPECT_EQ(result.status().message(), "node 'breaker' (Fail): asked to fail");
}

class InputCheckTest : public ExecutorTest {
 protected:
  void SetUp() override {
    onnx::GraphProto graph;
    graph.set_name("two_inputs");
    *graph.add_input() = TensorValue("a", DType::kFloat32, {-1, 3}, {"batch", ""});
    *graph.add_input() = TensorValue("b", DType::kFloat32, {-1, 3}, {"batch", ""});
    AddNode(graph, "AddTest", {"a", "b"}, {"y"}, "add", "test");
    *graph.add_output() = TensorValue("y", DType::kFloat32, {-1, 3}, {"batch", ""});
    model_ = MakeModel(graph);
    executor_ = Make(model_);
    ASSERT_NE(executor_, nullptr);
  }

  Status RunWith(std::map<std::string, Tensor> feeds) {
    const int calls_before = testing::test_kernel_calls;
    auto result = executor_->Run(feeds);
    if (!result.ok()) EXPECT_EQ(testing::test_kernel_calls, calls_before) << "a node ran before the check failed";
    return result.ok() ? Status::Ok() : result.status();
  }

  onnx::ModelProto model_;
  std::unique_ptr<Executor> executor_;
};

TEST_F(InputCheckTest, AcceptsMatchingInputs) {
  EXPECT_TRUE(RunWith({{"a", Tensor::Zeros(DType::kFloat32, {2, 3})}, {"b", Tensor::Zeros(DType::kFloat32, {2, 3})}}).ok());
}

TEST_F(InputCheckTest, MissingInput) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat32, {2, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kNotFound);
  EXPECT_EQ(status.message(), "missing input 'b' (float[batch,3])");
}

TEST_F(InputCheckTest, UnknownInput) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat32, {2, 3})},
                                 {"b", Tensor::Zeros(DType::kFloat32, {2, 3})},
                                 {"c", Tensor::Zeros(DType::kFloat32, {2, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "unknown input 'c'; the model's inputs are 'a', 'b'");
}

TEST_F(InputCheckTest, WrongDType) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat16, {2, 3})}, {"b", Tensor::Zeros(DType::kFloat32, {2, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "input 'a': expected float, got float16");
}

TEST_F(InputCheckTest, WrongRank) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat32, {6})}, {"b", Tensor::Zeros(DType::kFloat32, {2, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("input 'a': expected rank 2"), std::string::npos) << status.message();
}

TEST_F(InputCheckTest, WrongStaticDim) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat32, {2, 4})}, {"b", Tensor::Zeros(DType::kFloat32, {2, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("input 'a': dim 1 must be 3"), std::string::npos) << status.message();
}

TEST_F(InputCheckTest, SymbolicDimMustAgree) {
  const Status status = RunWith({{"a", Tensor::Zeros(DType::kFloat32, {2, 3})}, {"b", Tensor::Zeros(DType::kFloat32, {5, 3})}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "input 'b': dim 'batch' is 5 here but 2 in input 'a'");
}

TEST_F(ExecutorTest, InitializerBackedInputIsOptional) {
  onnx::GraphProto graph;
  graph.set_name("g");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {2});
  *graph.add_input() = TensorValue("w", DType::kFloat32, {2});
  onnx::TensorProto* w = graph.add_initializer();
  w->set_name("w");
  w->set_data_type(ToOnnx(DType::kFloat32));
  w->add_dims(2);
  w->add_float_data(10.0f);
  w->add_float_data(20.0f);
  AddNode(graph, "AddTest", {"x", "w"}, {"y"}, "add", "test");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {2});
  const onnx::ModelProto model = MakeModel(graph);
  auto executor = Make(model);
  ASSERT_NE(executor, nullptr);
  auto with_default = executor->Run({{"x", Iota(2)}});
  ASSERT_TRUE(with_default.ok()) << with_default.status().message();
  EXPECT_EQ(with_default->outputs[0].tensor.data<float>()[1], 21.0f);
  auto overridden = executor->Run({{"x", Iota(2)}, {"w", Iota(2, 100)}});
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->outputs[0].tensor.data<float>()[1], 102.0f);
}

}  // namespace
}  // namespace onnx_amp
