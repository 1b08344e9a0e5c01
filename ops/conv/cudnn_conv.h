// Convolutions on the GPU through cuDNN 9's graph API: forward, backward-data and
// backward-filter, float16/bfloat16 data with float32 accumulation, float32 without
// TF32 unless the device allows it (engines cuDNN marks as Tensor Core engines are
// skipped for float32 then). Each distinct problem (ConvKey) gets its operation graph,
// heuristic engine choice and execution plan once per device.
#pragma once

#include "ops/conv/conv_key.h"
#include "runtime/core/status.h"
#include "runtime/cuda/cuda_context.h"

namespace onnx_amp {

// Runs key.direction on dense NCHW (NCDHW...) tensors: forward writes y from x and w,
// backward-data writes x (dX) from y (dY) and w, backward-filter writes w (dW) from x and
// y (dY). key.tf32 and key.alignment are filled in here. Errors: Unsupported when cuDNN
// has no engine for the problem (named).
Status RunCudnnConv(CudaDevice& device, ConvKey key, void* x, void* w, void* y);

}  // namespace onnx_amp
