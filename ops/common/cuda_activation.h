// A fused activation (KernelDef::fuses_activation) applied in place to a GEMM's output
// on the GPU, with the separate node's per-element math (elementwise_math.h) on the
// rounded values, so that the fused node changes no number.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

enum class CudaActivation { kNone, kRelu, kLeakyRelu, kClip };

// LeakyRelu: alpha is the slope; Clip: alpha and beta are the bounds. float32, float16
// and bfloat16 data.
Status LaunchCudaActivation(CudaActivation kind, float alpha, float beta, DType dtype, void* data, int64_t count,
                            const CudaLaunchEnv& env);

}  // namespace onnx_amp
