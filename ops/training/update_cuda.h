// Launchers of the optimizer-step CUDA kernels (update_cuda.cu), float32 only: the
// multi-tensor unscale-and-check (one launch over every gradient, a device-side
// found-inf flag and first non-finite index, no host synchronisation), the multi-tensor
// scaling of global-norm clipping with its norm summed on the device, and the optimizer
// updates, which read the skip flag on the device and then hand weight and slots back
// unchanged. Per-element math: ops/training/gradient_math.h, optimizer_math.h, shared
// with the CPU kernels. The glue is update_cuda.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

// One tensor of a multi-tensor launch: `count` floats read from `in` and, unless `out`
// is nullptr, written to `out`.
struct CudaTensorChunkSource {
  const float* in = nullptr;
  float* out = nullptr;
  int64_t count = 0;
};

// Device scratch a multi-tensor launch needs (its flags and sums), in bytes.
size_t CudaMultiTensorScratchBytes();

// out = in * (1 / *scale) for each tensor (scale: a device float, so that a captured
// CUDA graph reads each step's loss scale), testing every input for inf/NaN: found_inf
// (device bool) and first_non_finite (device int64: the first tensor index with a
// non-finite value, -1 for none). `scratch` is device memory of
// CudaMultiTensorScratchBytes(). The table of tensors travels as the launch's parameter
// (no copy from the host, so the launch can be captured in a CUDA graph).
Status LaunchCudaUnscaleAndCheck(const std::vector<CudaTensorChunkSource>& tensors, const float* scale,
                                 bool* found_inf, int64_t* first_non_finite, void* scratch, const CudaLaunchEnv& env);

// out = in * factor for each tensor, factor = MeanClipFactor(sum of squares of every
// input, micro_batches, max_norm) computed on the device (max_norm > 0), or
// 1 / micro_batches (max_norm == 0).
Status LaunchCudaGlobalNormClip(const std::vector<CudaTensorChunkSource>& tensors, int64_t micro_batches,
                                float max_norm, void* scratch, const CudaLaunchEnv& env);

enum class CudaOptimizer { kSgd, kAdam, kRmsprop };

// The learning rate and Adam's step count are read on the device (a captured CUDA graph
// reads each step's values); Adam's bias-corrected step size is derived there.
struct CudaUpdateParams {
  CudaOptimizer kind = CudaOptimizer::kSgd;
  const float* learning_rate = nullptr;  // device float
  const int64_t* step = nullptr;         // Adam: device int64, updates applied so far
  float momentum = 0.0f;  // SGD
  bool nesterov = false;  // SGD
  float beta1 = 0.9f, beta2 = 0.999f;
  float epsilon = 1e-7f;
  float weight_decay = 0.0f;  // AdamW (decoupled); 0 for Adam
  float rho = 0.9f;         // RMSprop
};

// new_weight/new_slot = the update of weight/slot by gradient (slots nullptr when the
// optimizer keeps fewer), or copies of them when *skip (device bool) is set. The new
// tensors may be the old ones (in place): each element is read before it is written.
Status LaunchCudaOptimizerUpdate(const CudaUpdateParams& params, const float* weight, const float* gradient,
                                 const float* slot0, const float* slot1, float* new_weight, float* new_slot0,
                                 float* new_slot1, int64_t count, const bool* skip, const CudaLaunchEnv& env);

}  // namespace onnx_amp
