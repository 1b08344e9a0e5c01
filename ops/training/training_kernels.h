// CPU kernels of the fused training ops (domain "ai.onnx_amp"; schemas in
// training_schemas.cc). Numeric contract of the gradient ops: float32, float16 and
// bfloat16 tensors are read as float32, all arithmetic and accumulation is float32, and
// each output element is rounded once to the dtype of dY.
#pragma once

#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

Status ReluGradKernel(KernelContext& context);                     // (dY, X) -> dX
Status SigmoidGradKernel(KernelContext& context);                  // (dY, Y) -> dX
Status TanhGradKernel(KernelContext& context);                     // (dY, Y) -> dX
Status GeluGradKernel(KernelContext& context);                     // (dY, X) -> dX
Status SoftmaxGradKernel(KernelContext& context);                  // (dY, Y) -> dX
Status LogSoftmaxGradKernel(KernelContext& context);               // (dY, Y) -> dX
Status LayerNormalizationGradKernel(KernelContext& context);       // (dY, X, scale, mean, inv_std) -> dX, dScale, dBias
Status BatchNormalizationGradKernel(KernelContext& context);       // (dY, X, scale, mean, var) -> dX, dScale, dBias
Status ConvGradKernel(KernelContext& context);                     // (dY, X, W) -> dX, dW, dB
Status MaxPoolGradKernel(KernelContext& context);                  // (dY, X) -> dX
Status AveragePoolGradKernel(KernelContext& context);              // (dY, X) -> dX
Status GatherGradKernel(KernelContext& context);                   // (dY, indices, shape) -> dX

// The optimizer-step ops (update_ops.cc) take and give float32 only: they run on the
// float32 master weights and their float32 gradients.
Status UnscaleAndCheckKernel(KernelContext& context);  // (scale, g...) -> found_inf, first_non_finite, g/scale...
Status GlobalNormClipKernel(KernelContext& context);   // (micro_batches, g...) -> clipped mean g...
Status SgdUpdateKernel(KernelContext& context);        // (w, g, [velocity], lr, skip) -> w', [velocity']
Status AdamUpdateKernel(KernelContext& context);       // (w, g, m, v, lr, step, skip) -> w', m', v'
Status AdamWUpdateKernel(KernelContext& context);      // (w, g, m, v, lr, step, skip) -> w', m', v'
Status RmspropUpdateKernel(KernelContext& context);    // (w, g, v, lr, skip) -> w', v'

// Shared by the kernels: input `index` present and of a float32/float16/bfloat16 type.
Expected<const Tensor*> FloatInput(const KernelContext& context, int index);
// Allocates output `index` with `dtype` and `shape`, and stores float32 `values` in it
// (one rounding); does nothing when the output is omitted or unused.
Status WriteOutput(KernelContext& context, int index, DType dtype, const Shape& shape,
                   const std::vector<float>& values);

}  // namespace onnx_amp
