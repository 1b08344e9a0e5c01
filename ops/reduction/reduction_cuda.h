// Launchers of the Reduce* CUDA kernels (reduction_cuda.cu) for float32, float16 and
// bfloat16, accumulating in float32 with the CPU's per-element steps (reduce_math.h)
// and rounding each output once. The glue is reduction_cuda.cc.
#pragma once

#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/cuda/launch_env.h"

namespace onnx_amp {

enum class CudaReduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// The blocked form of ReducePlan (reduce_plan.h): input index (o * reduced + k) * inner + i
// folds into output o * inner + i.
struct CudaReduceShape {
  int64_t outer = 1;
  int64_t reduced = 1;
  int64_t inner = 1;
};

// `scratch` holds at least CudaReduceScratchFloats(shape) float32 values of device memory.
int64_t CudaReduceScratchFloats(const CudaReduceShape& shape, int multiprocessors);
Status LaunchCudaReduce(CudaReduce kind, DType dtype, const void* x, void* y, const CudaReduceShape& shape,
                        float* scratch, const CudaLaunchEnv& env);

// The general form: output m folds input output_offsets[m] + step_offsets[k] over k
// (both tables in device memory).
Status LaunchCudaReduceGather(CudaReduce kind, DType dtype, const void* x, void* y, int64_t outputs,
                              int64_t reduced, const int64_t* output_offsets, const int64_t* step_offsets,
                              const CudaLaunchEnv& env);

}  // namespace onnx_amp
