#include "ops/common/cuda_copy.h"

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_numeric.cuh"
#include "runtime/cuda/launch.h"

namespace onnx_amp {
namespace {

constexpr int kMaxCopyRank = 8;

struct CopyPlan {
  int rank = 0;
  int64_t total = 0;
  int64_t dims[kMaxCopyRank] = {};
  int64_t src_strides[kMaxCopyRank] = {};
  int64_t dst_strides[kMaxCopyRank] = {};
};

template <typename U>
__global__ void StridedCopyKernel(const U* src, U* dst, CopyPlan plan) {
  ONNX_AMP_GRID_STRIDE_LOOP(i, plan.total) {
    int64_t rest = i, from = 0, to = 0;
    for (int d = plan.rank - 1; d >= 0; --d) {
      const int64_t position = rest % plan.dims[d];
      rest /= plan.dims[d];
      from += position * plan.src_strides[d];
      to += position * plan.dst_strides[d];
    }
    dst[to] = src[from];
  }
}

// Drops unit dims and merges neighbours that are contiguous in both source and target.
CopyPlan Simplify(const std::vector<int64_t>& shape, const std::vector<int64_t>& src, const std::vector<int64_t>& dst) {
  std::vector<int64_t> dims, s, t;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && s.back() == src[d] * shape[d] && t.back() == dst[d] * shape[d]) {
      dims.back() *= shape[d];
      s.back() = src[d];
      t.back() = dst[d];
      continue;
    }
    dims.push_back(shape[d]);
    s.push_back(src[d]);
    t.push_back(dst[d]);
  }
  CopyPlan plan;
  plan.total = 1;
  for (int64_t d : shape) plan.total *= d;
  if (dims.empty()) {
    dims = {1};
    s = {0};
    t = {0};
  }
  plan.rank = static_cast<int>(dims.size());
  for (int d = 0; d < plan.rank && d < kMaxCopyRank; ++d) {
    plan.dims[d] = dims[d];
    plan.src_strides[d] = s[d];
    plan.dst_strides[d] = t[d];
  }
  return plan;
}

}  // namespace

Status LaunchCudaStridedCopy(size_t width, const std::vector<int64_t>& shape, const void* src,
                             const std::vector<int64_t>& src_strides, void* dst,
                             const std::vector<int64_t>& dst_strides, const CudaLaunchEnv& env) {
  const CopyPlan plan = Simplify(shape, src_strides, dst_strides);
  if (plan.total == 0) return Status::Ok();
  if (plan.rank > kMaxCopyRank) return Unsupported("a strided copy over more than 8 dims on CUDA");
  const LaunchShape launch = ElementwiseLaunch(plan.total, env.multiprocessors);
  switch (width) {
    case 1: StridedCopyKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), plan); break;
    case 2: StridedCopyKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), plan); break;
    case 4: StridedCopyKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), plan); break;
    case 8: StridedCopyKernel<<<launch.blocks, launch.threads, 0, env.stream>>>(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), plan); break;
    default: return Unsupported("elements of " + std::to_string(width) + " bytes on CUDA");
  }
  return CudaLaunchStatus("strided copy");
}

Status LaunchCudaBroadcastCopy(size_t width, const Shape& from, const Shape& to, const void* src, void* dst,
                               const CudaLaunchEnv& env) {
  if (from.size() > to.size()) {
    return InvalidArgument("cannot broadcast " + ShapeToString(from) + " to " + ShapeToString(to));
  }
  // Right-aligned: a dim of `from` that is 1 (or missing) repeats its element.
  std::vector<int64_t> src_strides(to.size(), 0), dst_strides(to.size(), 0);
  int64_t src_stride = 1, dst_stride = 1;
  for (int64_t d = static_cast<int64_t>(to.size()) - 1; d >= 0; --d) {
    const int64_t f = d - static_cast<int64_t>(to.size() - from.size());
    const int64_t extent = f >= 0 ? from[f] : 1;
    if (extent != 1 && extent != to[d]) {
      return InvalidArgument("cannot broadcast " + ShapeToString(from) + " to " + ShapeToString(to));
    }
    src_strides[d] = extent == 1 ? 0 : src_stride;
    src_stride *= extent;
    dst_strides[d] = dst_stride;
    dst_stride *= to[d];
  }
  return LaunchCudaStridedCopy(width, to, src, src_strides, dst, dst_strides, env);
}

}  // namespace onnx_amp
