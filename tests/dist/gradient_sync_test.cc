// GradientSync over in-process ranks (thread_communicator.h): bucket layout and exact sums
// (integer-valued floats, so any summation order gives the same bits), buckets started in
// the planned order as gradients are reported, the skip agreement, the replica check, and
// the summed gradients' views outliving a later step.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "runtime/dist/gradient_sync.h"
#include "tests/dist/thread_communicator.h"

namespace onnx_amp {
namespace {

using testing::ThreadCommunicator;
using testing::ThreadGroup;

const std::vector<Shape> kShapes = {{3, 5}, {7}, {40}, {2, 2}};

// What the ranks' threads found wrong, kept for the test's own thread to report.
class FailureLog {
 public:
  void Expect(bool condition, const std::string& what) {
    if (condition) return;
    std::lock_guard<std::mutex> lock(mutex_);
    failures_.push_back(what);
  }
  // Read after the ranks' threads have joined.
  const std::vector<std::string>& all() const { return failures_; }

 private:
  std::mutex mutex_;
  std::vector<std::string> failures_;
};

// Rank r's gradient p holds r * 1000 + 100 * p + i at element i.
std::vector<Tensor> RankGradients(int rank) {
  std::vector<Tensor> gradients;
  for (size_t p = 0; p < kShapes.size(); ++p) {
    Tensor tensor = Tensor::Empty(DType::kFloat32, kShapes[p]);
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      tensor.data<float>()[i] = static_cast<float>(rank * 1000 + 100 * static_cast<int64_t>(p) + i);
    }
    gradients.push_back(tensor);
  }
  return gradients;
}

TEST(GradientSync, SumsEveryGradientAndTheLossInBuckets) {
  constexpr int kRanks = 3;
  ThreadGroup group(kRanks);
  FailureLog failures;
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    // 64 floats per bucket: gradients padded to 16, 16, 48, 16 elements go as {16, 16} and
    // {48, 16}, and the loss (padded to 16) joins the last bucket.
    GradientSync sync(communicator, 64 * sizeof(float));
    std::vector<Tensor> held;
    for (int step = 1; step <= 2; ++step) {
      std::vector<Tensor> gradients = RankGradients(rank);
      double loss = rank + 0.5 + step;
      failures.Expect(sync.SumGradients(gradients, loss, step).ok(), "SumGradients failed");
      failures.Expect(loss == 4.5 + 3 * step, "loss sum");
      for (size_t p = 0; p < kShapes.size(); ++p) {
        failures.Expect(gradients[p].shape() == kShapes[p], "shape of gradient " + std::to_string(p));
        for (int64_t i = 0; i < gradients[p].num_elements(); ++i) {
          const float want = static_cast<float>(3000 + kRanks * (100 * static_cast<int64_t>(p) + i));
          failures.Expect(gradients[p].data<float>()[i] == want, "sum of gradient " + std::to_string(p));
        }
      }
      if (step == 1) held = gradients;  // still referenced while step 2 runs
    }
    failures.Expect(held[2].data<float>()[5] == static_cast<float>(3000 + kRanks * 205), "a held view was overwritten");
    failures.Expect(sync.volume().buckets == 2, "two buckets");
    failures.Expect(sync.volume().payload_bytes == (32 + 80) * 4, "payload bytes");
    failures.Expect(sync.volume().collectives == 3, "collectives per step");
  });
  EXPECT_TRUE(failures.all().empty()) << failures.all().front();
}

TEST(GradientSync, StartsBucketsInBackwardOrderAsTheirGradientsAreReported) {
  ThreadGroup group(2);
  FailureLog failures;
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    // 32 floats per bucket, planned last gradient first: {3} (16), {2} (48, alone), then
    // {1, 0} (16 + 16) with the loss.
    GradientSync sync(communicator, 32 * sizeof(float));
    const std::vector<int64_t> elements = {15, 7, 40, 4};
    const std::vector<size_t> order = {3, 2, 1, 0};
    sync.PlanGradients(elements, order);
    failures.Expect(sync.volume().buckets == 3, "three buckets");
    std::vector<Tensor> gradients = RankGradients(rank);
    // Bucket 2 of the plan is complete first, but buckets start in plan order.
    failures.Expect(sync.GradientReady(2, gradients[2], 1).ok(), "report 2");
    failures.Expect(sync.buckets_started() == 0, "bucket 2 waits for bucket 1");
    failures.Expect(communicator.collectives() == 0, "no collective before bucket 1 is complete");
    failures.Expect(sync.GradientReady(3, gradients[3], 1).ok(), "report 3");
    failures.Expect(sync.buckets_started() == 2, "buckets 1 and 2 start once both are complete");
    failures.Expect(sync.GradientReady(1, gradients[1], 1).ok(), "report 1");
    failures.Expect(sync.buckets_started() == 2, "the last bucket waits for gradient 0 and the loss");
    // Gradient 0 comes with SumGradients; what was reported is not read again.
    gradients[3] = Tensor::Zeros(DType::kFloat32, kShapes[3]);
    double loss = rank + 1.0;
    failures.Expect(sync.SumGradients(gradients, loss, 1).ok(), "SumGradients");
    failures.Expect(communicator.collectives() == 3, "one collective per bucket");
    failures.Expect(loss == 3.0, "loss sum");
    for (size_t p = 0; p < kShapes.size(); ++p) {
      for (int64_t i = 0; i < gradients[p].num_elements(); ++i) {
        const float want = static_cast<float>(1000 + 2 * (100 * static_cast<int64_t>(p) + i));
        failures.Expect(gradients[p].data<float>()[i] == want, "sum of gradient " + std::to_string(p));
      }
    }
    failures.Expect(sync.buckets_started() == 0, "between steps");
  });
  EXPECT_TRUE(failures.all().empty()) << failures.all().front();
}

TEST(GradientSync, OneRankSkippingMakesEveryRankSkip) {
  ThreadGroup group(3);
  bool skips[3];
  int64_t firsts[3];
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator);
    // Only rank 1 saw a non-finite gradient (index 3); rank 2 a later one (index 5).
    bool skip = rank != 0;
    int64_t first = rank == 1 ? 3 : (rank == 2 ? 5 : -1);
    ASSERT_TRUE(sync.AgreeOnSkip(skip, first, 1).ok());
    skips[rank] = skip;
    firsts[rank] = first;
  });
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(skips[rank]) << "rank " << rank;
    EXPECT_EQ(firsts[rank], 3) << "rank " << rank;
  }
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator);
    bool skip = false;
    int64_t first = -1;
    ASSERT_TRUE(sync.AgreeOnSkip(skip, first, 2).ok());
    EXPECT_FALSE(skip);
    EXPECT_EQ(first, -1);
  });
}

TEST(GradientSync, ReplicaCheckFailsOnEveryRankWhenOneDiffers) {
  ThreadGroup group(3);
  Status results[3];
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator);
    ASSERT_TRUE(sync.CheckSameState(0xabcdef0123456789ULL, "state").ok());
    results[rank] = sync.CheckSameState(rank == 2 ? 42 : 0xabcdef0123456789ULL, "training state at step 7");
  });
  for (const Status& status : results) {
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(status.message().find("do not hold the same training state at step 7"), std::string::npos)
        << status.message();
  }
}

TEST(GradientSync, SumsEvaluationCounts) {
  ThreadGroup group(2);
  group.Run([&](int rank) {
    ThreadCommunicator communicator(group, rank);
    GradientSync sync(communicator);
    double values[3] = {1.25 * (rank + 1), 10.0 + rank, 100.0};
    ASSERT_TRUE(sync.SumValues(values, "counts").ok());
    EXPECT_EQ(values[0], 3.75);
    EXPECT_EQ(values[1], 21.0);
    EXPECT_EQ(values[2], 200.0);
  });
}

}  // namespace
}  // namespace onnx_amp
