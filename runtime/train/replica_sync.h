// The hook through which data-parallel replicas stay identical. Each rank runs the same model
// on its shard of every global batch (training_loop.cc picks the shard); the trainer sums
// the step's gradients and loss over the ranks before the update graph and makes every rank
// take the same skip decision, so all ranks apply the same update and keep one loss scale;
// the loop checks that every rank starts from the same state. runtime/dist implements it over
// a communicator. Without one (a single process, the default), the trainer and the loop run
// exactly as before: no call goes through here.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

class Trainer;
struct DataPosition;
struct TrainingRunOptions;

class ReplicaSync {
 public:
  virtual ~ReplicaSync() = default;

  virtual int rank() const = 0;
  virtual int ranks() const = 0;

  // Told once, before the first step: each gradient's element count and the gradient
  // indices in the order the backward pass finishes them (last layer first), so that sums
  // can start in that order while the backward pass goes on.
  virtual void PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) = 0;
  // True when GradientReady starts summing early; the trainer then reports each of a
  // step's final float32 host gradients as soon as the backward pass has finished it.
  virtual bool overlaps_backward() const = 0;
  // Gradient `index` of this step is final (this rank's sum over its micro-batches); its
  // values are taken now, so the caller may reuse `gradient` afterwards.
  virtual Status GradientReady(size_t index, const Tensor& gradient, int64_t step) = 0;
  // Sums the float32 `gradients` (this rank's sums over its micro-batches, one per
  // parameter) and `loss_sum` over every rank, those reported by GradientReady included
  // (only their shapes are read again), and waits for every sum. `gradients` may
  // come back as other tensors of the same shapes holding the sums. `step` (1-based)
  // names the collective in errors.
  virtual Status SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) = 0;
  // Every rank's skip decision: `skip` comes back true on every rank when it was true on
  // any, and `first_non_finite` as the lowest gradient index any rank reported (-1: none).
  // The update graph has run by then, updating in place where its own check passed, so
  // this cannot make ranks skip together: their sums, the same bits on every rank (an inf
  // or NaN of any rank survives the sum), do. It keeps one loss-scale record, and the
  // trainer stops with an error where a rank updated while another skipped.
  virtual Status AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) = 0;
  // Sums `values` over every rank, in place (evaluation counts).
  virtual Status SumValues(std::span<double> values, std::string_view what) = 0;
  // Fails on every rank, naming `what`, unless every rank passes the same `fingerprint`.
  virtual Status CheckSameState(uint64_t fingerprint, std::string_view what) = 0;
};

// A hash of everything the ranks must share at the start of a run: the weights, optimizer
// slots and step count, the loss-scaler state, the data position and the run's options.
uint64_t ReplicaFingerprint(Trainer& trainer, const DataPosition& position, const TrainingRunOptions& options);

}  // namespace onnx_amp
