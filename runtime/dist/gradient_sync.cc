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

GradientSync::GradientSync(Communicator& communicator, int64_t bucket_bytes)
    : communicator_(communicator),
      bucket_elements_(std::max<int64_t>(kAlignElements, bucket_bytes / static_cast<int64_t>(sizeof(float)))) {}

void GradientSync::PlanBuckets(const std::vector<Tensor>& gradients) {
  bucket_sizes_.clear();
  placements_.clear();
  for (const Tensor& gradient : gradients) {
    const int64_t elements = Aligned(gradient.num_elements());
    if (bucket_sizes_.empty() || (bucket_sizes_.back() > 0 && bucket_sizes_.back() + elements > bucket_elements_)) {
      bucket_sizes_.push_back(0);
    }
    placements_.push_back({bucket_sizes_.size() - 1, bucket_sizes_.back()});
    bucket_sizes_.back() += elements;
  }
  if (bucket_sizes_.empty()) bucket_sizes_.push_back(0);
  loss_offset_ = bucket_sizes_.back();
  bucket_sizes_.back() += kAlignElements;  // the loss, padded
  buckets_.assign(bucket_sizes_.size(), Tensor());
  volume_.buckets = static_cast<int64_t>(bucket_sizes_.size());
  volume_.payload_bytes = 0;
  for (int64_t size : bucket_sizes_) volume_.payload_bytes += size * static_cast<int64_t>(sizeof(float));
  volume_.collectives = volume_.buckets + 1;
}

Status GradientSync::ReduceBucket(size_t bucket, int64_t step) {
  const std::string what = "the gradient all-reduce of " + StepName(step) + " (bucket " + std::to_string(bucket + 1) +
                           " of " + std::to_string(buckets_.size()) + ")";
  Tensor& buffer = buckets_[bucket];
  return communicator_.AllReduce(buffer.raw_data(), buffer.num_elements(), DType::kFloat32, ReduceOp::kSum, what);
}

Status GradientSync::SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) {
  if (placements_.size() != gradients.size()) PlanBuckets(gradients);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    // Last step's views are normally gone; a bucket still held elsewhere is not reused.
    if (!buckets_[b].defined() || buckets_[b].buffer().use_count() > 1) {
      buckets_[b] = Tensor::Zeros(DType::kFloat32, {bucket_sizes_[b]});
    }
  }
  for (size_t p = 0; p < gradients.size(); ++p) {
    const Tensor& gradient = gradients[p];
    if (gradient.dtype() != DType::kFloat32) return InternalError("gradients are summed in float32");
    float* to = buckets_[placements_[p].bucket].data<float>() + placements_[p].offset;
    std::memcpy(to, gradient.raw_data(), gradient.bytes());
  }
  float* loss = buckets_.back().data<float>() + loss_offset_;
  *loss = static_cast<float>(loss_sum);
  for (size_t b = 0; b < buckets_.size(); ++b) ONNX_AMP_RETURN_IF_ERROR(ReduceBucket(b, step));
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
