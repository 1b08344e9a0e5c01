#include "runtime/dist/gradient_sync.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace onnx_amp {
namespace {

constexpr int64_t kAlignElements = 16;  // 64 bytes of float32, the CPU buffers' alignment

int64_t Aligned(int64_t elements) { return (elements + kAlignElements - 1) / kAlignElements * kAlignElements; }

std::string StepName(int64_t step) { return "step " + std::to_string(step); }

}  // namespace

GradientSync::GradientSync(Communicator& communicator, int64_t bucket_bytes, bool overlap)
    : communicator_(communicator),
      bucket_elements_(std::max<int64_t>(kAlignElements, bucket_bytes / static_cast<int64_t>(sizeof(float)))),
      overlap_(overlap) {}

void GradientSync::PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) {
  PlanBuckets(elements, completion_order);
}

void GradientSync::PlanBuckets(std::span<const int64_t> elements, std::span<const size_t> order) {
  ONNX_AMP_ASSERT(order.size() == elements.size() && !step_open_, "a bucket plan orders every gradient, between steps");
  bucket_sizes_.clear();
  bucket_members_.clear();
  placements_.assign(elements.size(), Placement{});
  for (size_t index : order) {
    ONNX_AMP_ASSERT(index < elements.size(), "gradient index out of range in the bucket plan");
    const int64_t size = Aligned(elements[index]);
    if (bucket_sizes_.empty() || (bucket_sizes_.back() > 0 && bucket_sizes_.back() + size > bucket_elements_)) {
      bucket_sizes_.push_back(0);
      bucket_members_.push_back(0);
    }
    placements_[index] = {bucket_sizes_.size() - 1, bucket_sizes_.back(), elements[index]};
    bucket_sizes_.back() += size;
    ++bucket_members_.back();
  }
  if (bucket_sizes_.empty()) {
    bucket_sizes_.push_back(0);
    bucket_members_.push_back(0);
  }
  loss_offset_ = bucket_sizes_.back();
  bucket_sizes_.back() += kAlignElements;  // the loss, padded
  ++bucket_members_.back();
  buckets_.assign(bucket_sizes_.size(), Tensor());
  volume_.buckets = static_cast<int64_t>(bucket_sizes_.size());
  volume_.payload_bytes = 0;
  for (int64_t size : bucket_sizes_) volume_.payload_bytes += size * static_cast<int64_t>(sizeof(float));
  volume_.collectives = volume_.buckets + 1;
}

void GradientSync::OpenStep() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    // Last step's views are normally gone; a bucket still held elsewhere is not reused.
    if (!buckets_[b].defined() || buckets_[b].buffer().use_count() > 1) {
      buckets_[b] = Tensor::Zeros(DType::kFloat32, {bucket_sizes_[b]});
    }
  }
  packed_.assign(placements_.size(), false);
  bucket_unpacked_ = bucket_members_;
  next_bucket_ = 0;
  pending_.clear();
  step_open_ = true;
}

Status GradientSync::Pack(size_t index, const Tensor& gradient) {
  if (index >= placements_.size() || packed_[index]) {
    return InternalError("gradient " + std::to_string(index) + " is not planned or was reported twice");
  }
  const Placement& at = placements_[index];
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
  if (placements_.empty()) return InternalError("GradientReady before PlanGradients");
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
  if (placements_.size() != gradients.size()) {
    std::vector<int64_t> elements;
    std::vector<size_t> order;
    for (const Tensor& gradient : gradients) {
      order.push_back(elements.size());
      elements.push_back(gradient.num_elements());
    }
    PlanBuckets(elements, order);
  }
  if (!step_open_) OpenStep();
  step_open_ = false;  // the next call opens the next step, whatever happens below
  for (size_t p = 0; p < gradients.size(); ++p) {
    if (!packed_[p]) ONNX_AMP_RETURN_IF_ERROR(Pack(p, gradients[p]));
  }
  float* loss = buckets_.back().data<float>() + loss_offset_;
  *loss = static_cast<float>(loss_sum);
  --bucket_unpacked_.back();
  ONNX_AMP_RETURN_IF_ERROR(StartCompleteBuckets(step));
  for (const std::unique_ptr<PendingCollective>& pending : pending_) ONNX_AMP_RETURN_IF_ERROR(pending->Wait());
  pending_.clear();
  next_bucket_ = 0;
  for (size_t p = 0; p < gradients.size(); ++p) {
    const Placement& at = placements_[p];
    gradients[p] = Tensor(DType::kFloat32, gradients[p].shape(), buckets_[at.bucket].buffer(),
                          static_cast<size_t>(at.offset) * sizeof(float));
  }
  loss_sum = *loss;
  return Status::Ok();
}

Status GradientSync::AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) {
  // MAX of the negated index is the lowest index; "none" sits below every negated index.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  int64_t values[2] = {skip ? 1 : 0, first_non_finite >= 0 ? -first_non_finite : kNone};
  ONNX_AMP_RETURN_IF_ERROR(communicator_.AllReduce(values, 2, DType::kInt64, ReduceOp::kMax,
                                                   "the skip agreement of " + StepName(step)));
  skip = values[0] != 0;
  first_non_finite = values[1] == kNone ? -1 : -values[1];
  return Status::Ok();
}

Status GradientSync::SumValues(std::span<double> values, std::string_view what) {
  return communicator_.AllReduce(values.data(), static_cast<int64_t>(values.size()), DType::kFloat64, ReduceOp::kSum,
                                 what);
}

Status GradientSync::CheckSameState(uint64_t fingerprint, std::string_view what) {
  // MAX of {f, -f} gives the largest and the smallest fingerprint; they differ iff some
  // rank differs. Dropping the top bit keeps -f representable.
  const int64_t mine = static_cast<int64_t>(fingerprint >> 1);
  int64_t values[2] = {mine, -mine};
  ONNX_AMP_RETURN_IF_ERROR(communicator_.AllReduce(values, 2, DType::kInt64, ReduceOp::kMax,
                                                   "the replica check of the " + std::string(what)));
  if (values[0] == -values[1]) return Status::Ok();
  return InvalidArgument("the ranks do not hold the same " + std::string(what) + " (this is rank " +
                         std::to_string(rank()) + " of " + std::to_string(ranks()) +
                         "): give every rank the same model, data and flags, and a --checkpoint-dir that every rank "
                         "reads");
}

}  // namespace onnx_amp
