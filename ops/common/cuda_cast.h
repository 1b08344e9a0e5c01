// Cast on the GPU between float32, float16, bfloat16, float64, int8, uint8, int32, int64
// and bool, with the CPU's per-element rules (cast_math.h; float16/bfloat16 round to
// nearest even). Shared by the families that widen parameters or narrow results on
// the device.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

bool CudaCastSupports(DType dtype);
Status LaunchCudaCast(DType from, DType to, const void* x, void* y, int64_t count, const CudaLaunchEnv& env);

}  // namespace onnx_amp
