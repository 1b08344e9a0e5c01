// CPU kernels of the optimizer-step ops (domain "ai.onnx_amp"; schemas in
// training_schemas.cc). The fused gradient ops live with their forward op's family.
#pragma once

#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// The optimizer-step ops (update_ops.cc) take and give float32 only: they run on the
// float32 master weights and their float32 gradients.
Status UnscaleAndCheckKernel(KernelContext& context);  // (scale, g...) -> found_inf, first_non_finite, g/scale...
Status GlobalNormClipKernel(KernelContext& context);   // (micro_batches, g...) -> clipped mean g...
Status SgdUpdateKernel(KernelContext& context);        // (w, g, [velocity], lr, skip) -> w', [velocity']
Status AdamUpdateKernel(KernelContext& context);       // (w, g, m, v, lr, step, skip) -> w', m', v'
Status AdamWUpdateKernel(KernelContext& context);      // (w, g, m, v, lr, step, skip) -> w', m', v'
Status RmspropUpdateKernel(KernelContext& context);    // (w, g, v, lr, skip) -> w', v'

}  // namespace onnx_amp
