// Element-wise kernels whose scalar forms are library calls the compiler cannot vectorise,
// run on the lane functions of ops/common/lane_functions.h instead: Exp, Log, Erf (the GELU
// of transformer exports), Sigmoid, Tanh and Gelu (both forms, the formulas of GeluOp).
// float32 runs the lane loop; float16 and bfloat16 are widened and rounded a block at a
// time, so they give the float32 results rounded once; float64 keeps the scalar functor of
// ops/common/elementwise_math.h.
#pragma once

#include "ops/common/lane_functions.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

template <LaneFunction kFunction>
Status LaneUnaryKernel(KernelContext& context);

extern template Status LaneUnaryKernel<LaneFunction::kExp>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kLog>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kErf>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kSigmoid>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kTanh>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kGelu>(KernelContext& context);
extern template Status LaneUnaryKernel<LaneFunction::kGeluTanh>(KernelContext& context);

}  // namespace onnx_amp
