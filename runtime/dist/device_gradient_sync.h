// ReplicaSync (runtime/train/replica_sync.h) for a trainer on a GPU, over a communicator
// that reduces device memory (NCCL, one GPU per rank): the step's float32 gradients never
// leave the device.
//
// Gradients are packed on the device into buckets laid out as on the host (bucket_plan.h),
// the step's loss is copied into the last one, and every bucket's all-reduce is enqueued on
// the communicator's stream; the summed gradients handed to the update graph are views
// into the device buckets. The device's stream and NCCL's are ordered through the host: the
// device is synchronized once the buckets are packed, and the sums are waited for before
// the update graph is queued. This runs after the backward pass, not beside it: the
// executor's output_ready reports a value when its kernel is queued, not when the GPU has
// finished it, and the Device interface has no event an NCCL stream could wait on; the
// step waits for its skip flag on the host anyway.
//
// The skip decision, the evaluation sums and the replica check are host values: they go
// through `host` (the MPI communicator NCCL was bootstrapped over), as in GradientSync.
// What makes the ranks skip the same steps: the SUM. An inf or NaN in any rank's gradient
// survives it (inf + finite = inf, inf + -inf = NaN, NaN + x = NaN), and NCCL's
// all-reduce hands every rank the same bits in practice (its ring and tree algorithms reduce
// each element once and copy the result to every rank; NCCL does not promise it), so every
// rank's update graph sees the same non-finite sum and skips. The explicit MAX of {skip, -first non-finite index}
// (replica_agreement.h) comes after the update graph, which updates the weights in place
// where its own check passed: it cannot undo an update. It keeps one loss-scale record on
// every rank, and where the sums did differ (a rank updated, another skipped) the trainer
// stops with an error instead of training replicas that have parted.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/dist/bucket_plan.h"
#include "runtime/dist/communicator.h"
#include "runtime/exec/device.h"
#include "runtime/train/replica_sync.h"

namespace onnx_amp {

class DeviceGradientSync final : public ReplicaSync {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{8} << 20;

  // `device_communicator` reduces memory of `device`; `host` joins the same ranks in host
  // memory. All three must outlive this object.
  DeviceGradientSync(Communicator& device_communicator, Communicator& host, Device& device,
                     int64_t bucket_bytes = kDefaultBucketBytes);

  int rank() const override { return device_communicator_.rank(); }
  int ranks() const override { return device_communicator_.size(); }
  void PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) override;
  bool overlaps_backward() const override { return false; }
  Status GradientReady(size_t index, const Tensor& gradient, int64_t step) override;
  Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) override;
  Status AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) override;
  Status SumValues(std::span<double> values, std::string_view what) override;
  Status CheckSameState(uint64_t fingerprint, std::string_view what) override;

  // Known once planned (PlanGradients or the first step).
  const GradientSyncVolume& volume() const { return volume_; }

 private:
  void Plan(std::span<const int64_t> elements, std::span<const size_t> order);
  // Device buckets for this step: last step's, unless its views are still held.
  Status OpenBuckets();
  // Copies gradient `index` (on the device, or a host tensor: micro-batch sums are made on
  // the host) into its place in its bucket.
  Status Pack(size_t index, const Tensor& gradient);
  float* LossAddress();

  Communicator& device_communicator_;
  Communicator& host_;
  Device& device_;
  const int64_t bucket_elements_;
  BucketPlan plan_;
  std::vector<Tensor> buckets_;  // float32 [plan_.sizes[b]] on the device
  GradientSyncVolume volume_;
};

}  // namespace onnx_amp
