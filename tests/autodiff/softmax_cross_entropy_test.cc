// SoftmaxCrossEntropyLoss: its gradient rule makes the forward node emit log_prob and
// feeds it to the fused SoftmaxCrossEntropyLossGrad, whose kernel is checked here
// against central differences of the loss computed in double on the host (the forward
// op has no CPU kernel yet, so the gradient-check table skips it). log_prob comes from
// the LogSoftmax kernel; the kernel under test works in float32, so the tolerance is a
// few float32 roundings of O(1) values over a step of h = 1e-4 in double (truncation
// h^2 * O(1) is negligible).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "ops/gradient_context.h"
#include "ops/onnx_amp_schemas.h"
#include "runtime/autodiff/autodiff.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/executor/executor.h"

namespace onnx_amp {
namespace {

struct SceCase {
  std::string name;
  int64_t n, classes, spatial;
  std::vector<int64_t> labels;  // n * spatial
  std::vector<double> weights;  // empty: none
  std::string reduction;
  bool ignore = false;
  int64_t ignore_index = 0;
};

// The ONNX definition, in double.
double HostLoss(const SceCase& c, const std::vector<double>& scores) {
  double total = 0.0;
  double weight_sum = 0.0;
  for (int64_t b = 0; b < c.n; ++b) {
    for (int64_t p = 0; p < c.spatial; ++p) {
      const int64_t label = c.labels[b * c.spatial + p];
      if (c.ignore && label == c.ignore_index) continue;
      double max = -INFINITY;
      for (int64_t k = 0; k < c.classes; ++k) max = std::max(max, scores[(b * c.classes + k) * c.spatial + p]);
      double sum = 0.0;
      for (int64_t k = 0; k < c.classes; ++k) sum += std::exp(scores[(b * c.classes + k) * c.spatial + p] - max);
      const double log_prob = scores[(b * c.classes + label) * c.spatial + p] - max - std::log(sum);
      const double w = c.weights.empty() ? 1.0 : c.weights[label];
      total += -w * log_prob;
      weight_sum += w;
    }
  }
  return c.reduction == "mean" ? total / weight_sum : total;
}

onnx::ValueInfoProto FloatInput(const std::string& name, const Shape& shape) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape();  // rank 0 when `shape` is empty
  for (int64_t dim : shape) tensor->mutable_shape()->add_dim()->set_dim_value(dim);
  return info;
}

TEST(SoftmaxCrossEntropyLossGrad, MatchesCentralDifferencesOfTheHostLoss) {
  RegisterOnnxAmpOpSchemas();
  const std::vector<SceCase> cases = {
      {"mean", 3, 4, 1, {2, 0, 3}, {}, "mean"},
      {"sum_weights_ignore", 2, 3, 2, {0, 1, 2, 2}, {0.5, 1.0, 2.0}, "sum", true, 1},
      {"mean_weights", 2, 3, 2, {0, 1, 2, 2}, {0.5, 1.0, 2.0}, "mean"},
  };
  for (const SceCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape shape = c.spatial == 1 ? Shape{c.n, c.classes} : Shape{c.n, c.classes, c.spatial};
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(18);
    onnx::OperatorSetIdProto* training = model.add_opset_import();
    training->set_domain(std::string(kOnnxAmpDomain));
    training->set_version(1);
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name("sce");
    *graph->add_input() = FloatInput("S", shape);
    *graph->add_input() = FloatInput("dloss", {});
    onnx::TensorProto* labels = graph->add_initializer();
    labels->set_name("labels");
    labels->set_data_type(onnx::TensorProto::INT64);
    labels->add_dims(c.n);
    if (c.spatial != 1) labels->add_dims(c.spatial);
    for (int64_t label : c.labels) labels->add_int64_data(label);
    onnx::NodeProto* log_softmax = graph->add_node();
    log_softmax->set_op_type("LogSoftmax");
    log_softmax->add_input("S");
    log_softmax->add_output("log_prob");
    *log_softmax->add_attribute() = MakeAttribute("axis", int64_t{1});
    onnx::NodeProto* grad = graph->add_node();
    grad->set_op_type("SoftmaxCrossEntropyLossGrad");
    grad->set_domain(std::string(kOnnxAmpDomain));
    grad->add_input("dloss");
    grad->add_input("log_prob");
    grad->add_input("labels");
    if (!c.weights.empty()) {
      onnx::TensorProto* weights = graph->add_initializer();
      weights->set_name("weights");
      weights->set_data_type(onnx::TensorProto::FLOAT);
      weights->add_dims(c.classes);
      for (double w : c.weights) weights->add_float_data(static_cast<float>(w));
      grad->add_input("weights");
    }
    grad->add_output("dS");
    *grad->add_attribute() = MakeAttribute("reduction", c.reduction);
    if (c.ignore) *grad->add_attribute() = MakeAttribute("ignore_index", c.ignore_index);
    *graph->add_output() = FloatInput("dS", shape);

    auto executor = Executor::Create(model);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    std::vector<double> scores(static_cast<size_t>(NumElements(shape)));
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = std::sin(1.7 * static_cast<double>(i) + 0.3);
    Tensor s = Tensor::Empty(DType::kFloat32, shape);
    for (size_t i = 0; i < scores.size(); ++i) {
      s.data<float>()[i] = static_cast<float>(scores[i]);
      scores[i] = s.data<float>()[i];  // the host loss sees the same float32 inputs
    }
    Tensor dloss = Tensor::Empty(DType::kFloat32, {});
    dloss.data<float>()[0] = 1.0f;
    auto result = (*executor)->Run({{"S", s}, {"dloss", dloss}});
    ASSERT_TRUE(result.ok()) << result.status().message();
    const Tensor& ds = result->outputs[0].tensor;
    const double h = 1e-4;
    const double tolerance = 64.0 * std::ldexp(1.0, -24) + h * h;
    for (size_t i = 0; i < scores.size(); ++i) {
      std::vector<double> up = scores;
      std::vector<double> down = scores;
      up[i] += h;
      down[i] -= h;
      const double numeric = (HostLoss(c, up) - HostLoss(c, down)) / (2 * h);
      EXPECT_NEAR(ds.data<float>()[i], numeric, tolerance) << "dS[" << i << "]";
    }
  }
}

TEST(SoftmaxCrossEntropyLossGrad, RuleMakesTheForwardNodeEmitLogProb) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(18);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("sce");
  *graph->add_input() = FloatInput("S", {3, 4});
  onnx::TensorProto* labels = graph->add_initializer();
  labels->set_name("labels");
  labels->set_data_type(onnx::TensorProto::INT64);
  labels->add_dims(3);
  for (int64_t label : {1, 0, 3}) labels->add_int64_data(label);
  onnx::NodeProto* sce = graph->add_node();
  sce->set_name("sce");
  sce->set_op_type("SoftmaxCrossEntropyLoss");
  sce->add_input("S");
  sce->add_input("labels");
  sce->add_output("loss");
  *graph->add_output() = FloatInput("loss", {});

  AutodiffOptions options;
  options.parameters = {"S"};
  auto result = BuildGradientModel(model, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const onnx::NodeProto& forward = result->graph().node(0);
  ASSERT_EQ(forward.output_size(), 2);
  ASSERT_FALSE(forward.output(1).empty());
  bool found = false;
  for (const onnx::NodeProto& node : result->graph().node()) {
    if (node.op_type() != "SoftmaxCrossEntropyLossGrad") continue;
    found = true;
    EXPECT_EQ(node.input(1), forward.output(1));
    EXPECT_EQ(node.input(2), "labels");
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(result->graph().output(1).name(), "S_grad");
}

}  // namespace
}  // namespace onnx_amp
