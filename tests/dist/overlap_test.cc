// The all-reduce beside the backward pass: the training graph's executor reports each
// gradient as soon as it is final, last layer first, with the bits the run hands back; two
// trainers over in-process ranks reach bit-identical weights whether their buckets start
// during the backward pass or after it, and with overlap some buckets are under way before
// the backward pass ends.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

#include "runtime/dist/gradient_sync.h"
#include "runtime/executor/executor.h"
#include "runtime/train/trainer.h"
#include "tests/dist/forwarding_sync.h"
#include "tests/dist/thread_communicator.h"
#include "tests/dist/trainer_fixtures.h"

namespace onnx_amp {
namespace {

using testing::ForwardingSync;
using testing::MakeBatch;
using testing::MixedFloat16Trainer;
using testing::ThreadCommunicator;
using testing::ThreadGroup;

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.num_elements() == b.num_elements() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

Tensor Copy(const Tensor& tensor) {
  Tensor copy = Tensor::Empty(tensor.dtype(), tensor.shape());
  std::memcpy(copy.raw_data(), tensor.raw_data(), tensor.bytes());
  return copy;
}

TEST(BackwardPass, ReportsEveryGradientWhenFinalLastLayerFirst) {
  std::unique_ptr<Trainer> trainer = MixedFloat16Trainer();
  ExecutorOptions options;
  options.num_threads = 1;
  Expected<std::unique_ptr<Executor>> executor = Executor::Create(trainer->graph().train_model, options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  const Batch batch = MakeBatch(3);
  std::map<std::string, Tensor> feeds;
  feeds[trainer->graph().data_input] = batch.data;
  feeds[trainer->graph().target_input] = batch.target;
  Tensor seed = Tensor::Empty(DType::kFloat32, {});
  *seed.data<float>() = 1024.0f;
  feeds[trainer->graph().seed_input] = seed;
  for (const NamedTensor& weight : trainer->weights()) feeds[weight.name] = weight.tensor;

  std::vector<size_t> reported;
  std::vector<Tensor> values;  // copies taken inside the callback
  ExecutorRunOptions run_options;
  run_options.output_ready = [&](size_t index, const Tensor& value) {
    reported.push_back(index);
    values.push_back(Copy(value));
    return Status::Ok();
  };
  Expected<RunResult> run = (*executor)->Run(feeds, run_options);
  ASSERT_TRUE(run.ok()) << run.status().message();

  // Outputs: the loss, then one gradient per parameter (dense1 kernel, bias, ..., dense3).
  const size_t outputs = trainer->weights().size() + 1;
  ASSERT_EQ(run->outputs.size(), outputs);
  ASSERT_EQ(reported.size(), outputs) << "one report per output";
  EXPECT_EQ(reported, (*executor)->output_completion_order());
  EXPECT_EQ(reported.front(), 0u) << "the forward pass finishes the loss first";
  for (size_t k = 0; k < reported.size(); ++k) {
    EXPECT_TRUE(SameBits(values[k], run->outputs[reported[k]].tensor))
        << run->outputs[reported[k]].name << " changed after it was reported";
  }
  // Backward order: the last layer's gradients (the last two parameters) come before the
  // middle layer's, which come before the first layer's.
  std::vector<size_t> position(outputs);
  for (size_t k = 0; k < reported.size(); ++k) position[reported[k]] = k;
  const auto layer_done = [&](size_t layer) { return std::max(position[2 * layer + 1], position[2 * layer + 2]); };
  const auto layer_first = [&](size_t layer) { return std::min(position[2 * layer + 1], position[2 * layer + 2]); };
  std::string order;
  for (size_t index : reported) order += run->outputs[index].name + " ";
  ASSERT_EQ(outputs, 7u) << "three dense layers";
  EXPECT_LT(layer_first(2), layer_first(1)) << order;
  EXPECT_LT(layer_done(2), layer_done(1)) << order;
  EXPECT_LT(layer_first(1), layer_first(0)) << order;
  EXPECT_LT(layer_done(1), layer_done(0)) << order;
}

// Forwards to a GradientSync and notes how many buckets were under way when the backward
// pass ended (SumGradients is called after the training graph's run).
class RecordingSync final : public ForwardingSync {
 public:
  explicit RecordingSync(GradientSync& inner) : ForwardingSync(inner), sync_(inner) {}
  Status GradientReady(size_t index, const Tensor& gradient, int64_t step) override {
    ++reports;
    return inner_.GradientReady(index, gradient, step);
  }
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override {
    started_before_sum.push_back(sync_.buckets_started());
    return inner_.SumGradients(gradients, loss_sum, step);
  }

  int64_t reports = 0;
  std::vector<size_t> started_before_sum;  // per step

 private:
  GradientSync& sync_;
};

struct TwoRankRun {
  std::vector<Tensor> weights[2];
  std::vector<float> losses[2];
  std::vector<size_t> started_before_sum[2];
  int64_t reports[2] = {0, 0};
  int64_t buckets = 0;
};

// Three steps of two ranks, each on its own batches of `micro_batches` micro-batches, with
// 4 KiB buckets (the MLP's two large kernels get one each: several buckets).
TwoRankRun TrainTwoRanks(bool overlap, int micro_batches) {
  TwoRankRun out;
  ThreadGroup group(2);
  group.Run([&](int rank) {
    std::unique_ptr<Trainer> trainer = MixedFloat16Trainer();
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator, 4096, overlap);
    RecordingSync recording(sync);
    trainer->set_replica_sync(&recording);
    for (int step = 0; step < 3; ++step) {
      std::vector<Batch> batches;
      for (int m = 0; m < micro_batches; ++m) batches.push_back(MakeBatch(100 * step + 10 * rank + m));
      Expected<StepResult> result = trainer->Step(batches);
      ASSERT_TRUE(result.ok()) << result.status().message();
      EXPECT_FALSE(result->skipped);
      out.losses[rank].push_back(result->loss);
    }
    for (const NamedTensor& weight : trainer->weights()) out.weights[rank].push_back(Copy(weight.tensor));
    out.started_before_sum[rank] = recording.started_before_sum;
    out.reports[rank] = recording.reports;
    if (rank == 0) out.buckets = sync.volume().buckets;
  });
  return out;
}

void ExpectSameWeights(const TwoRankRun& a, const TwoRankRun& b, const std::string& what) {
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(a.weights[rank].size(), b.weights[rank].size());
    for (size_t p = 0; p < a.weights[rank].size(); ++p) {
      EXPECT_TRUE(SameBits(a.weights[rank][p], b.weights[rank][p])) << what << ": rank " << rank << " weight " << p;
    }
    EXPECT_EQ(a.losses[rank], b.losses[rank]) << what;
  }
}

void ExpectOverlapChangesNoBit(int micro_batches) {
  const TwoRankRun after = TrainTwoRanks(/*overlap=*/false, micro_batches);
  const TwoRankRun beside = TrainTwoRanks(/*overlap=*/true, micro_batches);
  ASSERT_GE(beside.buckets, 3);
  ExpectSameWeights(after, beside, "overlapped vs after the backward pass");
  for (size_t p = 0; p < beside.weights[0].size(); ++p) {
    EXPECT_TRUE(SameBits(beside.weights[0][p], beside.weights[1][p])) << "the replicas drifted apart: weight " << p;
  }
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(after.reports[rank], 0) << "no overlap: the trainer reports nothing";
    EXPECT_EQ(after.started_before_sum[rank], std::vector<size_t>(3, 0));
    EXPECT_EQ(beside.reports[rank], 3 * 6) << "six gradients reported per step";
    // All but the last bucket (the first layer's last gradient and the loss) were under
    // way when the backward pass ended.
    EXPECT_EQ(beside.started_before_sum[rank], std::vector<size_t>(3, static_cast<size_t>(beside.buckets - 1)));
  }
}

TEST(OverlappedGradientSync, SameWeightsAsSummingAfterTheBackwardPass) { ExpectOverlapChangesNoBit(1); }

TEST(OverlappedGradientSync, SameWeightsWithAccumulatedMicroBatches) { ExpectOverlapChangesNoBit(2); }

}  // namespace
}  // namespace onnx_amp
