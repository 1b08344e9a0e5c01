// The training step against hand-checkable invariants: a skipped step changes nothing,
// micro-batch accumulation equals one large batch, a checkpoint round trip continues the
// same trajectory, a step (training graph + update graph) equals the same step done by
// hand with optimizer_math.h, bit for bit, BatchNormalization statistics are not trained,
// and the schedules' closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numbers>
#include <random>
#include <set>

#include "tests/train/mlp_training_graph.h"
#include "ops/training/gradient_math.h"
#include "ops/training/optimizer_math.h"
#include "runtime/onnx/model_io.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/trainable_model.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_graph.h"

namespace onnx_amp {
namespace {

std::unique_ptr<Trainer> MakeTrainer(OptimizerKind kind, PolicyKind policy = PolicyKind::kFloat32,
                                     float clip_norm = 0.0f) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(policy);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.optimizer.kind = kind;
  config.optimizer.momentum = 0.9f;
  config.optimizer.learning_rate = kind == OptimizerKind::kSgd ? 0.01f : 0.001f;
  config.scaler.enabled = policy == PolicyKind::kMixedFloat16;
  config.clip_norm = clip_norm;
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

// Through the const accessors: reading the weights must not mark the trainer's weight
// copies stale, or the steps after it would not use the copies the update wrote.
std::vector<std::vector<float>> Snapshot(const Trainer& trainer) {
  std::vector<std::vector<float>> values;
  for (const NamedTensor& w : trainer.weights()) {
    values.emplace_back(w.tensor.data<float>(), w.tensor.data<float>() + w.tensor.num_elements());
  }
  for (int k = 0; k < trainer.optimizer().num_slots(); ++k) {
    for (const Tensor& slot : trainer.optimizer().slots(k)) {
      values.emplace_back(slot.data<float>(), slot.data<float>() + slot.num_elements());
    }
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

// The step by hand: the training graph run on its own for each micro-batch, the sums,
// the mean and clip factor of gradient_math.h, and optimizer_math.h per element.
class ReferenceStep {
 public:
  explicit ReferenceStep(Trainer& trainer, float clip_norm = 0.0f) : trainer_(trainer), clip_norm_(clip_norm) {
    for (const NamedTensor& w : trainer.weights()) {
      weights_.emplace_back(w.tensor.data<float>(), w.tensor.data<float>() + w.tensor.num_elements());
      slots_[0].emplace_back(weights_.back().size(), 0.0f);
      slots_[1].emplace_back(weights_.back().size(), 0.0f);
    }
    ExecutorOptions options;
    options.num_threads = 1;
    Expected<std::unique_ptr<Executor>> executor = Executor::Create(trainer.graph().train_model, options);
    EXPECT_TRUE(executor.ok()) << executor.status().message();
    executor_ = std::move(*executor);
  }

  // Returns the clip factor applied.
  double Step(std::span<const Batch> micro_batches) {
    const TrainingGraph& graph = trainer_.graph();
    std::vector<std::vector<float>> sums;
    for (const std::vector<float>& w : weights_) sums.emplace_back(w.size(), 0.0f);
    for (const Batch& batch : micro_batches) {
      std::map<std::string, Tensor> feeds = {{graph.data_input, batch.data}, {graph.target_input, batch.target}};
      Tensor seed = Tensor::Empty(DType::kFloat32, {});
      *seed.data<float>() = 1.0f;  // float32 training: no loss scale
      feeds[graph.seed_input] = seed;
      for (size_t p = 0; p < weights_.size(); ++p) {
        Tensor w = Tensor::Empty(DType::kFloat32, graph.parameters[p].tensor.shape());
        std::memcpy(w.raw_data(), weights_[p].data(), w.bytes());
        feeds[graph.parameters[p].name] = w;
      }
      Expected<RunResult> run = executor_->Run(feeds);
      EXPECT_TRUE(run.ok()) << run.status().message();
      for (size_t p = 0; p < weights_.size(); ++p) {
        for (size_t i = 0; i < sums[p].size(); ++i) sums[p][i] += run->outputs[p + 1].tensor.data<float>()[i];
      }
    }
    double squares = 0.0;
    for (const std::vector<float>& sum : sums) {
      for (float g : sum) squares += static_cast<double>(g) * g;
    }
    const OptimizerConfig& c = trainer_.optimizer().config();
    const double factor = MeanClipFactor(squares, static_cast<int64_t>(micro_batches.size()), clip_norm_);
    const float alpha = AdamStepSize(c.learning_rate, c.beta1, c.beta2, step_);
    for (size_t p = 0; p < weights_.size(); ++p) {
      for (size_t i = 0; i < weights_[p].size(); ++i) {
        const float g = factor == 1.0 ? sums[p][i] : static_cast<float>(sums[p][i] * factor);
        float& w = weights_[p][i];
        switch (c.kind) {
          case OptimizerKind::kSgd:
            SgdUpdate(w, slots_[0][p][i], g, c.learning_rate, c.momentum, c.nesterov);
            break;
          case OptimizerKind::kAdam:
          case OptimizerKind::kAdamW:
            AdamUpdate(w, slots_[0][p][i], slots_[1][p][i], g, alpha, c.beta1, c.beta2, c.epsilon,
                       c.kind == OptimizerKind::kAdamW ? c.learning_rate * c.weight_decay : 0.0f);
            break;
          case OptimizerKind::kRmsprop:
            RmspropUpdate(w, slots_[0][p][i], g, c.learning_rate, c.rho, c.epsilon);
            break;
        }
      }
    }
    ++step_;
    return factor;
  }

  // Halves the weights, the trainer's (written through Trainer::weights()) and these.
  void HalveWeights() {
    for (size_t p = 0; p < weights_.size(); ++p) {
      float* trained = trainer_.weights()[p].tensor.data<float>();
      for (size_t i = 0; i < weights_[p].size(); ++i) {
        weights_[p][i] *= 0.5f;
        trained[i] *= 0.5f;
      }
    }
  }

  // Weights, then the slots the trainer keeps, as Snapshot() lists them.
  std::vector<std::vector<float>> Snapshot() const {
    std::vector<std::vector<float>> values = weights_;
    for (int k = 0; k < trainer_.optimizer().num_slots(); ++k) {
      values.insert(values.end(), slots_[k].begin(), slots_[k].end());
    }
    return values;
  }

 private:
  Trainer& trainer_;
  float clip_norm_;
  std::unique_ptr<Executor> executor_;
  std::vector<std::vector<float>> weights_;
  std::vector<std::vector<float>> slots_[2];
  int64_t step_ = 0;
};

TEST(Trainer, AccumulatedClippedSgdStepEqualsTheStepByHand) {
  const float clip_norm = 1e-3f;
  std::unique_ptr<Trainer> trainer = MakeTrainer(OptimizerKind::kSgd, PolicyKind::kFloat32, clip_norm);
  ReferenceStep reference(*trainer, clip_norm);
  const Batch halves[] = {RandomBatch(16, 8, 0, 8), RandomBatch(16, 8, 8, 8)};
  for (int step = 0; step < 2; ++step) {
    EXPECT_LT(reference.Step(halves), 0.5);  // the mean and the clip both act
    Expected<StepResult> result = trainer->Step(halves);
    ASSERT_TRUE(result.ok()) << result.status().message();
    EXPECT_FALSE(result->skipped);
    EXPECT_TRUE(BitIdentical(reference.Snapshot(), Snapshot(*trainer))) << "step " << step;
  }
}

TEST(Trainer, AdamAndRmspropStepsEqualTheStepsByHand) {
  for (OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW, OptimizerKind::kRmsprop}) {
    std::unique_ptr<Trainer> trainer = MakeTrainer(kind);
    ReferenceStep reference(*trainer);
    for (int step = 0; step < 3; ++step) {
      const Batch batch[] = {RandomBatch(8, 9 + step)};
      EXPECT_EQ(reference.Step(batch), 1.0);
      Expected<StepResult> result = trainer->Step(batch);
      ASSERT_TRUE(result.ok()) << result.status().message();
      EXPECT_TRUE(BitIdentical(reference.Snapshot(), Snapshot(*trainer))) << "step " << step;
    }
    EXPECT_EQ(trainer->optimizer().step_count(), 3);
  }
}

// With weight copies, under a mixed policy the trainer runs its training graph without the
// weight Casts and feeds it the low-precision copies that the update rewrites
// (weight_copies.h). The steps
// by hand run the graph with its Casts on the float32 weights: the same bits, over
// micro-batches, and after the weights were written from outside between steps.
TEST(Trainer, MixedStepsOnWeightCopiesEqualTheStepsByHand) {
  for (const PolicyKind policy : {PolicyKind::kMixedBFloat16, PolicyKind::kMixedFloat16}) {
    for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kRmsprop}) {
      Expected<TrainingGraph> graph = testing::MlpTrainingGraph(policy);
      ASSERT_TRUE(graph.ok()) << graph.status().message();
      TrainerConfig config;
      config.optimizer.kind = kind;
      config.optimizer.learning_rate = 0.001f;
      config.scaler.enabled = false;  // the steps by hand seed the gradient with 1
      config.num_threads = 1;
      config.weight_copies = true;
      Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
      ASSERT_TRUE(trainer.ok()) << trainer.status().message();
      EXPECT_TRUE((*trainer)->keeps_weight_copies());
      ReferenceStep reference(**trainer);
      for (int step = 0; step < 3; ++step) {
        if (step == 2) reference.HalveWeights();
        const Batch halves[] = {RandomBatch(16, 30 + step, 0, 8), RandomBatch(16, 30 + step, 8, 8)};
        reference.Step(halves);
        Expected<StepResult> result = (*trainer)->Step(halves);
        ASSERT_TRUE(result.ok()) << result.status().message();
        EXPECT_TRUE(BitIdentical(reference.Snapshot(), Snapshot(**trainer)))
            << (policy == PolicyKind::kMixedBFloat16 ? "mixed_bfloat16" : "mixed_float16") << " step " << step;
      }
    }
  }
}

// A float32 graph casts no weight: asking for copies keeps none, and the steps are the
// plain ones.
TEST(Trainer, Float32GraphsKeepNoWeightCopies) {
  Expected<TrainingGraph> graph = testing::MlpTrainingGraph(PolicyKind::kFloat32);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  TrainerConfig config;
  config.weight_copies = true;
  config.num_threads = 1;
  Expected<std::unique_ptr<Trainer>> trainer = Trainer::Create(std::move(*graph), config);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  EXPECT_FALSE((*trainer)->keeps_weight_copies());
  EXPECT_FALSE(MakeTrainer(OptimizerKind::kRmsprop, PolicyKind::kMixedBFloat16)->keeps_weight_copies());
  for (const onnx::ValueInfoProto& input : (*trainer)->update_model().graph().input()) {
    EXPECT_EQ(input.name().find(".copy"), std::string::npos) << input.name();
  }
}

// The trainer's protocol with the scaler when the update graph unscales: the first
// non-finite tensor through MarkNonFinite, then MarkUnscaled once per iteration.
TEST(Trainer, ScalerTakesTheUpdateGraphsFindings) {
  LossScalerConfig config;
  LossScaler scaler(config);
  scaler.MarkNonFinite("dense1.kernel");
  scaler.MarkNonFinite("training.loss");
  ASSERT_TRUE(scaler.MarkUnscaled().ok());
  EXPECT_EQ(scaler.MarkUnscaled().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(scaler.first_non_finite(), "dense1.kernel");
  ASSERT_TRUE(scaler.Update().ok());
  EXPECT_EQ(scaler.scale(), config.initial_scale * config.backoff_factor);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  // The next iteration starts afresh.
  ASSERT_TRUE(scaler.MarkUnscaled().ok());
  ASSERT_TRUE(scaler.Update().ok());
  EXPECT_EQ(scaler.state().consecutive_skips, 0);
}

TEST(TrainingGraph, BatchNormRunningStatisticsAreNotParameters) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::set<std::string> statistics, weights;
  for (const onnx::NodeProto& node : model->graph().node()) {
    if (node.op_type() != "BatchNormalization") continue;
    statistics.insert({node.input(3), node.input(4)});
    weights.insert({node.input(1), node.input(2)});
  }
  ASSERT_FALSE(statistics.empty());
  Expected<TrainableModel> trainable = PrepareTrainableModel(*model, LossKind::kCrossEntropy);
  ASSERT_TRUE(trainable.ok()) << trainable.status().message();
  Expected<TrainingGraph> graph = BuildTrainingGraph(std::move(*trainable), LossKind::kCrossEntropy);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  std::set<std::string> parameters;
  for (const NamedTensor& parameter : graph->parameters) parameters.insert(parameter.name);
  for (const std::string& name : statistics) EXPECT_EQ(parameters.count(name), 0u) << name;
  for (const std::string& name : weights) EXPECT_EQ(parameters.count(name), 1u) << name;
}

// The model kept for the export holds no parameter data (float_data or raw_data), keeps
// everything else (running statistics included), and with the trained weights written
// back it is the model WithTrainedWeights makes from the whole original.
TEST(TrainingGraph, InferenceModelDropsOnlyParameterData) {
  Expected<onnx::ModelProto> model = LoadModel(std::string(ONNX_AMP_MODELS_DIR) + "/cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.status().message();
  onnx::ModelProto with_float_data = *model;  // one parameter as float_data, the rest raw_data
  onnx::TensorProto& first = *with_float_data.mutable_graph()->mutable_initializer(0);
  ASSERT_EQ(first.data_type(), onnx::TensorProto::FLOAT);
  const std::string raw = first.raw_data();
  first.clear_raw_data();
  for (size_t i = 0; i < raw.size(); i += 4) {
    float value;
    std::memcpy(&value, raw.data() + i, 4);
    first.add_float_data(value);
  }
  Expected<TrainableModel> trainable = PrepareTrainableModel(with_float_data, LossKind::kCrossEntropy);
  ASSERT_TRUE(trainable.ok()) << trainable.status().message();
  std::set<std::string> parameters;
  for (const NamedTensor& parameter : trainable->parameters) parameters.insert(parameter.name);
  EXPECT_EQ(parameters.size(), 10u);
  const onnx::GraphProto& kept = trainable->inference.graph();
  ASSERT_EQ(kept.initializer_size(), with_float_data.graph().initializer_size());
  for (int i = 0; i < kept.initializer_size(); ++i) {
    const onnx::TensorProto& tensor = kept.initializer(i);
    const onnx::TensorProto& original = with_float_data.graph().initializer(i);
    EXPECT_EQ(tensor.name(), original.name());
    EXPECT_EQ(tensor.dims_size(), original.dims_size()) << tensor.name();
    if (parameters.count(tensor.name())) {
      EXPECT_FALSE(tensor.has_raw_data()) << tensor.name();
      EXPECT_EQ(tensor.float_data_size(), 0) << tensor.name();
    } else {
      EXPECT_EQ(tensor.SerializeAsString(), original.SerializeAsString()) << tensor.name();
    }
  }
  EXPECT_EQ(kept.node_size(), with_float_data.graph().node_size());
  Expected<onnx::ModelProto> from_kept = WithTrainedWeights(trainable->inference, trainable->parameters);
  Expected<onnx::ModelProto> from_whole = WithTrainedWeights(with_float_data, trainable->parameters);
  ASSERT_TRUE(from_kept.ok() && from_whole.ok());
  EXPECT_EQ(from_kept->SerializeAsString(), from_whole->SerializeAsString());
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
