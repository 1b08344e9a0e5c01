// The CPU kernels of the ops/linalg family (registered by linalg_cpu.cc).
#pragma once

#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status MatMulCpu(KernelContext& context);  // matmul.cc
Status GemmCpu(KernelContext& context);    // gemm.cc
Status EinsumCpu(KernelContext& context);  // einsum.cc

}  // namespace onnx_amp
