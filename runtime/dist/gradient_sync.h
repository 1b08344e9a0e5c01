// ReplicaSync (runtime/train/replica_sync.h) over a host-memory Communicator: what keeps
// data-parallel replicas identical, step after step.
//
// Gradients are summed in float32 in buckets (bucket_plan.h: in the order the backward pass
// finishes them, about `bucket_bytes` each), one all-reduce per bucket, and the summed
// gradients handed to the update graph are views into the buckets (no copy back). Packing
// costs one pass over the gradients and buys two things: one call per bucket instead of one
// per tensor (biases are tiny, and each call costs a round of latency), and sums that never
// alias the executor's outputs. The step's loss sum travels in the last bucket.
//
// Overlap: the trainer reports each gradient as the executor finishes it (GradientReady);
// a bucket's non-blocking all-reduce starts as soon as all of its gradients are packed, and
// buckets start in plan order, so every rank starts the same collectives in the same order.
// The last bucket (the first layer's gradients and the loss) starts in SumGradients, which
// then waits for every bucket. Sums are element-wise, so the result is the same bits with
// or without overlap.
//
// The skip decision: every rank's update graph skips the step when its sums hold an inf or
// NaN, and the sums are the same bits on every rank with the reductions Open MPI uses (an
// inf or NaN of one rank survives the sum). After the update graph, a MAX all-reduce of
// {skip, -first non-finite index} (replica_agreement.h) keeps one loss-scale record on every
// rank; MPI does not promise identical results on every rank, and where they did differ
// (one rank updated in place, another skipped) the trainer stops with an error rather than
// let the replicas part for good.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/dist/bucket_plan.h"
#include "runtime/dist/communicator.h"
#include "runtime/train/replica_sync.h"

namespace onnx_amp {

class GradientSync final : public ReplicaSync {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{8} << 20;

  // `communicator` must outlive this object and reduce host memory. `overlap`: start
  // buckets as gradients are reported (else every bucket starts in SumGradients).
  explicit GradientSync(Communicator& communicator, int64_t bucket_bytes = kDefaultBucketBytes, bool overlap = true);

  int rank() const override { return communicator_.rank(); }
  int ranks() const override { return communicator_.size(); }
  void PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) override;
  bool overlaps_backward() const override { return overlap_; }
  Status GradientReady(size_t index, const Tensor& gradient, int64_t step) override;
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override;
  Status AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) override;
  Status SumValues(std::span<double> values, std::string_view what) override;
  Status CheckSameState(uint64_t fingerprint, std::string_view what) override;

  // Known once planned (PlanGradients or the first step).
  const GradientSyncVolume& volume() const { return volume_; }
  // Buckets whose all-reduce has started in the step under way (0 between steps).
  size_t buckets_started() const { return next_bucket_; }

 private:
  void Plan(std::span<const int64_t> elements, std::span<const size_t> order);
  // Fresh buckets where the last step's views are still held; nothing packed yet.
  void OpenStep();
  Status Pack(size_t index, const Tensor& gradient);
  // Starts, in plan order, every bucket whose members are all packed.
  Status StartCompleteBuckets(int64_t step);

  Communicator& communicator_;
  const int64_t bucket_elements_;
  const bool overlap_;
  BucketPlan plan_;
  std::vector<Tensor> buckets_;  // float32 [plan_.sizes[b]]
  GradientSyncVolume volume_;

  // The step under way.
  bool step_open_ = false;
  std::vector<bool> packed_;              // per gradient
  std::vector<int64_t> bucket_unpacked_;  // members not yet packed, per bucket
  size_t next_bucket_ = 0;                // the next bucket to start
  // Declared after buckets_: destroyed (waited for) before the memory they reduce.
  std::vector<std::unique_ptr<PendingCollective>> pending_;  // per started bucket
};

}  // namespace onnx_amp
