// A Relu, LeakyRelu or Clip that alone reads a BatchNormalization's Y folds into it
// (KernelDef::fuses_activation): the fused step gives the bits of the two steps, in
// training and inference mode and in every float dtype, with NaN, signed zeros and
// values that round to zero in Y.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/executor/executor.h"
#include "runtime/io/tensor_proto.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::Calls;
using testing::FilledTensor;
using testing::RunPlan;
using testing::TensorValue;

const Shape kShape{4, 3, 5, 7};

void AddParameter(onnx::GraphProto& graph, const std::string& name, DType dtype, const std::vector<double>& values) {
  Expected<onnx::TensorProto> proto = TensorToProto(FilledTensor(dtype, {static_cast<int64_t>(values.size())}, values), name);
  ASSERT_TRUE(proto.ok()) << proto.status().message();
  *graph.add_initializer() = *proto;
}

// x -> BatchNormalization (training_mode as given; in training its running statistics
// are outputs too) -> `activation` -> y.
onnx::ModelProto BatchNormThen(const std::string& activation, DType dtype, bool training) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("batch_norm_activation");
  *graph.add_input() = TensorValue("x", dtype, kShape);
  AddParameter(graph, "scale", dtype, {1.5, -0.75, 1e-3});
  AddParameter(graph, "bias", dtype, {-0.25, 0.5, 0.0});
  AddParameter(graph, "mean", dtype, {0.1, -0.2, 0.3});
  AddParameter(graph, "var", dtype, {0.8, 1.2, 2.0});
  std::vector<std::string> outputs{"z"};
  if (training) outputs = {"z", "running_mean", "running_var"};
  onnx::NodeProto* norm = graph.add_node();
  norm->set_op_type("BatchNormalization");
  norm->set_name("norm");
  for (const char* input : {"x", "scale", "bias", "mean", "var"}) norm->add_input(input);
  for (const std::string& output : outputs) norm->add_output(output);
  onnx::AttributeProto* mode = norm->add_attribute();
  mode->set_name("training_mode");
  mode->set_type(onnx::AttributeProto::INT);
  mode->set_i(training ? 1 : 0);
  onnx::NodeProto* act = AddNode(graph, activation, {"z"}, {"y"}, "act");
  if (activation == "LeakyRelu") {
    onnx::AttributeProto* alpha = act->add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(0.3f);
  }
  if (activation == "Clip") {
    AddParameter(graph, "lo", dtype, {-0.5});
    AddParameter(graph, "hi", dtype, {0.75});
    act->add_input("lo");
    act->add_input("hi");
  }
  *graph.add_output() = TensorValue("y", dtype, kShape);
  if (training) {
    *graph.add_output() = TensorValue("running_mean", dtype, {kShape[1]});
    *graph.add_output() = TensorValue("running_var", dtype, {kShape[1]});
  }
  return model;
}

TEST(BatchNormActivationTest, FusedStepGivesTheTwoStepsBits) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  std::vector<double> values(static_cast<size_t>(NumElements(kShape)));
  for (double& v : values) v = uniform(gen);
  // Values the inference statistics turn into Y of +-0 or tiny magnitudes (which round
  // to -0 in the low dtypes: Relu keeps -0), and NaN (one channel's statistics in training).
  const double specials[] = {0.1 + 0.25 / 1.5 * std::sqrt(0.8 + 1e-5), 0.1, -0.0, 1e-30, -1e-30,
                             std::numeric_limits<double>::quiet_NaN()};
  for (size_t i = 0; i < std::size(specials); ++i) values[i * 17] = specials[i];
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    const Tensor x = FilledTensor(dtype, kShape, values);
    for (const bool training : {false, true}) {
      for (const std::string activation : {"Relu", "LeakyRelu", "Clip"}) {
        const std::string label = std::string(DTypeName(dtype)) + (training ? " training " : " inference ") + activation;
        const onnx::ModelProto model = BatchNormThen(activation, dtype, training);
        const RunResult fused = RunPlan(model, true, {{"x", x}});
        const RunResult apart = RunPlan(model, false, {{"x", x}});
        ASSERT_EQ(fused.outputs.size(), apart.outputs.size()) << label;
        // Clip's bounds fold as float32 scalars: a float64 Clip stays a step of its own.
        const bool folds = !(dtype == DType::kFloat64 && activation == "Clip");
        EXPECT_EQ(Calls(fused, "BatchNormalization+" + activation), folds ? 1 : 0) << label;
        for (size_t k = 0; k < fused.outputs.size(); ++k) {
          const Tensor& a = fused.outputs[k].tensor;
          const Tensor& b = apart.outputs[k].tensor;
          ASSERT_EQ(a.shape(), b.shape()) << label << " output " << k;
          EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << label << " output " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace onnx_amp
