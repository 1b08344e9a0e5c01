// How a step's gradients are laid out in all-reduce buckets, the same for host memory
// (gradient_sync.h) and device memory (device_gradient_sync.h): the parameters, in the order
// the backward pass finishes their gradients (last layer first), packed into buffers of
// about `bucket_elements` float32 values, each gradient at a 64-byte boundary (a gradient
// larger than a bucket gets one of its own), and the step's loss, padded, at the end of the
// last bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace onnx_amp {

// What a step's gradient all-reduce moves, per rank.
struct GradientSyncVolume {
  int64_t buckets = 0;
  int64_t payload_bytes = 0;  // bytes each rank contributes to the sums (gradients, padding, loss)
  int64_t collectives = 0;    // all-reduce calls per step, the skip agreement included
};

struct BucketPlan {
  struct Placement {
    size_t bucket = 0;
    int64_t offset = 0;  // in elements
    int64_t elements = 0;
  };
  std::vector<int64_t> sizes;          // elements per bucket, padding and the loss included
  std::vector<int64_t> members;        // gradients per bucket (the loss counts in the last)
  std::vector<Placement> placements;   // per gradient
  int64_t loss_offset = 0;             // in the last bucket

  // Every bucket's all-reduce and the skip agreement.
  GradientSyncVolume Volume() const;
};

// `elements`: each gradient's element count; `order`: every gradient index once, in the
// order the backward pass finishes them. `bucket_elements` >= 16.
BucketPlan PlanBuckets(std::span<const int64_t> elements, std::span<const size_t> order, int64_t bucket_elements);

// Gradient indices in parameter order, for a sync that was never told the backward order.
std::vector<size_t> ParameterOrder(size_t gradients);

}  // namespace onnx_amp
