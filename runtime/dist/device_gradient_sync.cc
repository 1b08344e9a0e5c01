#include "runtime/dist/device_gradient_sync.h"

#include <algorithm>
#include <string>

#include "runtime/dist/replica_agreement.h"

namespace onnx_amp {
namespace {

constexpr int64_t kMinBucketElements = 16;

}  // namespace

DeviceGradientSync::DeviceGradientSync(Communicator& device_communicator, Communicator& host, Device& device,
                                       int64_t bucket_bytes)
    : device_communicator_(device_communicator),
      host_(host),
      device_(device),
      bucket_elements_(std::max<int64_t>(kMinBucketElements, bucket_bytes / static_cast<int64_t>(sizeof(float)))) {}

void DeviceGradientSync::PlanGradients(std::span<const int64_t> elements, std::span<const size_t> completion_order) {
  Plan(elements, completion_order);
}

void DeviceGradientSync::Plan(std::span<const int64_t> elements, std::span<const size_t> order) {
  plan_ = PlanBuckets(elements, order, bucket_elements_);
  buckets_.assign(plan_.sizes.size(), Tensor());
  volume_ = plan_.Volume();
}

Status DeviceGradientSync::GradientReady(size_t, const Tensor&, int64_t) {
  return InternalError("the device gradient sync sums after the backward pass: GradientReady is not used");
}

Status DeviceGradientSync::OpenBuckets() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].defined() && buckets_[b].buffer().use_count() == 1) continue;
    const size_t bytes = static_cast<size_t>(plan_.sizes[b]) * sizeof(float);
    ONNX_AMP_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, device_.Allocate(bytes));
    // Zeroed once, so that the padding between gradients sums zeros, not stale bits.
    const std::vector<float> zeros(static_cast<size_t>(plan_.sizes[b]), 0.0f);
    ONNX_AMP_RETURN_IF_ERROR(device_.CopyFromHost(buffer->data(), zeros.data(), bytes));
    buckets_[b] = Tensor(DType::kFloat32, {plan_.sizes[b]}, std::move(buffer));
  }
  return Status::Ok();
}

Status DeviceGradientSync::Pack(size_t index, const Tensor& gradient) {
  const BucketPlan::Placement& at = plan_.placements[index];
  if (gradient.dtype() != DType::kFloat32 || gradient.num_elements() != at.elements) {
    return InternalError("gradient " + std::to_string(index) + " is not float32 of its planned size");
  }
  float* destination = buckets_[at.bucket].data<float>() + at.offset;
  if (gradient.device() == DeviceKind::kCpu) return device_.CopyFromHost(destination, gradient.raw_data(), gradient.bytes());
  if (gradient.device() != device_.kind()) {
    return InternalError("gradient " + std::to_string(index) + " is on another device than the sync's");
  }
  return device_.CopyOnDevice(destination, gradient.raw_data(), gradient.bytes());
}

float* DeviceGradientSync::LossAddress() { return buckets_.back().data<float>() + plan_.loss_offset; }

Status DeviceGradientSync::SumGradients(std::vector<Tensor>& gradients, double& loss_sum, int64_t step) {
  if (plan_.placements.size() != gradients.size()) {
    std::vector<int64_t> elements;
    for (const Tensor& gradient : gradients) elements.push_back(gradient.num_elements());
    Plan(elements, ParameterOrder(gradients.size()));
  }
  ONNX_AMP_RETURN_IF_ERROR(OpenBuckets());
  for (size_t p = 0; p < gradients.size(); ++p) ONNX_AMP_RETURN_IF_ERROR(Pack(p, gradients[p]));
  const float loss = static_cast<float>(loss_sum);
  ONNX_AMP_RETURN_IF_ERROR(device_.CopyFromHost(LossAddress(), &loss, sizeof(loss)));
  // The communicator's stream does not wait for the device's: the buckets must be packed
  // before the first all-reduce is enqueued.
  ONNX_AMP_RETURN_IF_ERROR(device_.Synchronize());
  std::vector<std::unique_ptr<PendingCollective>> pending;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const std::string what = "the gradient all-reduce of step " + std::to_string(step) + " (bucket " +
                             std::to_string(b + 1) + " of " + std::to_string(buckets_.size()) + ", on the GPU)";
    ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<PendingCollective> started,
                              device_communicator_.StartAllReduce(buckets_[b].raw_data(), buckets_[b].num_elements(),
                                                                  DType::kFloat32, ReduceOp::kSum, what));
    pending.push_back(std::move(started));
  }
  // Waited for here, before the update graph is queued on the device's stream.
  for (const std::unique_ptr<PendingCollective>& collective : pending) ONNX_AMP_RETURN_IF_ERROR(collective->Wait());
  for (size_t p = 0; p < gradients.size(); ++p) {
    const BucketPlan::Placement& at = plan_.placements[p];
    gradients[p] = Tensor(DType::kFloat32, gradients[p].shape(), buckets_[at.bucket].buffer(),
                          static_cast<size_t>(at.offset) * sizeof(float));
  }
  float summed = 0.0f;
  ONNX_AMP_RETURN_IF_ERROR(device_.CopyToHost(&summed, LossAddress(), sizeof(summed)));
  loss_sum = summed;
  return Status::Ok();
}

Status DeviceGradientSync::AgreeOnSkip(bool& skip, int64_t& first_non_finite, int64_t step) {
  return AgreeOnSkipOver(host_, skip, first_non_finite, step);
}

Status DeviceGradientSync::SumValues(std::span<double> values, std::string_view what) {
  return host_.AllReduce(values.data(), static_cast<int64_t>(values.size()), DType::kFloat64, ReduceOp::kSum, what);
}

Status DeviceGradientSync::CheckSameState(uint64_t fingerprint, std::string_view what) {
  return CheckSameStateOver(host_, fingerprint, what);
}

}  // namespace onnx_amp
