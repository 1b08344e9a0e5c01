#include "runtime/dist/gradient_sync.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/dist/replica_agreement.h"

namespace onnx_amp {
namespace {

constexpr int64_t kMinBucketElements = 16;

std::string StepName(int64_t step) { return "step " + std::to_string(step); }

}  // namespace

GradientSync::GradientSync(Communicator& communicator, int64_t bucket_bytes, bool overlap)
    : communicator_(communicator),
      bucket_elements_(std::max<int64_t>(kMinBucketElements, bucket_bytes / static_cast<int64_t>(sizeof(float)))),
      overlap_(overlap) {}

void GradientSync::PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) {
  Plan(elements, completion_order);
}

void GradientSync::Plan(std::span<const int64_t> elements, std::span<const size_t> order) {
  ONNX_AMP_ASSERT(!step_open_, "buckets are planned between steps");
  plan_ = PlanBuckets(elements, order, bucket_elements_);
  buckets_.assign(plan_.sizes.size(), Tensor());
  volume_ = plan_.Volume();
}

void GradientSync::OpenStep() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    // Last step's views are normally gone; a bucket still held elsewhere is not reused.
    if (!buckets_[b].defined() || buckets_[b].buffer().use_count() > 1) {
      buckets_[b] = Tensor::Zeros(DType::kFloat32, {plan_.sizes[b]});
    }
  }
  packed_.assign(plan_.placements.size(), false);
  bucket_unpacked_ = plan_.members;
  next_bucket_ = 0;
  pending_.clear();
  step_open_ = true;
}

Status GradientSync::Pack(size_t index, const Tensor& gradient) {
  if (index >= plan_.placements.size() || packed_[index]) {
    return InternalError("gradient " + std::to_string(index) + " is not planned or was reported twice");
  }
  const BucketPlan::Placement& at = plan_.placements[index];
  if (gradient.dtype() != DType::kFloat32 || gradient.device() != DeviceKind::kCpu ||
      gradient.num_elements() != at.elements) {
    return InternalError("gradients are summed as float32 host tensors of their planned size");
  }
  std::memcpy(buckets_[at.bucket].data<float>() + at.offset, gradient.raw_data(), gradient.bytes());
  packed_[index] = true;
  --bucket_unpacked_[at.bucket];
  return Status::Ok();
}

Status GradientSync::StartCompleteBuckets(int64_t step) {
  for (; next_bucket_ < buckets_.size() && bucket_unpacked_[next_bucket_] == 0; ++next_bucket_) {
    const std::string what = "the gradient all-reduce of " + StepName(step) + " (bucket " +
                             std::to_string(next_bucket_ + 1) + " of " + std::to_string(buckets_.size()) + ")";
    Tensor& buffer = buckets_[next_bucket_];
    ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<PendingCollective> pending,
                              communicator_.StartAllReduce(buffer.raw_data(), buffer.num_elements(), DType::kFloat32,
                                                           ReduceOp::kSum, what));
    pending_.push_back(std::move(pending));
  }
  return Status::Ok();
}

Status GradientSync::GradientReady(size_t index, const Tensor& gradient, int64_t step) {
  if (!overlap_) return Status::Ok();  // everything is packed in SumGradients
  if (plan_.placements.empty()) return InternalError("GradientReady before PlanGradients");
  if (!step_open_) OpenStep();
  ONNX_AMP_RETURN_IF_ERROR(Pack(index, gradient));
  ONNX_AMP_RETURN_IF_ERROR(StartCompleteBuckets(step));
  // MPI moves started collectives on only inside its calls: each report lends it one.
  for (const std::unique_ptr<PendingCollective>& pending : pending_) {
    ONNX_AMP_RETURN_IF_ERROR(pending->Test().status());
  }
  return Status::Ok();
}

Status GradientSync::SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) {
  if (plan_.placements.size() != gradients.size()) {
    std::vector<int64_t> elements;
    for (const Tensor& gradient : gradients) elements.push_back(gradient.num_elements());
    Plan(elements, ParameterOrder(gradients.size()));
  }
  if (!step_open_) OpenStep();
  step_open_ = false;  // the next call opens the next step, whatever happens below
  for (size_t p = 0; p < gradients.size(); ++p) {
    if (!packed_[p]) ONNX_AMP_RETURN_IF_ERROR(Pack(p, gradients[p]));
  }
  float* loss = buckets_.back().data<float>() + plan_.loss_offset;
  *loss = static_cast<float>(loss_sum);
  --bucket_unpacked_.back();
  ONNX_AMP_RETURN_IF_ERROR(StartCompleteBuckets(step));
  for (const std::unique_ptr<PendingCollective>& pending : pending_) ONNX_AMP_RETURN_IF_ERROR(pending->Wait());
  pending_.clear();
  next_bucket_ = 0;
  for (size_t p = 0; p < gradients.size(); ++p) {
    const BucketPlan::Placement& at = plan_.placements[p];
    gradients[p] = Tensor(DType::kFloat32, gradients[p].shape(), buckets_[at.bucket].buffer(),
                          static_cast<size_t>(at.offset) * sizeof(float));
  }
  loss_sum = *loss;
  return Status::Ok();
}

Status GradientSync::AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) {
  return AgreeOnSkipOver(communicator_, skip, first_non_finite, step);
}

Status GradientSync::SumValues(std::span<double> values, std::string_view what) {
  return communicator_.AllReduce(values.data(), static_cast<int64_t>(values.size()), DType::kFloat64, ReduceOp::kSum,
                                 what);
}

Status GradientSync::CheckSameState(uint64_t fingerprint, std::string_view what) {
  return CheckSameStateOver(communicator_, fingerprint, what);
}

}  // namespace onnx_amp
