// The CPU kernels of the shape / data-movement family; tensor_cpu.cc registers them.
#pragma once

#include "runtime/core/status.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// reshape_ops.cc
Status ReshapeKernel(KernelContext& context);
Status FlattenKernel(KernelContext& context);
Status SqueezeKernel(KernelContext& context);
Status UnsqueezeKernel(KernelContext& context);
Status ShapeKernel(KernelContext& context);
Status SizeKernel(KernelContext& context);
// transpose_ops.cc
Status TransposeKernel(KernelContext& context);
Status DepthToSpaceKernel(KernelContext& context);
Status SpaceToDepthKernel(KernelContext& context);
// slice_ops.cc
Status SliceKernel(KernelContext& context);
// concat_split_ops.cc
Status ConcatKernel(KernelContext& context);
Status SplitKernel(KernelContext& context);
// gather_ops.cc
Status GatherKernel(KernelContext& context);
Status GatherElementsKernel(KernelContext& context);
Status GatherNDKernel(KernelContext& context);
// scatter_ops.cc (Scatter, the opset-9 name, is ScatterElements without reduction)
Status ScatterElementsKernel(KernelContext& context);
Status ScatterNDKernel(KernelContext& context);
// expand_tile_ops.cc
Status ExpandKernel(KernelContext& context);
Status TileKernel(KernelContext& context);
// pad_ops.cc
Status PadKernel(KernelContext& context);
Status CenterCropPadKernel(KernelContext& context);
// resize_ops.cc
Status ResizeKernel(KernelContext& context);
Status UpsampleKernel(KernelContext& context);
// generator_ops.cc
Status ConstantOfShapeKernel(KernelContext& context);
Status RangeKernel(KernelContext& context);
Status OneHotKernel(KernelContext& context);
Status EyeLikeKernel(KernelContext& context);
// selection_ops.cc
Status NonZeroKernel(KernelContext& context);
Status CompressKernel(KernelContext& context);
Status UniqueKernel(KernelContext& context);
// trilu_ops.cc, reverse_sequence_ops.cc, dropout_ops.cc
Status TriluKernel(KernelContext& context);
Status ReverseSequenceKernel(KernelContext& context);
Status DropoutKernel(KernelContext& context);
// gather_grad_cpu.cc: the fused gradient of Gather, domain ai.onnx_amp
Status GatherGradKernel(KernelContext& context);  // (dY, indices, shape) -> dX

}  // namespace onnx_amp
