// GEMMs on the GPU through cuBLASLt: float16/bfloat16 operands with float32
// accumulation (CUBLAS_COMPUTE_32F), float32 with plain float32 arithmetic unless the
// device allows TF32, bias/ReLU/GELU epilogues forward and the bias-gradient epilogues
// backward. Each distinct problem (GemmKey) gets its descriptors and cuBLASLt's
// heuristic choice of algorithm once per device; later calls reuse them.
#pragma once

#include "ops/linalg/gemm_key.h"
#include "runtime/core/status.h"
#include "runtime/cuda/cuda_context.h"

namespace onnx_amp {

struct CudaGemmCall {
  GemmKey key;  // alignment is filled in from the pointers
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // read when key.accumulate (beta != 0)
  void* d = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
  // kBias/kReluBias/kGeluBias: the bias (n values of the output dtype); the bias-gradient
  // epilogues: where the bias gradient goes.
  void* bias = nullptr;
  // kDReluBgrad/kDGeluBgrad: the forward's auxiliary output (ReLU mask or GELU input).
  const void* aux = nullptr;
  int64_t aux_ld = 0;
};

// Errors: Unsupported when cuBLASLt has no algorithm for the problem (named).
Status RunCudaGemm(CudaDevice& device, CudaGemmCall call);

// How many distinct problems the device has planned (for tests of the cache).
size_t CudaGemmPlanCount(CudaDevice& device);

}  // namespace onnx_amp
