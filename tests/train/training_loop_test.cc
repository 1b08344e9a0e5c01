// The training loop as a library (training_loop.h): the step plan and its errors, the
// callbacks and metrics lines of a run, and a run stopped at a checkpoint and resumed
// ending with the weights of an uninterrupted run, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/onnx/model_io.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/training_graph.h"
#include "runtime/train/training_loop.h"

namespace onnx_amp {
namespace {

Dataset RandomDataset(int64_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  Dataset data;
  data.features = Tensor::Empty(DType::kFloat32, {n, 784});
  data.labels = Tensor::Empty(DType::kInt64, {n});
  for (int64_t i = 0; i < n * 784; ++i) data.features.data<float>()[i] = pixel(generator);
  for (int64_t i = 0; i < n; ++i) data.labels.data<int64_t>()[i] = static_cast<int64_t>(generator() % 10);
  return data;
}

std::unique_ptr<Trainer> MlpTrainer() {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/mlp_u64.onnx");
  EXPECT_TRUE(model.ok()) << model.status().message();
  Expected<TrainableModel> trainable = PrepareTrainableModel(*model, LossKind::kCrossEntropy);
  EXPECT_TRUE(trainable.ok()) << trainable.status().message();
  Expected<TrainingGraph> graph = BuildTrainingGraph(std::move(*trainable), LossKind::kCrossEntropy);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.001f;
  config.num_threads = 1;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  return std::move(*trainer);
}

// A path in the test's temporary folder with nothing there yet.
std::filesystem::path FreshFolder(const std::string& name) {
  const std::filesystem::path folder = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(folder);
  return folder;
}

TEST(TrainingLoop, PlansStepsAndNamesTheFlagOfABadOption) {
  TrainingRunOptions options;
  options.batch_size = 8;
  options.accumulation_steps = 2;
  options.epochs = 3;
  Expected<StepPlan> plan = PlanSteps(options, 100);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->steps_per_epoch, 6);  // 100 samples / 16 per step, the rest dropped
  EXPECT_EQ(plan->total_steps, 18);
  options.max_steps = 5;
  EXPECT_EQ(PlanSteps(options, 100)->total_steps, 5);

  const auto error = [](TrainingRunOptions bad, int64_t samples) { return PlanSteps(bad, samples).status().message(); };
  TrainingRunOptions bad = options;
  bad.batch_size = 0;
  EXPECT_NE(error(bad, 100).find("--batch-size"), std::string::npos);
  bad = options;
  bad.accumulation_steps = 0;
  EXPECT_NE(error(bad, 100).find("--accumulation-steps"), std::string::npos);
  bad = options;
  bad.resume = true;
  EXPECT_NE(error(bad, 100).find("--checkpoint-dir"), std::string::npos);
  EXPECT_NE(error(options, 15).find("smaller than one step"), std::string::npos);
}

TEST(TrainingLoop, ReportsEveryStepAndEpochToCallbacksAndMetrics) {
  TrainingData data{RandomDataset(64, 1), RandomDataset(40, 2)};
  TrainingRunOptions options;
  options.batch_size = 16;
  options.epochs = 2;
  options.metrics = FreshFolder("loop_metrics.jsonl");
  std::vector<StepProgress> steps;
  std::vector<EpochSummary> epochs;
  TrainingCallbacks callbacks;
  callbacks.step_done = [&](const StepProgress& step) { steps.push_back(step); };
  callbacks.epoch_done = [&](const EpochSummary& epoch) { epochs.push_back(epoch); };
  std::unique_ptr<Trainer> trainer = MlpTrainer();
  ASSERT_TRUE(RunTraining(*trainer, data, options, callbacks).ok());

  ASSERT_EQ(steps.size(), 8u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].global_step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(steps[i].epoch, static_cast<int64_t>(i / 4 + 1));
    EXPECT_EQ(steps[i].batch, static_cast<int64_t>(i % 4 + 1));
    EXPECT_EQ(steps[i].steps_per_epoch, 4);
  }
  ASSERT_EQ(epochs.size(), 2u);
  for (const EpochSummary& epoch : epochs) {
    ASSERT_TRUE(epoch.eval_accuracy.has_value());
    // 40 evaluation samples: the accuracy is a multiple of 1/40.
    const double correct = *epoch.eval_accuracy * 40.0;
    EXPECT_NEAR(correct, std::round(correct), 1e-9);
    EXPECT_EQ(epoch.skipped_steps, 0);
  }
  EXPECT_EQ(trainer->optimizer().step_count(), 8);
  std::ifstream metrics(options.metrics);
  int step_lines = 0, epoch_lines = 0;
  for (std::string line; std::getline(metrics, line);) {
    step_lines += line.find("\"step_ms\"") != std::string::npos;
    epoch_lines += line.find("\"eval_accuracy\"") != std::string::npos;
  }
  EXPECT_EQ(step_lines, 8);
  EXPECT_EQ(epoch_lines, 2);
}

TEST(TrainingLoop, AResumedRunEndsWithTheWeightsOfAnUninterruptedOne) {
  TrainingData data{RandomDataset(48, 3), std::nullopt};
  TrainingRunOptions options;
  options.batch_size = 8;
  options.max_steps = 9;  // crosses an epoch boundary (6 steps per epoch)
  std::unique_ptr<Trainer> uninterrupted = MlpTrainer();
  ASSERT_TRUE(RunTraining(*uninterrupted, data, options, {}).ok());

  options.checkpoint_dir = FreshFolder("loop_resume");
  options.max_steps = 4;
  ASSERT_TRUE(RunTraining(*MlpTrainer(), data, options, {}).ok());
  options.max_steps = 9;
  options.resume = true;
  int64_t resumed_at = -1;
  TrainingCallbacks callbacks;
  callbacks.resumed = [&](const std::filesystem::path&, int64_t step) { resumed_at = step; };
  std::unique_ptr<Trainer> resumed = MlpTrainer();
  ASSERT_TRUE(RunTraining(*resumed, data, options, callbacks).ok());
  EXPECT_EQ(resumed_at, 4);

  ASSERT_EQ(resumed->weights().size(), uninterrupted->weights().size());
  for (size_t i = 0; i < resumed->weights().size(); ++i) {
    const Tensor& got = resumed->weights()[i].tensor;
    const Tensor& want = uninterrupted->weights()[i].tensor;
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0) << resumed->weights()[i].name;
  }
}

}  // namespace
}  // namespace onnx_amp
