// A ReluGrad that reads a MaxPoolGrad's dX, with the pool's X as its Y, folds into the
// MaxPoolGrad (plan_fusion.h FuseReluGrads): the fused step gives the bits of the two
// steps, in every float dtype, on the 2x2 tiling kernels (AVX-512 and portable) and on
// the general pools' paths, with ties, NaN, signed zeros and negative values in Y and
// infinities and NaN in dY (a slope of 0 keeps dY's sign and turns inf into NaN).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/float16.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/executor/executor.h"
#include "tests/ops/dnn_test_util.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddNode;
using testing::Calls;
using testing::FilledTensor;
using testing::RunPlan;
using testing::TensorValue;

struct PoolCase {
  Shape y;  // [N, C, spatial...]
  std::vector<int64_t> kernel, strides, pads;
};

Shape PooledShape(const PoolCase& c) {
  Shape shape{c.y[0], c.y[1]};
  const size_t rank = c.kernel.size();
  for (size_t i = 0; i < rank; ++i) {
    shape.push_back((c.y[2 + i] + c.pads[i] + c.pads[rank + i] - c.kernel[i]) / c.strides[i] + 1);
  }
  return shape;
}

// MaxPoolGrad(dp, y) -> dy; ReluGrad(dy, y) -> dx.
onnx::ModelProto PoolThenReluGrad(const PoolCase& c, DType dtype) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::OperatorSetIdProto* custom = model.add_opset_import();
  custom->set_domain(std::string(kOnnxAmpDomain));
  custom->set_version(1);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("pool_relu_grad");
  *graph.add_input() = TensorValue("dp", dtype, PooledShape(c));
  *graph.add_input() = TensorValue("y", dtype, c.y);
  onnx::NodeProto* pool = AddNode(graph, "MaxPoolGrad", {"dp", "y"}, {"dy"}, "pool_grad", std::string(kOnnxAmpDomain));
  for (const auto& [name, values] : {std::pair<const char*, const std::vector<int64_t>*>{"kernel_shape", &c.kernel},
                                     {"strides", &c.strides},
                                     {"pads", &c.pads}}) {
    onnx::AttributeProto* attribute = pool->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::INTS);
    for (int64_t value : *values) attribute->add_ints(value);
  }
  AddNode(graph, "ReluGrad", {"dy", "y"}, {"dx"}, "relu_grad", std::string(kOnnxAmpDomain));
  *graph.add_output() = TensorValue("dx", dtype, c.y);
  return model;
}

// Y on a coarse grid (ties within windows), negative values, both zeros and NaN; dP
// uniform with infinities, NaN and negative values.
std::map<std::string, Tensor> Feeds(const PoolCase& c, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> level(-3, 4);
  std::uniform_real_distribution<double> uniform(-2.0, 2.0);
  std::vector<double> y(static_cast<size_t>(NumElements(c.y)));
  for (double& v : y) v = level(gen) * 0.5;
  const double specials[] = {-0.0, 0.0, std::numeric_limits<double>::quiet_NaN(), -1.0};
  for (size_t i = 3; i < y.size(); i += 11) y[i] = specials[(i / 11) % 4];
  std::vector<double> dp(static_cast<size_t>(NumElements(PooledShape(c))));
  for (double& v : dp) v = uniform(gen);
  const double infinity = std::numeric_limits<double>::infinity();
  const double wild[] = {infinity, -infinity, std::numeric_limits<double>::quiet_NaN(), -0.0};
  for (size_t i = 2; i < dp.size(); i += 7) dp[i] = wild[(i / 7) % 4];
  return {{"dp", FilledTensor(dtype, PooledShape(c), dp)}, {"y", FilledTensor(dtype, c.y, y)}};
}

const PoolCase kCases[] = {
    // 2x2 stride 2 tiling the plane: rows ending inside, at and past 32 columns.
    {{2, 3, 28, 28}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
    {{1, 2, 4, 34}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
    {{1, 2, 2, 98}, {2, 2}, {2, 2}, {0, 0, 0, 0}},
    // Overlapping 2-D windows with padding (a dX element may sum several dY).
    {{1, 2, 17, 19}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
    // A 3-D pool (the window table's loops).
    {{1, 2, 5, 6, 7}, {2, 2, 2}, {2, 1, 2}, {0, 0, 0, 0, 1, 0}},
};

void ExpectFusedMatchesTwoSteps(DType dtype) {
  uint32_t seed = 10;
  for (const PoolCase& c : kCases) {
    const std::string label = std::string(DTypeName(dtype)) + " Y" + ShapeToString(c.y);
    const std::map<std::string, Tensor> feeds = Feeds(c, dtype, ++seed);
    const RunResult fused = RunPlan(PoolThenReluGrad(c, dtype), true, feeds);
    const RunResult apart = RunPlan(PoolThenReluGrad(c, dtype), false, feeds);
    ASSERT_EQ(fused.outputs.size(), 1u) << label;
    ASSERT_EQ(apart.outputs.size(), 1u) << label;
    EXPECT_EQ(Calls(fused, "MaxPoolGrad+ReluGrad"), 1) << label;
    EXPECT_EQ(Calls(apart, "ReluGrad"), 1) << label;
    const Tensor& a = fused.outputs[0].tensor;
    const Tensor& b = apart.outputs[0].tensor;
    ASSERT_EQ(a.dtype(), b.dtype()) << label;
    ASSERT_EQ(a.shape(), b.shape()) << label;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << label;
  }
}

TEST(ReluGradFusionTest, MaxPoolGradWithTheReluSlopeGivesTheTwoStepsBits) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) ExpectFusedMatchesTwoSteps(dtype);
}

// The 2x2 pools again on the portable loops (the AVX-512 kernel above, where the CPU has it).
TEST(ReluGradFusionTest, PortableTilingKernelGivesTheTwoStepsBits) {
  const testing::ScopedPool2x2Avx512 portable(false);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) ExpectFusedMatchesTwoSteps(dtype);
}

// Overlapping windows that all pick one negative Y (slope 0) sum dY past float16's range:
// the MaxPoolGrad of the two steps stores infinity there and the ReluGrad makes it NaN
// (inf * 0), so the fused step must round the sum before applying the slope.
TEST(ReluGradFusionTest, Float16SumPastTheRangeGivesTheTwoStepsNaN) {
  const PoolCase c{{1, 1, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}};
  std::vector<double> y(25, -1.0);
  y[6] = -0.5;  // (1, 1): inside all four windows of rows and columns 0..1, the max of each
  const std::vector<double> dp(static_cast<size_t>(NumElements(PooledShape(c))), 30000.0);
  const std::map<std::string, Tensor> feeds{{"dp", FilledTensor(DType::kFloat16, PooledShape(c), dp)},
                                            {"y", FilledTensor(DType::kFloat16, c.y, y)}};
  const RunResult fused = RunPlan(PoolThenReluGrad(c, DType::kFloat16), true, feeds);
  const RunResult apart = RunPlan(PoolThenReluGrad(c, DType::kFloat16), false, feeds);
  ASSERT_EQ(fused.outputs.size(), 1u);
  ASSERT_EQ(apart.outputs.size(), 1u);
  EXPECT_EQ(Calls(fused, "MaxPoolGrad+ReluGrad"), 1);
  EXPECT_TRUE(std::isnan(apart.outputs[0].tensor.data<Float16>()[6].ToFloat()));
  const Tensor& a = fused.outputs[0].tensor;
  EXPECT_EQ(std::memcmp(a.raw_data(), apart.outputs[0].tensor.raw_data(), a.bytes()), 0);
}

// A dX that something else reads too (here: a graph output) keeps its own step.
TEST(ReluGradFusionTest, ObservedPoolGradientIsNotFolded) {
  const PoolCase& c = kCases[0];
  onnx::ModelProto model = PoolThenReluGrad(c, DType::kFloat32);
  *model.mutable_graph()->add_output() = TensorValue("dy", DType::kFloat32, c.y);
  const RunResult result = RunPlan(model, true, Feeds(c, DType::kFloat32, 3));
  EXPECT_EQ(Calls(result, "MaxPoolGrad"), 1);
  EXPECT_EQ(Calls(result, "ReluGrad"), 1);
}

}  // namespace
}  // namespace onnx_amp
