// A ReduceSum over the leading axes of an activation gradient's dX (a bias gradient)
// folds into the gradient step (plan_fusion.h FuseLeadingAxisSums): the fused step gives
// the bits of the two steps, dX and the sums, in every float dtype, on ReluGrad's
// one-pass loop (AVX-512, and the portable one when the suite runs held to AVX2) and on
// the other gradients' path, and where there are too few columns to split among the
// threads, with NaN, infinities and signed zeros in dY and Y, widths that end inside a
// vector and row counts that end inside a pass. Axes given as a
// Constant node, an initializer or (before opset 13) an attribute fold; other axes and
// keepdims=0 do not.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/onnx_domain.h"
#include "runtime/executor/executor.h"
#include "runtime/io/tensor_proto.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::Calls;
using testing::FilledTensor;
using testing::Output;
using testing::RunPlan;
using testing::TensorValue;

enum class AxesFrom { kConstantNode, kInitializer, kAttribute };

struct SumCase {
  Shape shape;
  std::vector<int64_t> axes;
  AxesFrom from = AxesFrom::kConstantNode;
  int64_t keepdims = 1;
};

Shape SummedShape(const SumCase& c) {
  Shape shape = c.shape;
  for (int64_t axis : c.axes) shape[static_cast<size_t>(axis)] = 1;
  if (c.keepdims != 0) return shape;
  Shape kept;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (std::find(c.axes.begin(), c.axes.end(), static_cast<int64_t>(i)) == c.axes.end()) kept.push_back(shape[i]);
  }
  return kept;
}

onnx::TensorProto AxesProto(const std::vector<int64_t>& axes) {
  Tensor tensor = Tensor::Empty(DType::kInt64, {static_cast<int64_t>(axes.size())});
  std::copy(axes.begin(), axes.end(), tensor.data<int64_t>());
  Expected<onnx::TensorProto> proto = TensorToProto(tensor, "axes");
  EXPECT_TRUE(proto.ok());
  return proto.ok() ? *proto : onnx::TensorProto();
}

// `gradient`(dy, y) -> dx; ReduceSum(dx, axes) -> sums. dx is a graph output unless
// `sums_only`.
onnx::ModelProto GradientThenSum(const std::string& gradient, const SumCase& c, DType dtype, bool sums_only = false) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(c.from == AxesFrom::kAttribute ? 11 : 18);
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain(std::string(kOnnxAmpDomain));
  custom->set_version(1);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("gradient_sum");
  *graph.add_input() = TensorValue("dy", dtype, c.shape);
  *graph.add_input() = TensorValue("y", dtype, c.shape);
  AddNode(graph, gradient, {"dy", "y"}, {"dx"}, "gradient", std::string(kOnnxAmpDomain));
  if (c.from == AxesFrom::kAttribute) {
    onnx::NodeProto* sum = AddNode(graph, "ReduceSum", {"dx"}, {"sums"}, "sum");
    testing::SetIntsAttr(*sum, "axes", {});
    for (int64_t axis : c.axes) sum->mutable_attribute(0)->add_ints(axis);
  } else {
    if (c.from == AxesFrom::kInitializer) {
      *graph.add_initializer() = AxesProto(c.axes);
    } else {
      onnx::NodeProto* constant = AddNode(graph, "Constant", {}, {"axes"}, "axes");
      onnx::AttributeProto* value = constant->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      *value->mutable_t() = AxesProto(c.axes);
    }
    AddNode(graph, "ReduceSum", {"dx", "axes"}, {"sums"}, "sum");
  }
  onnx::AttributeProto* keepdims = graph.mutable_node(graph.node_size() - 1)->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(c.keepdims);
  if (!sums_only) *graph.add_output() = TensorValue("dx", dtype, c.shape);
  *graph.add_output() = TensorValue("sums", dtype, SummedShape(c));
  return model;
}

// dY uniform with infinities, NaN and signed zeros; Y uniform around 0 with NaN, both
// zeros and infinities.
std::map<std::string, Tensor> Feeds(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const size_t count = static_cast<size_t>(NumElements(shape));
  std::vector<double> dy(count), y(count);
  for (double& v : dy) v = uniform(gen);
  for (double& v : y) v = uniform(gen);
  const double wild[] = {inf, -inf, nan, -0.0, 0.0};
  for (size_t i = 5; i < count; i += 97) dy[i] = wild[(i / 97) % 5];
  const double edges[] = {-0.0, 0.0, nan, inf, -inf};
  for (size_t i = 3; i < count; i += 13) y[i] = edges[(i / 13) % 5];
  return {{"dy", FilledTensor(dtype, shape, dy)}, {"y", FilledTensor(dtype, shape, y)}};
}

void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& label) {
  ASSERT_EQ(a.dtype(), b.dtype()) << label;
  ASSERT_EQ(a.shape(), b.shape()) << label;
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << label;
}

void ExpectFoldedWithTheTwoStepsBits(const std::string& gradient, const SumCase& c, DType dtype, bool sums_only) {
  const std::string label = gradient + " " + std::string(DTypeName(dtype)) + " dX" + ShapeToString(c.shape) +
                            (sums_only ? " (sums only)" : "");
  const std::map<std::string, Tensor> feeds = Feeds(c.shape, dtype, static_cast<uint32_t>(c.shape.back()));
  const onnx::ModelProto model = GradientThenSum(gradient, c, dtype, sums_only);
  const RunResult fused = RunPlan(model, true, feeds);
  const RunResult apart = RunPlan(model, false, feeds);
  EXPECT_EQ(Calls(fused, gradient + "+ReduceSum"), 1) << label;
  EXPECT_EQ(Calls(fused, "ReduceSum"), 0) << label;
  EXPECT_EQ(Calls(apart, "ReduceSum"), 1) << label;
  ExpectSameBits(Output(fused, "sums"), Output(apart, "sums"), label + ": sums");
  if (!sums_only) ExpectSameBits(Output(fused, "dx"), Output(apart, "dx"), label + ": dX");
}

const SumCase kCases[] = {
    // Columns for every thread (the one-pass loops): rows ending inside a pass of four,
    // each thread's columns ending inside a vector.
    {{9, 2100}, {0}},
    {{2, 3, 1400}, {0}},
    {{6, 2055}, {0}},
    // Fewer columns (dX first, then the sums): widths ending inside, at and past 32.
    {{37, 70}, {0}},
    {{4, 32}, {0}},
    {{1, 5}, {0}},
    // A bias gradient of a 3-D MatMul: the batch and sequence axes.
    {{3, 5, 40}, {1, 0}},
    {{6, 33}, {0}, AxesFrom::kInitializer},
    {{6, 33}, {0}, AxesFrom::kAttribute},
};

TEST(LeadingAxisSumFusionTest, ReluGradWithItsSumsGivesTheTwoStepsBits) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const SumCase& c : kCases) ExpectFoldedWithTheTwoStepsBits("ReluGrad", c, dtype, false);
  }
}

// The generic gradient path (float32 blocks, one rounding of each dX).
TEST(LeadingAxisSumFusionTest, OtherGradientsWithTheirSumsGiveTheTwoStepsBits) {
  for (const std::string gradient : {"GeluGrad", "TanhGrad"}) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
      ExpectFoldedWithTheTwoStepsBits(gradient, kCases[0], dtype, false);
      ExpectFoldedWithTheTwoStepsBits(gradient, kCases[3], dtype, false);
      ExpectFoldedWithTheTwoStepsBits(gradient, kCases[6], dtype, false);
    }
  }
}

// A dX that only the folded sum read is still computed for it.
TEST(LeadingAxisSumFusionTest, SumsOfADXNothingElseReads) {
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    ExpectFoldedWithTheTwoStepsBits("ReluGrad", kCases[0], dtype, true);
    ExpectFoldedWithTheTwoStepsBits("ReluGrad", kCases[3], dtype, true);
  }
}

// Sums over other axes, or without keepdims, keep their ReduceSum step.
TEST(LeadingAxisSumFusionTest, OtherSumsAreNotFolded) {
  const SumCase cases[] = {
      {{6, 33}, {1}},
      {{3, 5, 40}, {1}},
      {{6, 33}, {0}, AxesFrom::kConstantNode, 0},
  };
  for (const SumCase& c : cases) {
    const std::string label = "axes " + std::to_string(c.axes[0]) + " dX" + ShapeToString(c.shape);
    const RunResult result = RunPlan(GradientThenSum("ReluGrad", c, DType::kFloat32), true,
                                     Feeds(c.shape, DType::kFloat32, 7));
    EXPECT_EQ(Calls(result, "ReluGrad"), 1) << label;
    EXPECT_EQ(Calls(result, "ReduceSum"), 1) << label;
  }
}

}  // namespace
}  // namespace onnx_amp
