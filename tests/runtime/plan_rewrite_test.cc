// Inference rewrites of the plan (runtime/executor/plan_rewrites.h): a BatchNormalization
// folded into the Conv before it, and a residual Add (and its Relu) fused into the Conv. Folding changes where the roundings fall, so the
// folded plan is checked against a float64 reference computed here from the ONNX
// definitions, with a tolerance from the dtype's unit roundoff and the accumulation
// length, and the unfused plan is held to the same bound; on the bundled CNN and ResNet
// block the folded plan is compared with the unfused one.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "converter/convert_model.h"
#include "runtime/core/float16.h"
#include "runtime/executor/executor.h"
#include "runtime/executor/random_inputs.h"
#include "runtime/io/tensor_proto.h"
#include "runtime/onnx/model_io.h"
#include "tests/runtime/plan_test_util.h"
#include "tests/runtime/test_graphs.h"

namespace onnx_amp {
namespace {

using testing::AddInitializer;
using testing::AddNode;
using testing::AsDouble;
using testing::Calls;
using testing::Converted;
using testing::Make;
using testing::Output;
using testing::RunOk;
using testing::SetIntsAttr;
using testing::TensorValue;
using testing::Uniform;

constexpr double kFloat32Roundoff = 0x1p-24;
constexpr double kBFloat16Roundoff = 0x1p-8;
constexpr double kFloat16Roundoff = 0x1p-11;

constexpr int64_t kBatch = 2, kIn = 8, kOut = 16, kSize = 10, kTaps = 9;

struct ConvBatchNorm {
  std::vector<float> weights, bias, scale, shift, mean, var;  // bias empty: none
  float epsilon = 1e-3f;
};

ConvBatchNorm RandomParameters(std::mt19937_64& rng, bool with_bias) {
  ConvBatchNorm p;
  p.weights = Uniform(rng, kOut * kIn * kTaps, -0.3f, 0.3f);
  if (with_bias) p.bias = Uniform(rng, kOut, -0.5f, 0.5f);
  // Far from the identity, so a fold that dropped or misplaced a term shows.
  p.scale = Uniform(rng, kOut, 0.5f, 2.0f);
  p.shift = Uniform(rng, kOut, -1.0f, 1.0f);
  p.mean = Uniform(rng, kOut, -1.0f, 1.0f);
  p.var = Uniform(rng, kOut, 0.25f, 4.0f);
  return p;
}

// x[2,8,10,10] -> Conv 3x3 (pads 1, bias) -> BatchNormalization -> y1, and
// x -> Conv 3x3 (pads 1, no bias) -> BatchNormalization -> Relu -> y2.
onnx::ModelProto TwoBranches(const ConvBatchNorm& a, const ConvBatchNorm& b) {
  onnx::GraphProto graph;
  graph.set_name("conv_batch_norm");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kIn, kSize, kSize});
  for (const auto& [tag, p] : {std::pair<std::string, const ConvBatchNorm*>{"1", &a}, {"2", &b}}) {
    AddInitializer(graph, "w" + tag, {kOut, kIn, 3, 3}, p->weights);
    std::vector<std::string> conv_inputs{"x", "w" + tag};
    if (!p->bias.empty()) {
      AddInitializer(graph, "b" + tag, {kOut}, p->bias);
      conv_inputs.push_back("b" + tag);
    }
    AddInitializer(graph, "scale" + tag, {kOut}, p->scale);
    AddInitializer(graph, "shift" + tag, {kOut}, p->shift);
    AddInitializer(graph, "mean" + tag, {kOut}, p->mean);
    AddInitializer(graph, "var" + tag, {kOut}, p->var);
    onnx::NodeProto* conv = graph.add_node();
    conv->set_op_type("Conv");
    conv->set_name("conv" + tag);
    for (const std::string& input : conv_inputs) conv->add_input(input);
    conv->add_output("conv" + tag);
    SetIntsAttr(*conv, "pads", {1, 1, 1, 1});
    onnx::NodeProto* norm = AddNode(graph, "BatchNormalization",
                                    {"conv" + tag, "scale" + tag, "shift" + tag, "mean" + tag, "var" + tag},
                                    {tag == "1" ? "y1" : "bn2"}, "bn" + tag);
    onnx::AttributeProto* epsilon = norm->add_attribute();
    epsilon->set_name("epsilon");
    epsilon->set_type(onnx::AttributeProto::FLOAT);
    epsilon->set_f(p->epsilon);
  }
  AddNode(graph, "Relu", {"bn2"}, {"y2"}, "relu2");
  *graph.add_output() = TensorValue("y1", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  *graph.add_output() = TensorValue("y2", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

// The float64 result of Conv + BatchNormalization (+ Relu) from the definitions, and the
// sum of the magnitudes of every term of each output (the scale of its rounding errors).
struct Reference {
  std::vector<double> value, magnitude;
};

Reference ConvBatchNormReference(const std::vector<float>& x, const ConvBatchNorm& p, bool relu) {
  Reference r;
  r.value.resize(kBatch * kOut * kSize * kSize);
  r.magnitude.resize(r.value.size());
  for (int64_t n = 0; n < kBatch; ++n) {
    for (int64_t o = 0; o < kOut; ++o) {
      const double s = p.scale[o] / std::sqrt(static_cast<double>(p.var[o]) + p.epsilon);
      const double bias = p.bias.empty() ? 0.0 : p.bias[o];
      for (int64_t h = 0; h < kSize; ++h) {
        for (int64_t w = 0; w < kSize; ++w) {
          double sum = bias, magnitude = std::abs(bias);
          for (int64_t c = 0; c < kIn; ++c) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h + kh - 1, iw = w + kw - 1;
                if (ih < 0 || ih >= kSize || iw < 0 || iw >= kSize) continue;
                const double term = static_cast<double>(x[((n * kIn + c) * kSize + ih) * kSize + iw]) *
                                    p.weights[((o * kIn + c) * 3 + kh) * 3 + kw];
                sum += term;
                magnitude += std::abs(term);
              }
            }
          }
          const size_t i = static_cast<size_t>(((n * kOut + o) * kSize + h) * kSize + w);
          const double y = (sum - p.mean[o]) * s + p.shift[o];
          r.value[i] = relu ? std::max(y, 0.0) : y;
          r.magnitude[i] = (magnitude + std::abs(p.mean[o])) * std::abs(s) + std::abs(p.shift[o]);
        }
      }
    }
  }
  return r;
}

// Error bound per output: float32 accumulates K = 72 products (plus the bias and the
// normalization's four operations), each rounding within u of the magnitudes summed.
// Mixed precision rounds x, W and the folded W * s (or the Conv output) to the low
// dtype and the result once more: four roundings of the terms and one of the result.
double Tolerance(PolicyKind policy, double magnitude, double value) {
  const double float32_bound = (kIn * kTaps + 6) * kFloat32Roundoff * magnitude;
  if (policy == PolicyKind::kFloat32) return float32_bound;
  const double u = policy == PolicyKind::kMixedBFloat16 ? kBFloat16Roundoff : kFloat16Roundoff;
  return float32_bound + u * (4 * magnitude + std::abs(value));
}

// `op_type` nodes reading a Conv's output (as X for BatchNormalization).
int ConvFedNodes(const onnx::ModelProto& model, const std::string& op_type) {
  std::set<std::string> conv_outputs;
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() == "Conv") conv_outputs.insert(node.output(0));
  }
  int count = 0;
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.op_type() != op_type) continue;
    const bool reads_conv = conv_outputs.count(node.input(0)) > 0 ||
                            (op_type == "Add" && node.input_size() > 1 && conv_outputs.count(node.input(1)) > 0);
    count += reads_conv ? 1 : 0;
  }
  return count;
}

class BatchNormFoldTest : public ::testing::TestWithParam<PolicyKind> {};

TEST_P(BatchNormFoldTest, FoldedConvMatchesFloat64ReferenceWithAndWithoutBias) {
  const PolicyKind policy = GetParam();
  std::mt19937_64 rng(21);
  const ConvBatchNorm with_bias = RandomParameters(rng, true);
  const ConvBatchNorm without_bias = RandomParameters(rng, false);
  const onnx::ModelProto model = Converted(TwoBranches(with_bias, without_bias), policy);
  std::unique_ptr<Executor> folded = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(folded && plain);

  Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, kIn, kSize, kSize});
  const std::vector<float> x_values = Uniform(rng, static_cast<size_t>(x.num_elements()), -1.0f, 1.0f);
  std::copy(x_values.begin(), x_values.end(), x.data<float>());
  const Reference reference1 = ConvBatchNormReference(x_values, with_bias, false);
  const Reference reference2 = ConvBatchNormReference(x_values, without_bias, true);

  const RunResult folded_result = RunOk(*folded, {{"x", x}});
  const RunResult plain_result = RunOk(*plain, {{"x", x}});
  // The conversion may keep a BatchNormalization in float32 behind a Cast (nothing to
  // fold then); every one that still reads its Conv directly must be folded.
  const int direct = ConvFedNodes(model, "BatchNormalization");
  if (policy != PolicyKind::kMixedFloat16) {
    EXPECT_EQ(direct, 2);
  }
  EXPECT_EQ(Calls(folded_result, "Conv+BatchNormalization") + Calls(folded_result, "Conv+BatchNormalization+Relu"),
            direct);
  // One left unfolded still takes the Relu after it.
  EXPECT_EQ(Calls(folded_result, "BatchNormalization") + Calls(folded_result, "BatchNormalization+Relu"), 2 - direct);
  EXPECT_EQ(Calls(plain_result, "BatchNormalization"), 2);
  for (const auto& [result, label] : {std::pair<const RunResult*, const char*>{&folded_result, "folded"},
                                      {&plain_result, "unfused"}}) {
    for (const auto& [name, reference] : {std::pair<const char*, const Reference*>{"y1", &reference1},
                                          {"y2", &reference2}}) {
      const std::vector<double> actual = AsDouble(Output(*result, name));
      ASSERT_EQ(actual.size(), reference->value.size());
      int failures = 0;
      for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
        const double tolerance = Tolerance(policy, reference->magnitude[i], reference->value[i]);
        if (std::abs(actual[i] - reference->value[i]) <= tolerance) continue;
        ++failures;
        ADD_FAILURE() << label << " " << name << "[" << i << "] = " << actual[i] << ", reference "
                      << reference->value[i] << ", tolerance " << tolerance;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, BatchNormFoldTest,
                         ::testing::Values(PolicyKind::kFloat32, PolicyKind::kMixedFloat16,
                                           PolicyKind::kMixedBFloat16),
                         [](const ::testing::TestParamInfo<PolicyKind>& info) {
                           return std::string(PolicyKindName(info.param));
                         });

TEST(BatchNormFoldPlanTest, ObservableConvOutputIsNotFolded) {
  std::mt19937_64 rng(5);
  onnx::ModelProto model = TwoBranches(RandomParameters(rng, true), RandomParameters(rng, false));
  *model.mutable_graph()->add_output() = TensorValue("conv1", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  std::unique_ptr<Executor> executor = Make(model, true);
  ASSERT_TRUE(executor);
  Tensor x = Tensor::Zeros(DType::kFloat32, {kBatch, kIn, kSize, kSize});
  const RunResult result = RunOk(*executor, {{"x", x}});
  EXPECT_EQ(Calls(result, "BatchNormalization"), 1);
  EXPECT_EQ(Calls(result, "Conv"), 1);
  EXPECT_EQ(Calls(result, "Conv+BatchNormalization+Relu"), 1);
}

TEST(BatchNormFoldPlanTest, TrainingModeBatchNormIsNotFolded) {
  std::mt19937_64 rng(6);
  onnx::ModelProto model = TwoBranches(RandomParameters(rng, true), RandomParameters(rng, false));
  for (onnx::NodeProto& node : *model.mutable_graph()->mutable_node()) {
    if (node.name() == "bn1") testing::SetIntAttr(node, "training_mode", 1);
  }
  std::unique_ptr<Executor> executor = Make(model, true);
  ASSERT_TRUE(executor);
  Tensor x = Tensor::Zeros(DType::kFloat32, {kBatch, kIn, kSize, kSize});
  const RunResult result = RunOk(*executor, {{"x", x}});
  EXPECT_EQ(Calls(result, "BatchNormalization"), 1);
  EXPECT_EQ(Calls(result, "Conv+BatchNormalization+Relu"), 1);
}

// x[2,16,10,10] -> Conv 3x3 (pads 1, bias) -> Add(conv, x) -> Relu -> y, the residual
// connection of a ResNet block; with `broadcast_bias`, a second Conv's output also gets
// Add(conv, c[1,16,1,1]), which broadcasts and so must stay its own step.
onnx::ModelProto ResidualBlock(const std::vector<float>& weights, const std::vector<float>& bias, bool broadcast_bias) {
  onnx::GraphProto graph;
  graph.set_name("conv_add_relu");
  *graph.add_input() = TensorValue("x", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  AddInitializer(graph, "w", {kOut, kOut, 3, 3}, weights);
  AddInitializer(graph, "b", {kOut}, bias);
  SetIntsAttr(*AddNode(graph, "Conv", {"x", "w", "b"}, {"conv"}, "conv"), "pads", {1, 1, 1, 1});
  AddNode(graph, "Add", {"conv", "x"}, {"sum"}, "add");
  AddNode(graph, "Relu", {"sum"}, {"y"}, "relu");
  *graph.add_output() = TensorValue("y", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  if (broadcast_bias) {
    AddInitializer(graph, "c", {1, kOut, 1, 1}, bias);
    SetIntsAttr(*AddNode(graph, "Conv", {"x", "w"}, {"conv2"}, "conv2"), "pads", {1, 1, 1, 1});
    AddNode(graph, "Add", {"conv2", "c"}, {"y2"}, "add2");
    *graph.add_output() = TensorValue("y2", DType::kFloat32, {kBatch, kOut, kSize, kSize});
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  *model.mutable_graph() = graph;
  return model;
}

class ConvAddFusionTest : public ::testing::TestWithParam<PolicyKind> {};

TEST_P(ConvAddFusionTest, FusedResidualMatchesFloat64Reference) {
  const PolicyKind policy = GetParam();
  std::mt19937_64 rng(33);
  const std::vector<float> weights = Uniform(rng, kOut * kOut * kTaps, -0.2f, 0.2f);
  const std::vector<float> bias = Uniform(rng, kOut, -0.5f, 0.5f);
  const onnx::ModelProto model = Converted(ResidualBlock(weights, bias, false), policy);
  std::unique_ptr<Executor> fused = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(fused && plain);
  Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, kOut, kSize, kSize});
  const std::vector<float> xv = Uniform(rng, static_cast<size_t>(x.num_elements()), -1.0f, 1.0f);
  std::copy(xv.begin(), xv.end(), x.data<float>());

  const RunResult fused_result = RunOk(*fused, {{"x", x}});
  const RunResult plain_result = RunOk(*plain, {{"x", x}});
  // As for BatchNormalization, mixed_float16 may keep the Add in float32 behind Casts.
  const int direct = ConvFedNodes(model, "Add");
  if (policy != PolicyKind::kMixedFloat16) {
    EXPECT_EQ(direct, 1);
  }
  EXPECT_EQ(Calls(fused_result, "Conv+Add+Relu"), direct);
  EXPECT_EQ(Calls(fused_result, "Add"), 1 - direct);
  EXPECT_EQ(Calls(plain_result, "Add"), 1);
  const std::vector<double> fused_y = AsDouble(Output(fused_result, "y"));
  const std::vector<double> plain_y = AsDouble(Output(plain_result, "y"));
  ASSERT_EQ(fused_y.size(), xv.size());
  ASSERT_EQ(plain_y.size(), xv.size());
  int failures = 0;
  int64_t clamped = 0;
  for (int64_t n = 0; n < kBatch; ++n) {
    for (int64_t o = 0; o < kOut; ++o) {
      for (int64_t h = 0; h < kSize; ++h) {
        for (int64_t w = 0; w < kSize; ++w) {
          const size_t i = static_cast<size_t>(((n * kOut + o) * kSize + h) * kSize + w);
          double sum = static_cast<double>(bias[o]) + xv[i];
          double magnitude = std::abs(static_cast<double>(bias[o])) + std::abs(static_cast<double>(xv[i]));
          for (int64_t c = 0; c < kOut; ++c) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h + kh - 1, iw = w + kw - 1;
                if (ih < 0 || ih >= kSize || iw < 0 || iw >= kSize) continue;
                const double term = static_cast<double>(xv[((n * kOut + c) * kSize + ih) * kSize + iw]) *
                                    weights[((o * kOut + c) * 3 + kh) * 3 + kw];
                sum += term;
                magnitude += std::abs(term);
              }
            }
          }
          const double expected = std::max(sum, 0.0);
          clamped += expected == 0.0 ? 1 : 0;
          // K = 144 products, the bias and the residual, each within u of the magnitudes.
          double tolerance = (kOut * kTaps + 4) * kFloat32Roundoff * magnitude;
          if (policy != PolicyKind::kFloat32) {
            const double u = policy == PolicyKind::kMixedBFloat16 ? kBFloat16Roundoff : kFloat16Roundoff;
            tolerance += u * (4 * magnitude + std::abs(expected));
          }
          for (const auto& [actual, label] : {std::pair<double, const char*>{fused_y[i], "fused"},
                                              {plain_y[i], "unfused"}}) {
            if (std::abs(actual - expected) <= tolerance || ++failures > 5) continue;
            ADD_FAILURE() << label << " y[" << i << "] = " << actual << ", reference " << expected;
          }
        }
      }
    }
  }
  // Both sides of the ReLU were exercised.
  EXPECT_GT(clamped, static_cast<int64_t>(xv.size() / 10));
  EXPECT_LT(clamped, static_cast<int64_t>(xv.size() * 9 / 10));
}

INSTANTIATE_TEST_SUITE_P(Policies, ConvAddFusionTest,
                         ::testing::Values(PolicyKind::kFloat32, PolicyKind::kMixedFloat16,
                                           PolicyKind::kMixedBFloat16),
                         [](const ::testing::TestParamInfo<PolicyKind>& info) {
                           return std::string(PolicyKindName(info.param));
                         });

TEST(ConvAddFusionPlanTest, BroadcastingAddStaysItsOwnStep) {
  std::mt19937_64 rng(34);
  const std::vector<float> weights = Uniform(rng, kOut * kOut * kTaps, -0.2f, 0.2f);
  const std::vector<float> bias = Uniform(rng, kOut, -0.5f, 0.5f);
  const onnx::ModelProto model = ResidualBlock(weights, bias, true);
  std::unique_ptr<Executor> fused = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(fused && plain);
  Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, kOut, kSize, kSize});
  const std::vector<float> xv = Uniform(rng, static_cast<size_t>(x.num_elements()), -1.0f, 1.0f);
  std::copy(xv.begin(), xv.end(), x.data<float>());
  const RunResult result = RunOk(*fused, {{"x", x}});
  EXPECT_EQ(Calls(result, "Conv+Add+Relu"), 1);
  EXPECT_EQ(Calls(result, "Conv"), 1);
  EXPECT_EQ(Calls(result, "Add"), 1);
  // The unfused plan computes the same broadcast Add, bit for bit.
  const RunResult expected = RunOk(*plain, {{"x", x}});
  const Tensor& a = Output(result, "y2");
  const Tensor& b = Output(expected, "y2");
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(AsDouble(a), AsDouble(b));
}

// The bundled models end in a Softmax: probabilities in [0, 1]. The folded plan differs
// from the unfused one by the roundings the fold moves, propagated through the layers;
// bounded by K u with K the longest accumulation (the Gemm's 1568 inputs in the CNN) for
// float32, and by a few roundings of the low dtype per Conv layer for mixed precision.
struct ModelCase {
  const char* file;
  PolicyKind policy;
  int folded;
};

class BundledFoldTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(BundledFoldTest, FoldedMatchesUnfusedWithinTheDtypesTolerance) {
  const ModelCase& c = GetParam();
  Expected<onnx::ModelProto> loaded = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + c.file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const onnx::ModelProto model = Converted(*loaded, c.policy);
  std::unique_ptr<Executor> folded = Make(model, true);
  std::unique_ptr<Executor> plain = Make(model, false);
  ASSERT_TRUE(folded && plain);
  const double tolerance = c.policy == PolicyKind::kFloat32          ? 1568 * kFloat32Roundoff
                           : c.policy == PolicyKind::kMixedBFloat16 ? 8 * kBFloat16Roundoff
                                                                     : 8 * kFloat16Roundoff;
  for (uint64_t seed : {1u, 2u}) {
    std::mt19937_64 rng(seed);
    std::map<std::string, Tensor> feeds;
    for (const InputSpec& spec : folded->inputs()) feeds[spec.name] = RandomInput(spec, {{"batch", 4}}, rng).value();
    const RunResult expected = RunOk(*plain, feeds);
    const RunResult actual = RunOk(*folded, feeds);
    int64_t folded_steps = 0;
    for (const auto& [label, time] : actual.stats.op_times) {
      if (label.rfind("Conv+BatchNormalization", 0) == 0) folded_steps += time.calls;
    }
    EXPECT_EQ(folded_steps, c.folded);
    EXPECT_EQ(Calls(actual, "BatchNormalization"), 0);
    ASSERT_EQ(expected.outputs.size(), actual.outputs.size());
    for (size_t o = 0; o < expected.outputs.size(); ++o) {
      const std::vector<double> a = AsDouble(expected.outputs[o].tensor), b = AsDouble(actual.outputs[o].tensor);
      ASSERT_EQ(a.size(), b.size());
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      EXPECT_LE(worst, tolerance) << c.file << " output " << expected.outputs[o].name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BundledFoldTest,
                         ::testing::Values(ModelCase{"cnn.onnx", PolicyKind::kFloat32, 2},
                                           ModelCase{"cnn.onnx", PolicyKind::kMixedBFloat16, 2},
                                           ModelCase{"cnn.onnx", PolicyKind::kMixedFloat16, 2},
                                           ModelCase{"resnet_block.onnx", PolicyKind::kFloat32, 2},
                                           ModelCase{"resnet_block.onnx", PolicyKind::kMixedBFloat16, 2},
                                           ModelCase{"resnet_block.onnx", PolicyKind::kMixedFloat16, 2}),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           std::string model = info.param.file;
                           return model.substr(0, model.find('.')) + "_" +
                                  std::string(PolicyKindName(info.param.policy));
                         });

}  // namespace
}  // namespace onnx_amp
