// The training step against hand-checkable invariants: a skipped step changes nothing,
// micro-batch accumulation equals one large batch, a checkpoint round trip continues the
// same trajectory, and the schedules' closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numbers>
#include <random>

#include "runtime/onnx/model_io.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp {
namespace {

std::unique_ptr<Trainer> MakeTrainer(OptimizerKind kind, PolicyKind policy = PolicyKind::kFloat32) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/mlp_u64.onnx");
  EXPECT_TRUE(model.ok()) << model.status().message();
  TrainingGraphOptions options;
  options.policy = policy;
  Expected<TrainingGraph> graph = BuildTrainingGraph(*model, options);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.optimizer.kind = kind;
  config.optimizer.momentum = 0.9f;
  config.optimizer.learning_rate = kind == OptimizerKind::kSgd ? 0.01f : 0.001f;
  config.scaler.enabled = policy == PolicyKind::kMixedFloat16;
  config.num_threads = 1;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return std::move(*trainer);
}

Batch RandomBatch(int64_t n, uint64_t seed, int64_t first = 0, int64_t count = -1) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Batch all;
  all.data = Tensor::Empty(DType::kFloat32, {n, 784});
  all.target = Tensor::Empty(DType::kInt64, {n, 1});
  for (int64_t i = 0; i < n * 784; ++i) all.data.data<float>()[i] = pixel(generator);
  for (int64_t i = 0; i < n; ++i) all.target.data<int64_t>()[i] = static_cast<int64_t>(generator() % 10);
  if (count < 0) return all;
  Batch part;
  part.data = Tensor::Empty(DType::kFloat32, {count, 784});
  part.target = Tensor::Empty(DType::kInt64, {count, 1});
  std::memcpy(part.data.raw_data(), all.data.data<float>() + first * 784, part.data.bytes());
  std::memcpy(part.target.raw_data(), all.target.data<int64_t>() + first, part.target.bytes());
  return part;
}

std::vector<std::vector<float>> Snapshot(Trainer& trainer) {
  std::vector<std::vector<float>> values;
  for (const NamedTensor& w : trainer.weights()) {
    values.emplace_back(w.tensor.data<float>(), w.tensor.data<float>() + w.tensor.num_elements());
  }
  for (int k = 0; k < 2; ++k) {
    for (const std::vector<float>& slot : trainer.optimizer().slots(k)) values.push_back(slot);
  }
  return values;
}

bool BitIdentical(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

TEST(Trainer, SkippedStepLeavesWeightsMomentsAndStepCountBitIdentical) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(OptimizerKind::kAdam);
  Batch batch = RandomBatch(16, 1);
  const Batch batches[] = {batch};
  ASSERT_TRUE(trainer->Step(batches).ok());  // moments become non-zero
  ASSERT_EQ(trainer->optimizer().step_count(), 1);
  const auto before = Snapshot(*trainer);

  Batch poisoned = RandomBatch(16, 2);
  poisoned.data.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  const Batch bad[] = {poisoned};
  Expected<StepResult> step = trainer->Step(bad);
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_TRUE(step->skipped);
  EXPECT_FALSE(step->first_non_finite.empty());
  EXPECT_EQ(trainer->optimizer().step_count(), 1);
  EXPECT_EQ(trainer->scaler().state().skipped_steps, 1);
  EXPECT_TRUE(BitIdentical(before, Snapshot(*trainer)));

  // The next finite step trains again.
  ASSERT_TRUE(trainer->Step(batches).ok());
  EXPECT_EQ(trainer->optimizer().step_count(), 2);
  EXPECT_FALSE(BitIdentical(before, Snapshot(*trainer)));
}

TEST(Trainer, SkippedStepUnderFloat16ScalingBacksOffAndChangesNothing) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(OptimizerKind::kRmsprop, PolicyKind::kMixedFloat16);
  const float scale = trainer->scaler().scale();
  EXPECT_EQ(scale, 32768.0f);
  const auto before = Snapshot(*trainer);
  Batch poisoned = RandomBatch(8, 3);
  poisoned.data.data<float>()[0] = std::numeric_limits<float>::infinity();
  const Batch bad[] = {poisoned};
  Expected<StepResult> step = trainer->Step(bad);
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_TRUE(step->skipped);
  EXPECT_EQ(trainer->scaler().scale(), scale * 0.5f);
  EXPECT_EQ(trainer->optimizer().step_count(), 0);
  EXPECT_TRUE(BitIdentical(before, Snapshot(*trainer)));
}

TEST(Trainer, MicroBatchAccumulationEqualsOneLargeBatch) {
  std::unique_ptr<Trainer> whole = MakeTrainer(OptimizerKind::kSgd);
  std::unique_ptr<Trainer> split = MakeTrainer(OptimizerKind::kSgd);
  const Batch big[] = {RandomBatch(16, 4)};
  const Batch halves[] = {RandomBatch(16, 4, 0, 8), RandomBatch(16, 4, 8, 8)};
  ASSERT_TRUE(whole->Step(big).ok());
  ASSERT_TRUE(split->Step(halves).ok());
  for (size_t p = 0; p < whole->weights().size(); ++p) {
    const Tensor& a = whole->weights()[p].tensor;
    const Tensor& b = split->weights()[p].tensor;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      // Summation order differs: a few float32 ulps of the update (lr 0.01 * |g| <~ 1).
      ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-6f + 1e-6f * std::fabs(a.data<float>()[i]))
          << whole->weights()[p].name << "[" << i << "]";
    }
  }
}

TEST(Trainer, CheckpointRoundTripContinuesBitIdentically) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "trainer_test_checkpoint.npz";
  std::unique_ptr<Trainer> a = MakeTrainer(OptimizerKind::kAdam);
  const Batch first[] = {RandomBatch(8, 5)};
  const Batch second[] = {RandomBatch(8, 6)};
  ASSERT_TRUE(a->Step(first).ok());
  DataPosition position{7, 1, 2, 1};
  ASSERT_TRUE(SaveCheckpoint(path, *a, position).ok());
  ASSERT_TRUE(a->Step(second).ok());

  std::unique_ptr<Trainer> b = MakeTrainer(OptimizerKind::kAdam);
  DataPosition loaded;
  Status status = LoadCheckpoint(path, *b, loaded);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(loaded.seed, 7u);
  EXPECT_EQ(loaded.epoch, 1);
  EXPECT_EQ(loaded.batch, 2);
  EXPECT_EQ(b->optimizer().step_count(), 1);
  ASSERT_TRUE(b->Step(second).ok());
  EXPECT_TRUE(BitIdentical(Snapshot(*a), Snapshot(*b)));
  std::filesystem::remove(path);
}

TEST(LrSchedule, ClosedForms) {
  LrSchedule step{LrScheduleKind::kStep, 10, 0.5f, 0};
  EXPECT_FLOAT_EQ(ScheduledLearningRate(step, 0.1f, 9), 0.1f);
  EXPECT_FLOAT_EQ(ScheduledLearningRate(step, 0.1f, 10), 0.05f);
  EXPECT_FLOAT_EQ(ScheduledLearningRate(step, 0.1f, 25), 0.025f);
  LrSchedule cosine{LrScheduleKind::kCosine, 0, 0.0f, 100};
  EXPECT_FLOAT_EQ(ScheduledLearningRate(cosine, 0.1f, 0), 0.1f);
  EXPECT_NEAR(ScheduledLearningRate(cosine, 0.1f, 50), 0.05f, 1e-7f);
  EXPECT_NEAR(ScheduledLearningRate(cosine, 0.1f, 100), 0.0f, 1e-9f);
  EXPECT_FLOAT_EQ(ScheduledLearningRate({}, 0.1f, 1000), 0.1f);
}

}  // namespace
}  // namespace onnx_amp
