// The losses of domain ai.onnx_amp (and ONNX's sparse losses) and their gradients on
// the GPU: a thread per sample for the per-sample terms, one block folding the
// per-sample losses and weights in a fixed order.
#include "ops/normalization/normalization_cuda.h"

#include <cmath>

#include "runtime/cuda/block_reduce.cuh"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/dtype_dispatch.cuh"

namespace onnx_amp {
namespace {

constexpr int kFoldThreads = 1024;

template <typename Label>
__device__ __forceinline__ float SampleWeight(const Label* labels, const float* weights, const CudaSparseLoss& loss,
                                              int64_t s, int64_t& label) {
  label = static_cast<int64_t>(labels[s]);
  if (loss.has_ignore && label == loss.ignore_index) return 0.0f;
  if (label < 0 || label >= loss.classes) return NAN;
  return weights != nullptr ? weights[label] : 1.0f;
}

// Per sample: log-softmax (when kSoftmax) written to log_prob, the weighted negative
// log-likelihood into losses[s] (or out[s] for reduction none), the weight into weights_out[s].
template <bool kSoftmax, typename T, typename Label>
__global__ void SampleLossKernel(const T* scores, const Label* labels, const float* weights, CudaSparseLoss loss,
                                 T* out, T* log_prob, float* losses, float* weights_out) {
  const int64_t samples = loss.batch * loss.spatial;
  ONNX_AMP_GRID_STRIDE_LOOP(s, samples) {
    const int64_t n = s / loss.spatial, d = s % loss.spatial;
    const int64_t base = n * loss.classes * loss.spatial + d;
    float shift = 0.0f;
    if constexpr (kSoftmax) {
      float max = -INFINITY;
      for (int64_t c = 0; c < loss.classes; ++c) max = MaxCombine{}(max, LoadFloat(scores, base + c * loss.spatial));
      float sum = 0.0f;
      for (int64_t c = 0; c < loss.classes; ++c) sum += expf(LoadFloat(scores, base + c * loss.spatial) - max);
      shift = max + logf(sum);
      if (log_prob != nullptr) {
        for (int64_t c = 0; c < loss.classes; ++c) {
          const int64_t i = base + c * loss.spatial;
          StoreFloat(log_prob, i, LoadFloat(scores, i) - shift);
        }
      }
    }
    int64_t label = 0;
    const float weight = SampleWeight(labels, weights, loss, s, label);
    float value = 0.0f;
    if (weight != 0.0f) {
      value = weight != weight ? weight : -(LoadFloat(scores, base + label * loss.spatial) - shift) * weight;
    }
    if (loss.reduction == 0) {
      StoreFloat(out, s, value);
    } else {
      losses[s] = value;
      weights_out[s] = weight;
    }
  }
}

// One block: out[0] = sum of losses (reduction sum) or that over the sum of weights (mean).
template <typename T>
__global__ void FoldLossKernel(const float* losses, const float* weights, int64_t samples, int reduction, T* out) {
  __shared__ float scratch[kWarpSize];
  float loss_sum = 0.0f, weight_sum = 0.0f;
  for (int64_t s = threadIdx.x; s < samples; s += blockDim.x) {
    loss_sum += losses[s];
    weight_sum += weights[s];
  }
  loss_sum = BlockReduce(loss_sum, SumCombine{}, scratch);
  weight_sum = BlockReduce(weight_sum, SumCombine{}, scratch);
  if (threadIdx.x == 0) StoreFloat(out, 0, reduction == 1 ? loss_sum : loss_sum / weight_sum);
}

template <typename Label>
__global__ void SampleWeightKernel(const Label* labels, const float* weights, CudaSparseLoss loss, float* out) {
  ONNX_AMP_GRID_STRIDE_LOOP(s, loss.batch * loss.spatial) {
    int64_t label = 0;
    out[s] = SampleWeight(labels, weights, loss, s, label);
  }
}

__global__ void SumKernel(const float* values, int64_t count, float* out) {
  __shared__ float scratch[kWarpSize];
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += values[i];
  sum = BlockReduce(sum, SumCombine{}, scratch);
  if (threadIdx.x == 0) *out = sum;
}

// dX[s, c] = f_s * (exp(log_prob) - [c == label]) (softmax) or -f_s * [c == label], with
// f_s = w_s * dLoss[s] (none), w_s * dLoss (sum), w_s * dLoss / sum(w) (mean).
template <bool kSoftmax, typename T, typename G, typename Label>
__global__ void SparseLossGradKernel(const G* dloss, const T* input, const Label* labels, const float* sample_weight,
                                     const float* weight_sum, CudaSparseLoss loss, T* dx) {
  const int64_t total = loss.batch * loss.classes * loss.spatial;
  ONNX_AMP_GRID_STRIDE_LOOP(i, total) {
    const int64_t d = i % loss.spatial;
    const int64_t c = (i / loss.spatial) % loss.classes;
    const int64_t n = i / (loss.spatial * loss.classes);
    const int64_t s = n * loss.spatial + d;
    float factor = sample_weight[s];
    if (loss.reduction == 0) factor *= LoadFloat(dloss, s);
    else if (loss.reduction == 1) factor *= LoadFloat(dloss, 0);
    else factor *= *weight_sum > 0.0f ? LoadFloat(dloss, 0) / *weight_sum : 0.0f;
    const bool picked = c == static_cast<int64_t>(labels[s]);
    float value;
    if constexpr (kSoftmax) value = factor * (expf(LoadFloat(input, i)) - (picked ? 1.0f : 0.0f));
    else value = picked ? -factor : 0.0f;
    StoreFloat(dx, i, value);
  }
}

template <typename T>
__global__ void SquaredErrorKernel(const T* p, const T* t, int64_t count, T* out) {
  __shared__ float scratch[kWarpSize];
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const float d = LoadFloat(p, i) - LoadFloat(t, i);
    sum += d * d;
  }
  sum = BlockReduce(sum, SumCombine{}, scratch);
  if (threadIdx.x == 0) StoreFloat(out, 0, sum / static_cast<float>(count));
}

template <typename T, typename G>
__global__ void SquaredErrorGradKernel(const G* dloss, const T* p, const T* t, int64_t count, T* dp) {
  const float scale = 2.0f * LoadFloat(dloss, 0) / static_cast<float>(count);
  ONNX_AMP_GRID_STRIDE_LOOP(i, count) { StoreFloat(dp, i, scale * (LoadFloat(p, i) - LoadFloat(t, i))); }
}

template <typename Body>
Status DispatchLabel(DType dtype, Body&& body) {
  if (dtype == DType::kInt64) return body(CudaTypeTag<int64_t>{});
  if (dtype == DType::kInt32) return body(CudaTypeTag<int32_t>{});
  return CudaUnsupportedDType(dtype, "labels");
}

}  // namespace

Status LaunchCudaSparseLoss(bool softmax, DType dtype, const void* scores, const void* labels, const float* weights,
                            const CudaSparseLoss& loss, void* out, void* log_prob, float* scratch,
                            const CudaLaunchEnv& env) {
  const int64_t samples = loss.batch * loss.spatial;
  const LaunchShape launch = ElementwiseLaunch(samples, env.multiprocessors);
  return DispatchCudaFloat(dtype, "loss", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return DispatchLabel(loss.label_dtype, [&](auto label_tag) -> Status {
      using Label = typename decltype(label_tag)::type;
      const auto* in = static_cast<const T*>(scores);
      const auto* l = static_cast<const Label*>(labels);
      if (samples > 0) {
        if (softmax) {
          SampleLossKernel<true, T, Label><<<launch.blocks, launch.threads, 0, env.stream>>>(
              in, l, weights, loss, static_cast<T*>(out), static_cast<T*>(log_prob), scratch, scratch + samples);
        } else {
          SampleLossKernel<false, T, Label><<<launch.blocks, launch.threads, 0, env.stream>>>(
              in, l, weights, loss, static_cast<T*>(out), nullptr, scratch, scratch + samples);
        }
        ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("loss"));
      }
      if (loss.reduction == 0) return Status::Ok();
      FoldLossKernel<T><<<1, kFoldThreads, 0, env.stream>>>(scratch, scratch + samples, samples, loss.reduction,
                                                           static_cast<T*>(out));
      return CudaLaunchStatus("loss (fold)");
    });
  });
}

Status LaunchCudaSparseLossGrad(bool softmax, DType dtype, DType dloss_dtype, const void* dloss, const void* log_prob,
                                const void* labels, const float* weights, const CudaSparseLoss& loss, void* dx,
                                float* scratch, const CudaLaunchEnv& env) {
  const int64_t samples = loss.batch * loss.spatial;
  const int64_t total = samples * loss.classes;
  if (total == 0) return Status::Ok();
  return DispatchCudaFloat(dtype, "loss gradient", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return DispatchCudaFloat(dloss_dtype, "loss gradient", [&](auto g_tag) -> Status {
      using G = typename decltype(g_tag)::type;
      return DispatchLabel(loss.label_dtype, [&](auto label_tag) -> Status {
        using Label = typename decltype(label_tag)::type;
        const auto* l = static_cast<const Label*>(labels);
        const LaunchShape per_sample = ElementwiseLaunch(samples, env.multiprocessors);
        SampleWeightKernel<Label><<<per_sample.blocks, per_sample.threads, 0, env.stream>>>(l, weights, loss, scratch);
        ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("loss gradient (weights)"));
        SumKernel<<<1, kFoldThreads, 0, env.stream>>>(scratch, samples, scratch + samples);
        ONNX_AMP_RETURN_IF_ERROR(CudaLaunchStatus("loss gradient (weight sum)"));
        const LaunchShape launch = ElementwiseLaunch(total, env.multiprocessors);
        const auto* g = static_cast<const G*>(dloss);
        const auto* in = static_cast<const T*>(log_prob);
        if (softmax) {
          SparseLossGradKernel<true, T, G, Label><<<launch.blocks, launch.threads, 0, env.stream>>>(
              g, in, l, scratch, scratch + samples, loss, static_cast<T*>(dx));
        } else {
          SparseLossGradKernel<false, T, G, Label><<<launch.blocks, launch.threads, 0, env.stream>>>(
              g, in, l, scratch, scratch + samples, loss, static_cast<T*>(dx));
        }
        return CudaLaunchStatus("loss gradient");
      });
    });
  });
}

Status LaunchCudaMeanSquaredError(DType dtype, const void* prediction, const void* target, void* out, int64_t count,
                                  const CudaLaunchEnv& env) {
  return DispatchCudaFloat(dtype, "MeanSquaredError", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    SquaredErrorKernel<T><<<1, kFoldThreads, 0, env.stream>>>(static_cast<const T*>(prediction),
                                                             static_cast<const T*>(target), count, static_cast<T*>(out));
    return CudaLaunchStatus("MeanSquaredError");
  });
}

Status LaunchCudaMeanSquaredErrorGrad(DType dtype, DType dloss_dtype, const void* dloss, const void* prediction,
                                      const void* target, void* dp, int64_t count, const CudaLaunchEnv& env) {
  if (count == 0) return Status::Ok();
  const LaunchShape launch = ElementwiseLaunch(count, env.multiprocessors);
  return DispatchCudaFloat(dtype, "MeanSquaredErrorGrad", [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    return DispatchCudaFloat(dloss_dtype, "MeanSquaredErrorGrad", [&](auto g_tag) -> Status {
      using G = typename decltype(g_tag)::type;
      SquaredErrorGradKernel<T, G><<<launch.blocks, launch.threads, 0, env.stream>>>(
          static_cast<const G*>(dloss), static_cast<const T*>(prediction), static_cast<const T*>(target), count,
          static_cast<T*>(dp));
      return CudaLaunchStatus("MeanSquaredErrorGrad");
    });
  });
}

}  // namespace onnx_amp
