#include "runtime/dist/bucket_plan.h"

#include "runtime/core/status.h"

namespace onnx_amp {
namespace {

constexpr int64_t kAlignElements = 16;  // 64 bytes of float32: the CPU buffers' alignment, and CUDA's vector loads'

int64_t Aligned(int64_t elements) { return (elements + kAlignElements - 1) / kAlignElements * kAlignElements; }

}  // namespace

GradientSyncVolume BucketPlan::Volume() const {
  GradientSyncVolume volume;
  volume.buckets = static_cast<int64_t>(sizes.size());
  for (int64_t size : sizes) volume.payload_bytes += size * static_cast<int64_t>(sizeof(float));
  volume.collectives = volume.buckets + 1;
  return volume;
}

BucketPlan PlanBuckets(std::span<const int64_t> elements, std::span<const size_t> order, int64_t bucket_elements) {
  ONNX_AMP_ASSERT(order.size() == elements.size(), "a bucket plan orders every gradient");
  BucketPlan plan;
  plan.placements.assign(elements.size(), BucketPlan::Placement{});
  for (size_t index : order) {
    ONNX_AMP_ASSERT(index < elements.size(), "gradient index out of range in the bucket plan");
    const int64_t size = Aligned(elements[index]);
    if (plan.sizes.empty() || (plan.sizes.back() > 0 && plan.sizes.back() + size > bucket_elements)) {
      plan.sizes.push_back(0);
      plan.members.push_back(0);
    }
    plan.placements[index] = {plan.sizes.size() - 1, plan.sizes.back(), elements[index]};
    plan.sizes.back() += size;
    ++plan.members.back();
  }
  if (plan.sizes.empty()) {
    plan.sizes.push_back(0);
    plan.members.push_back(0);
  }
  plan.loss_offset = plan.sizes.back();
  plan.sizes.back() += kAlignElements;  // the loss, padded
  ++plan.members.back();
  return plan;
}

std::vector<size_t> ParameterOrder(size_t gradients) {
  std::vector<size_t> order(gradients);
  for (size_t p = 0; p < gradients; ++p) order[p] = p;
  return order;
}

}  // namespace onnx_amp
