// Graph-level ops: the control-flow kernels that run bodies through
// KernelContext::RunSubgraph, and the value ops Identity and Constant.
#pragma once

#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status IfCpu(KernelContext& context);        // if.cc
Status LoopCpu(KernelContext& context);      // loop.cc
Status ScanCpu(KernelContext& context);      // scan.cc
Status IdentityCpu(KernelContext& context);  // identity.cc
Status ConstantCpu(KernelContext& context);  // constant.cc

}  // namespace onnx_amp
