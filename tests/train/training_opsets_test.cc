// Training works at every opset the runtime loads. The bundled MLP (Gemm, Relu, Softmax)
// and CNN (Conv, BatchNormalization in inference form, Relu, MaxPool, Flatten, Gemm,
// Softmax) declare opset 17, and with their attributes these ops mean the same at every
// opset from 7 to 23 (Softmax on rank 2 normalises each row at all of them), so relabelling
// the opset gives the model as an exporter of that opset writes it. One SGD step on the
// same batch then gives bit-identical weights at every opset: the loss is the same
// ai.onnx_amp op, and each gradient rule emits the same float32 computation in its
// opset's form (axes as attributes, a zero C for Gemm before opset 11, Slice attributes).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/onnx/model_io.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp {
namespace {

constexpr int64_t kFirstOpset = 7;
constexpr int64_t kLastOpset = 23;
constexpr int64_t kModelOpset = 17;

Batch RandomBatch(const Shape& data_shape, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch batch;
  batch.data = Tensor::Empty(DType::kFloat32, data_shape);
  batch.target = Tensor::Empty(DType::kInt64, {data_shape[0], 1});
  for (int64_t i = 0; i < batch.data.num_elements(); ++i) batch.data.data<float>()[i] = pixel(generator);
  for (int64_t i = 0; i < data_shape[0]; ++i) batch.target.data<int64_t>()[i] = static_cast<int64_t>(generator() % 10);
  return batch;
}

// The weights after one SGD step of `model` relabelled to `opset`; empty on failure.
std::vector<NamedTensor> WeightsAfterOneStep(onnx::ModelProto model, int64_t opset, const Batch& batch) {
  for (onnx::OperatorSetIdProto& entry : *model.mutable_opset_import()) {
    if (entry.domain().empty()) entry.set_version(opset);
  }
  Expected<TrainableModel> trainable = PrepareTrainableModel(model, LossKind::kCrossEntropy);
  EXPECT_TRUE(trainable.ok()) << trainable.status().message();
  if (!trainable.ok()) return {};
  Expected<TrainingGraph> graph = BuildTrainingGraph(std::move(*trainable), LossKind::kCrossEntropy);
  EXPECT_TRUE(graph.ok()) << "opset " << opset << ": " << graph.status().message();
  if (!graph.ok()) return {};
  TrainerConfig config;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 0.1f;
  config.num_threads = 1;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << "opset " << opset << ": " << trainer.status().message();
  if (!trainer.ok()) return {};
  const Batch batches[] = {batch};
  Expected<StepResult> step = (*trainer)->Step(batches);
  EXPECT_TRUE(step.ok()) << "opset " << opset << ": " << step.status().message();
  if (!step.ok()) return {};
  EXPECT_FALSE(step->skipped);
  return (*trainer)->weights();
}

void ExpectSameStepAtEveryOpset(const std::string& file, const Shape& data_shape) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/" + file);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Batch batch = RandomBatch(data_shape, 11);
  const std::vector<NamedTensor> reference = WeightsAfterOneStep(*model, kModelOpset, batch);
  ASSERT_FALSE(reference.empty());
  for (int64_t opset = kFirstOpset; opset <= kLastOpset; ++opset) {
    const std::vector<NamedTensor> weights = WeightsAfterOneStep(*model, opset, batch);
    ASSERT_EQ(weights.size(), reference.size()) << "opset " << opset;
    for (size_t i = 0; i < weights.size(); ++i) {
      const Tensor& got = weights[i].tensor;
      const Tensor& want = reference[i].tensor;
      ASSERT_EQ(got.shape(), want.shape()) << weights[i].name;
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0)
          << file << " at opset " << opset << ": '" << weights[i].name << "' differs from opset " << kModelOpset;
    }
  }
}

TEST(TrainingOpsets, MlpStepIsTheSameAtOpsets7To23) { ExpectSameStepAtEveryOpset("mlp_u64.onnx", {16, 784}); }

TEST(TrainingOpsets, CnnStepIsTheSameAtOpsets7To23) { ExpectSameStepAtEveryOpset("cnn.onnx", {4, 1, 28, 28}); }

}  // namespace
}  // namespace onnx_amp
