// A training step of the bundled CNN with its activations and their gradients stored
// channels-last (runtime/executor/plan_layouts.h) against the same step all in NCHW:
// which values the plan stores channels-last, and that the loss and every parameter
// gradient agree under each policy. The forward values and the BatchNormalization and
// max pool gradients have the NCHW bits; oneDNN's backward convolutions add their
// products in another order for channels-last operands, so the gradients agree to
// float32 rounding of those sums, and the low-precision ones to a rounding of their dtype.
// With channels-last values, each training-mode BatchNormalization hands its batch
// statistics to its gradient (plan_rewrites.h): that step gives every bit the step without
// it gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/common/float32_buffers.h"
#include "runtime/executor/executor.h"
#include "tests/train/mlp_training_graph.h"

namespace onnx_amp {
namespace {

constexpr int64_t kBatch = 8;

struct Step {
  std::vector<NamedTensor> outputs;
  std::vector<std::string> channels_last;
  std::vector<std::string> shared_statistics;
};

Step RunStep(const TrainingGraph& graph, bool channels_last, bool share_batch_statistics = true) {
  ExecutorOptions options;
  options.num_threads = 2;
  options.channels_last = channels_last;
  options.share_batch_statistics = share_batch_statistics;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(graph.train_model, options);
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return {};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Tensor x = Tensor::Empty(DType::kFloat32, {kBatch, 1, 28, 28});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = pixel(rng);
  Tensor labels = Tensor::Empty(DType::kInt64, {kBatch, 1});
  for (int64_t i = 0; i < kBatch; ++i) labels.data<int64_t>()[i] = i % 10;
  Tensor seed = Tensor::Empty(DType::kFloat32, {});
  seed.data<float>()[0] = 1024.0f;
  std::map<std::string, Tensor> feeds{{graph.data_input, x}, {graph.target_input, labels}, {graph.seed_input, seed}};
  for (const NamedTensor& parameter : graph.parameters) feeds[parameter.name] = parameter.tensor;
  Step step;
  step.channels_last = (*executor)->ChannelsLastValues();
  step.shared_statistics = (*executor)->SharedBatchStatistics();
  Expected<RunResult> result = (*executor)->Run(feeds);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (result.ok()) step.outputs = std::move(result->outputs);
  return step;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class ChannelsLastTrainingTest : public ::testing::TestWithParam<PolicyKind> {};

TEST_P(ChannelsLastTrainingTest, CnnStepMatchesNchw) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(GetParam(), "cnn.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Step nchw = RunStep(*graph, false);
  const Step last = RunStep(*graph, true);
  EXPECT_TRUE(nchw.channels_last.empty());
  // Both convolutions' outputs, the normalised activations, the first pool's output,
  // and the gradients flowing back through them; not the second pool's output (Flatten
  // reads it) nor its gradient (a Reshape makes it).
  for (const char* name : {"conv1", "pool1", "conv2", "bn1_grad/d_conv1", "bn2_grad/d_conv2", "conv2_grad/d_pool1"}) {
    EXPECT_TRUE(Contains(last.channels_last, name)) << name;
  }
  for (const char* name : {"pool2", "flatten_grad/d_pool2"}) EXPECT_FALSE(Contains(last.channels_last, name)) << name;
  ASSERT_EQ(last.outputs.size(), nchw.outputs.size());
  for (size_t i = 0; i < nchw.outputs.size(); ++i) {
    const Tensor& a = last.outputs[i].tensor;
    const Tensor& b = nchw.outputs[i].tensor;
    ASSERT_EQ(a.shape(), b.shape()) << nchw.outputs[i].name;
    const std::vector<float> x = ToFloat32(a), y = ToFloat32(b);
    float largest = 0.0f;
    for (float v : y) largest = std::max(largest, std::abs(v));
    // Sums of up to batch x 28 x 28 products (the first convolution's weight gradient),
    // rounded once more to a low-precision dtype.
    const double u_low = a.dtype() == DType::kFloat32 ? 0.0 : UnitRoundoff(a.dtype());
    for (size_t j = 0; j < y.size(); ++j) {
      const double bound = 2 * u_low * std::abs(y[j]) + 2.0 * kBatch * 28 * 28 * 0x1p-24 * largest;
      ASSERT_LE(std::abs(x[j] - y[j]), bound) << nchw.outputs[i].name << " element " << j;
    }
  }
}

// The bundled CNN with its BatchNormalizations in training mode (the batch's statistics,
// running ones updated as outputs 1 and 2), as a model exported for training has them.
Expected<TrainingGraph> TrainingModeCnn(PolicyKind policy) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/cnn.onnx");
  if (!model.ok()) return model.status();
  for (onnx::NodeProto& node : *model->mutable_graph()->mutable_node()) {
    if (node.op_type() != "BatchNormalization") continue;
    onnx::AttributeProto* training = node.add_attribute();
    training->set_name("training_mode");
    training->set_type(onnx::AttributeProto::INT);
    training->set_i(1);
    node.add_output(node.name() + "/running_mean");
    node.add_output(node.name() + "/running_var");
  }
  return testing::TrainingGraphOf(*model, policy);
}

TEST_P(ChannelsLastTrainingTest, BatchStatisticsHandedToTheGradientKeepEveryBit) {
  Expected<TrainingGraph> graph = TrainingModeCnn(GetParam());
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Step shared = RunStep(*graph, true);
  const Step recomputed = RunStep(*graph, true, false);
  EXPECT_EQ(shared.shared_statistics, (std::vector<std::string>{"conv2", "conv1"}));
  EXPECT_TRUE(recomputed.shared_statistics.empty());
  EXPECT_TRUE(RunStep(*graph, false).shared_statistics.empty()) << "NCHW plans share nothing";
  Expected<TrainingGraph> frozen = testing::MlpTrainingGraph(GetParam(), "cnn.onnx");
  ASSERT_TRUE(frozen.ok()) << frozen.status().message();
  EXPECT_TRUE(RunStep(*frozen, true).shared_statistics.empty()) << "inference-mode statistics are given, not shared";
  ASSERT_EQ(shared.outputs.size(), recomputed.outputs.size());
  for (size_t i = 0; i < shared.outputs.size(); ++i) {
    const Tensor& a = shared.outputs[i].tensor;
    const Tensor& b = recomputed.outputs[i].tensor;
    ASSERT_EQ(a.dtype(), b.dtype()) << shared.outputs[i].name;
    ASSERT_EQ(a.shape(), b.shape()) << shared.outputs[i].name;
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << shared.outputs[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, ChannelsLastTrainingTest,
                         ::testing::Values(PolicyKind::kFloat32, PolicyKind::kMixedBFloat16, PolicyKind::kMixedFloat16));

}  // namespace
}  // namespace onnx_amp
