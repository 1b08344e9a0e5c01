// The CPU kernels of the ops/rnn family (registered by rnn_cpu.cc): float32, float16
// and bfloat16, numerics as described in recurrent_problem.h.
#pragma once

#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status RnnCpu(KernelContext& context);   // rnn.cc
Status GruCpu(KernelContext& context);   // gru.cc
Status LstmCpu(KernelContext& context);  // lstm.cc

}  // namespace onnx_amp
