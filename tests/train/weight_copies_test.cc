// FoldWeightCasts on the bundled MLP's training graphs: under a mixed policy every
// parameter's Cast to the low type leaves the graph and its output becomes a graph
// input of that type; the folded graph fed the copies computes the same loss and
// gradients, bit for bit, as the graph fed the float32 weights; float32 folds nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "runtime/executor/executor.h"
#include "runtime/train/weight_copies.h"
#include "tests/train/mlp_training_graph.h"

namespace onnx_amp {
namespace {

std::map<std::string, Tensor> BatchFeeds(const TrainingGraph& graph) {
  std::mt19937_64 generator(5);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Tensor data = Tensor::Empty(DType::kFloat32, {4, 784});
  for (int64_t i = 0; i < data.num_elements(); ++i) data.data<float>()[i] = pixel(generator);
  Tensor target = Tensor::Empty(DType::kInt64, {4, 1});
  for (int64_t i = 0; i < 4; ++i) target.data<int64_t>()[i] = i * 3;
  Tensor seed = Tensor::Empty(DType::kFloat32, {});
  *seed.data<float>() = 1.0f;
  std::map<std::string, Tensor> feeds = {
      {graph.data_input, data}, {graph.target_input, target}, {graph.seed_input, seed}};
  for (const NamedTensor& parameter : graph.parameters) feeds[parameter.name] = parameter.tensor;
  return feeds;
}

Expected<RunResult> RunGraph(const onnx::ModelProto& model, const std::map<std::string, Tensor>& feeds) {
  ExecutorOptions options;
  options.num_threads = 1;
  ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(model, options));
  return executor->Run(feeds);
}

TEST(WeightCopies, MixedGraphsReadCopiesOfEveryParameterWithTheSameBits) {
  for (const auto& [policy, type] : {std::pair{PolicyKind::kMixedBFloat16, DType::kBFloat16},
                                     std::pair{PolicyKind::kMixedFloat16, DType::kFloat16}}) {
    Expected<TrainingGraph> graph = testing::MlpTrainingGraph(policy);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    const FoldedWeightCasts folded = FoldWeightCasts(graph->train_model, graph->parameters);
    ASSERT_EQ(folded.copy_types.size(), graph->parameters.size());
    std::map<std::string, const onnx::ValueInfoProto*> inputs;
    for (const onnx::ValueInfoProto& input : folded.model.graph().input()) inputs[input.name()] = &input;
    for (size_t p = 0; p < graph->parameters.size(); ++p) {
      const NamedTensor& parameter = graph->parameters[p];
      EXPECT_EQ(folded.copy_types[p], type) << parameter.name;
      ASSERT_FALSE(folded.copy_inputs[p].empty()) << parameter.name;
      for (const std::string& name : folded.copy_inputs[p]) {
        ASSERT_EQ(inputs.count(name), 1u) << name;
        const onnx::TypeProto_Tensor& tensor_type = inputs[name]->type().tensor_type();
        EXPECT_EQ(tensor_type.elem_type(), ToOnnx(type)) << name;
        EXPECT_EQ(tensor_type.shape().dim_size(), static_cast<int>(parameter.tensor.rank())) << name;
      }
    }
    for (const onnx::NodeProto& node : folded.model.graph().node()) {
      if (node.op_type() != "Cast") continue;
      for (const NamedTensor& parameter : graph->parameters) EXPECT_NE(node.input(0), parameter.name) << node.name();
    }

    std::map<std::string, Tensor> feeds = BatchFeeds(*graph);
    Expected<RunResult> with_casts = RunGraph(graph->train_model, feeds);
    ASSERT_TRUE(with_casts.ok()) << with_casts.status().message();
    for (size_t p = 0; p < graph->parameters.size(); ++p) {
      for (const std::string& name : folded.copy_inputs[p]) {
        feeds[name] = MakeWeightCopy(graph->parameters[p].tensor, folded.copy_types[p]);
      }
    }
    Expected<RunResult> with_copies = RunGraph(folded.model, feeds);
    ASSERT_TRUE(with_copies.ok()) << with_copies.status().message();
    ASSERT_EQ(with_copies->outputs.size(), with_casts->outputs.size());
    for (size_t k = 0; k < with_casts->outputs.size(); ++k) {
      const Tensor& want = with_casts->outputs[k].tensor;
      const Tensor& got = with_copies->outputs[k].tensor;
      ASSERT_EQ(got.bytes(), want.bytes()) << with_casts->outputs[k].name;
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0) << with_casts->outputs[k].name;
    }
  }
}

TEST(WeightCopies, Float32GraphsFoldNothing) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(PolicyKind::kFloat32);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const FoldedWeightCasts folded = FoldWeightCasts(graph->train_model, graph->parameters);
  for (size_t p = 0; p < graph->parameters.size(); ++p) {
    EXPECT_EQ(folded.copy_types[p], DType::kUndefined);
    EXPECT_TRUE(folded.copy_inputs[p].empty());
  }
  EXPECT_EQ(folded.model.graph().node_size(), graph->train_model.graph().node_size());
  EXPECT_EQ(folded.model.graph().input_size(), graph->train_model.graph().input_size());
}

}  // namespace
}  // namespace onnx_amp
