// Two trainers joined by GradientSync over in-process ranks, as `mpirun -np 2` joins two
// processes: an inf planted in one rank's gradients (between its backward pass and the
// all-reduce, or as the backward pass reports the gradient) makes both ranks skip the step
// and halve the same loss scale, weights untouched; the next clean step leaves both
// replicas bit-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "runtime/dist/gradient_sync.h"
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

// GradientSync that first writes +inf into one element of gradient `parameter` of this
// rank's own gradients, once, as an overflow in that rank's backward pass would (where the
// gradient reaches the sync: reported during the backward pass, or after it).
class PlantingSync final : public ForwardingSync {
 public:
  PlantingSync(GradientSync& inner, bool plant, size_t parameter)
      : ForwardingSync(inner), plant_(plant), parameter_(parameter) {}
  Status GradientReady(size_t index, const Tensor& gradient, int64_t step) override {
    if (!plant_ || index != parameter_) return inner_.GradientReady(index, gradient, step);
    plant_ = false;
    return inner_.GradientReady(index, Planted(gradient), step);
  }
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override {
    if (plant_) {
      gradients[parameter_] = Planted(gradients[parameter_]);
      plant_ = false;
    }
    return inner_.SumGradients(gradients, loss_sum, step);
  }

 private:
  static Tensor Planted(const Tensor& gradient) {
    Tensor planted = Tensor::Empty(DType::kFloat32, gradient.shape());
    std::memcpy(planted.raw_data(), gradient.raw_data(), planted.bytes());
    planted.data<float>()[planted.num_elements() / 2] = std::numeric_limits<float>::infinity();
    return planted;
  }

  bool plant_;
  const size_t parameter_;
};

std::vector<float> Weights(Trainer& trainer) {
  std::vector<float> all;
  for (const NamedTensor& w : trainer.weights()) {
    all.insert(all.end(), w.tensor.data<float>(), w.tensor.data<float>() + w.tensor.num_elements());
  }
  return all;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `overlap`: the planted gradient reaches the sync during the backward pass (else after it).
void ExpectInfInOneRankSkipsEveryRank(bool overlap) {
  constexpr size_t kPlanted = 2;  // dense2's kernel, on rank 1 only
  ThreadGroup group(2);
  StepResult first[2];
  StepResult second[2];
  float scale_after_skip[2];
  bool unchanged[2];
  std::string planted_name;
  std::vector<float> final_weights[2];
  group.Run([&](int rank) {
    std::unique_ptr<Trainer> trainer = MixedFloat16Trainer();
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator, GradientSync::kDefaultBucketBytes, overlap);
    PlantingSync planting(sync, rank == 1, kPlanted);
    trainer->set_replica_sync(&planting);
    if (rank == 1) planted_name = trainer->weights()[kPlanted].name;
    const std::vector<float> before = Weights(*trainer);
    const Batch batch[] = {MakeBatch(1 + rank)};
    Expected<StepResult> step = trainer->Step(batch);
    ASSERT_TRUE(step.ok()) << step.status().message();
    first[rank] = *step;
    scale_after_skip[rank] = trainer->scaler().scale();
    unchanged[rank] = SameBits(before, Weights(*trainer));
    const Batch clean[] = {MakeBatch(10 + rank)};
    step = trainer->Step(clean);
    ASSERT_TRUE(step.ok()) << step.status().message();
    second[rank] = *step;
    final_weights[rank] = Weights(*trainer);
  });
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_TRUE(first[rank].skipped);
    EXPECT_EQ(first[rank].first_non_finite, planted_name);
    EXPECT_TRUE(std::isfinite(first[rank].loss));
    EXPECT_EQ(first[rank].scale, 32768.0f);
    EXPECT_EQ(scale_after_skip[rank], 16384.0f);
    EXPECT_TRUE(unchanged[rank]) << "a skipped step changed the weights";
    EXPECT_FALSE(second[rank].skipped);
    EXPECT_EQ(second[rank].scale, 16384.0f);
  }
  EXPECT_EQ(first[0].loss, first[1].loss) << "the loss is the mean over both ranks";
  EXPECT_TRUE(SameBits(final_weights[0], final_weights[1])) << "the replicas drifted apart";
}

TEST(ReplicaTrainer, InfInOneRanksGradientsSkipsEveryRankAndHalvesOneScale) { ExpectInfInOneRankSkipsEveryRank(false); }

TEST(ReplicaTrainer, InfReportedDuringTheBackwardPassSkipsEveryRank) { ExpectInfInOneRankSkipsEveryRank(true); }

}  // namespace
}  // namespace onnx_amp
