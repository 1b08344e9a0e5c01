// ReplicaSync (runtime/train/replica_sync.h) over a host-memory Communicator: what keeps
// data-parallel replicas identical, step after step.
//
// Gradients are summed in float32 in buckets: consecutive parameters are packed into
// buffers of about `bucket_bytes` (each gradient at a 64-byte boundary; a gradient larger
// than a bucket gets one of its own), one all-reduce per bucket, and the summed gradients
// handed to the update graph are views into the buckets (no copy back). Packing costs one
// pass over the gradients and buys two things: one call per bucket instead of one per tensor
// (biases are tiny, and each call costs a round of latency), and sums that never alias the
// executor's outputs. The step's loss sum travels in the last bucket.
//
// The executor hands back every gradient at the end of the backward pass, so buckets are
// reduced after it, not overlapped with it; `ReduceBucket` per ready bucket is where an
// executor that reports finished outputs would start them early.
//
// The skip decision is a MAX all-reduce of {skip, -first non-finite index}: the summed
// gradients are the same bits on every rank with the reductions Open MPI uses, so the ranks
// already agree, but MPI does not promise identical results on every rank, and one rank
// applying an update that another skipped would split the replicas for good.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/dist/communicator.h"
#include "runtime/train/replica_sync.h"

namespace onnx_amp {

// What a step's gradient all-reduce moves, per rank.
struct GradientSyncVolume {
  int64_t buckets = 0;
  int64_t payload_bytes = 0;  // bytes each rank contributes to the sums (gradients, padding, loss)
  int64_t collectives = 0;    // all-reduce calls per step, the skip agreement included
};

class GradientSync final : public ReplicaSync {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{8} << 20;

  // `communicator` must outlive this object and reduce host memory.
  explicit GradientSync(Communicator& communicator, int64_t bucket_bytes = kDefaultBucketBytes);

  int rank() const override { return communicator_.rank(); }
  int ranks() const override { return communicator_.size(); }
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override;
  Status AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) override;
  Status SumValues(std::span<double> values, std::string_view what) override;
  Status CheckSameState(uint64_t fingerprint, std::string_view what) override;

  // Known after the first step.
  const GradientSyncVolume& volume() const { return volume_; }

 private:
  struct Placement {
    size_t bucket = 0;
    int64_t offset = 0;  // in elements
  };
  void PlanBuckets(const std::vector<Tensor>& gradients);
  Status ReduceBucket(size_t bucket, int64_t step);

  Communicator& communicator_;
  const int64_t bucket_elements_;
  std::vector<int64_t> bucket_sizes_;  // elements, padding included
  std::vector<Tensor> buckets_;        // float32 [bucket_sizes_[b]]
  std::vector<Placement> placements_;  // per gradient
  int64_t loss_offset_ = 0;            // in the last bucket
  GradientSyncVolume volume_;
};

}  // namespace onnx_amp
