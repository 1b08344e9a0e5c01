// Placement of a plan on a device with CPU fallback, on a host-backed device (no GPU
// needed): nodes the device has no kernel for (or none for their dtype) run on the CPU,
// one copy step joins each crossing, initializers go to the device once, inputs a
// device kernel reads on the host or only the shape of are not copied, and the results
// are those of the CPU-only run.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ops/cpu_kernels.h"
#include "ops/op_def.h"
#include "runtime/executor/executor.h"
#include "tests/runtime/host_backed_device.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::HostBackedDevice;
using testing::MakeModel;
using testing::MirrorKernels;
using testing::TensorValue;

onnx::TensorProto FloatInitializer(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<float>& values) {
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor.add_dims(d);
  for (float v : values) tensor.add_float_data(v);
  return tensor;
}

onnx::TensorProto Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto tensor;
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) tensor.add_int64_data(v);
  return tensor;
}

// x[2,3] + c -> a; Sigmoid(a) -> s; Relu(s) -> r; Reshape(r, [6]) -> y.
onnx::ModelProto CrossingModel() {
  onnx::GraphProto graph;
  graph.set_name("crossing");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {2, 3});
  *graph.add_initializer() = FloatInitializer("c", {3}, {0.5f, -1.0f, 2.0f});
  *graph.add_initializer() = Int64Initializer("shape", {6});
  AddNode(graph, "Add", {"x", "c"}, {"a"});
  AddNode(graph, "Sigmoid", {"a"}, {"s"});
  AddNode(graph, "Relu", {"s"}, {"r"});
  AddNode(graph, "Reshape", {"r", "shape"}, {"y"});
  *graph.add_output() = TensorValue("y", DType::kFloat32, {6});
  return MakeModel(graph, 17);
}

Tensor Input() {
  Tensor x = Tensor::Empty(DType::kFloat32, {2, 3});
  const float values[] = {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f};
  std::copy(std::begin(values), std::end(values), x.data<float>());
  return x;
}

// The device takes the CPU kernels of `ops` (Reshape reads its shape on the host).
HostBackedDevice DeviceWith(std::set<std::string> ops) {
  return HostBackedDevice(MirrorKernels(
      CpuKernelRegistry(), [ops](const KernelDef& def) { return def.domain.empty() && ops.count(std::string(def.op_type)); },
      [](KernelDef& def) {
        if (def.op_type == "Reshape") def.host_inputs = InputBit(1);
      }));
}

Expected<RunResult> RunOn(const onnx::ModelProto& model, Device* device) {
  ExecutorOptions options;
  options.device = device;
  options.num_threads = 1;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(model, options));
  return executor->Run({{"x", Input()}});
}

int64_t Calls(const RunResult& result, const std::string& op) {
  auto it = result.stats.op_times.find(op);
  return it == result.stats.op_times.end() ? 0 : it->second.calls;
}

void ExpectSameValues(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.num_elements(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << "at " << i;
}

TEST(DevicePlacementTest, OpWithoutDeviceKernelRunsOnCpuBetweenTwoCopies) {
  const onnx::ModelProto model = CrossingModel();
  Expected<RunResult> cpu = RunOn(model, nullptr);
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();

  HostBackedDevice device = DeviceWith({"Add", "Relu", "Reshape"});
  Expected<RunResult> placed = RunOn(model, &device);
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(Calls(*placed, "CopyToHost"), 1) << "a goes to the host for Sigmoid";
  EXPECT_EQ(Calls(*placed, "CopyToDevice"), 1) << "s goes back for Relu";
  EXPECT_EQ(Calls(*placed, "Sigmoid"), 1);
  EXPECT_EQ(Calls(*cpu, "CopyToHost") + Calls(*cpu, "CopyToDevice"), 0);
  ASSERT_EQ(placed->outputs.size(), 1u);
  EXPECT_EQ(placed->outputs[0].tensor.device(), DeviceKind::kCpu) << "outputs come back to the host";
  ExpectSameValues(placed->outputs[0].tensor, cpu->outputs[0].tensor);
  // x in, c once at load (not per run), the two copy steps, y out; Reshape's shape stays.
  EXPECT_EQ(device.copies_to_device, 3);
  EXPECT_EQ(device.copies_to_host, 2);
}

TEST(DevicePlacementTest, InitializersGoToTheDeviceOnceAndDeviceBuffersAreReused) {
  HostBackedDevice device = DeviceWith({"Add", "Relu", "Reshape"});
  ExecutorOptions options;
  options.device = &device;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(CrossingModel(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  ASSERT_TRUE((*executor)->Run({{"x", Input()}}).ok());
  const int64_t raw_after_first = device.memory_stats().raw_allocations;
  const int uploads_after_first = device.copies_to_device;
  for (int run = 0; run < 3; ++run) ASSERT_TRUE((*executor)->Run({{"x", Input()}}).ok());
  EXPECT_EQ(device.memory_stats().raw_allocations, raw_after_first) << "later runs take cached device blocks";
  EXPECT_GT(device.memory_stats().reuses, 0);
  EXPECT_EQ(device.copies_to_device - uploads_after_first, 3 * 2) << "per run: x and s, not c";
}

TEST(DevicePlacementTest, DtypeOutsideTheDeviceKernelFallsBackToCpu) {
  // The device's Add takes float16 only: the float32 Add runs on the CPU, no copies.
  HostBackedDevice device(MirrorKernels(
      CpuKernelRegistry(), [](const KernelDef& def) { return def.domain.empty() && def.op_type == "Add"; },
      [](KernelDef& def) { def.dtypes = 1u << static_cast<int>(DType::kFloat16); }));
  onnx::GraphProto graph;
  graph.set_name("add");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {2, 3});
  *graph.add_initializer() = FloatInitializer("c", {3}, {1.0f, 2.0f, 3.0f});
  AddNode(graph, "Add", {"x", "c"}, {"y"});
  *graph.add_output() = TensorValue("y", DType::kFloat32, {2, 3});
  Expected<RunResult> result = RunOn(MakeModel(graph, 17), &device);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(device.copies_to_device + device.copies_to_host, 0);
  EXPECT_FLOAT_EQ(result->outputs[0].tensor.data<float>()[0], -1.0f);
}

TEST(DevicePlacementTest, ShapeReadsADeviceTensorWithoutCopyingIt) {
  // Relu on the device; Shape (CPU) needs only r's shape; Reshape takes it on the host.
  HostBackedDevice device = DeviceWith({"Relu", "Reshape"});
  onnx::GraphProto graph;
  graph.set_name("shape");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {2, 3});
  AddNode(graph, "Relu", {"x"}, {"r"});
  AddNode(graph, "Shape", {"r"}, {"s"});
  AddNode(graph, "Reshape", {"r", "s"}, {"y"});
  *graph.add_output() = TensorValue("y", DType::kFloat32, {2, 3});
  Expected<RunResult> result = RunOn(MakeModel(graph, 17), &device);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Calls(*result, "CopyToHost") + Calls(*result, "CopyToDevice"), 0);
  EXPECT_EQ(result->outputs[0].tensor.data<float>()[5], 3.0f);
}

TEST(DevicePlacementTest, OutputsStayOnTheDeviceWhenAsked) {
  HostBackedDevice device = DeviceWith({"Add", "Relu", "Reshape", "Sigmoid"});
  ExecutorOptions options;
  options.device = &device;
  options.outputs_on_host = false;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(CrossingModel(), options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  Expected<RunResult> result = (*executor)->Run({{"x", Input()}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->outputs[0].tensor.device(), DeviceKind::kCuda);
  EXPECT_EQ(device.copies_to_host, 0);
  Expected<Tensor> host = CopyToHost(result->outputs[0].tensor, &device);
  ASSERT_TRUE(host.ok());
  EXPECT_NEAR(host->data<float>()[0], 1.0f / (1.0f + std::exp(1.5f)), 1e-7f);
}

}  // namespace
}  // namespace onnx_amp
