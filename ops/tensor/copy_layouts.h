// The shape rules of the ops that are strided copies (Transpose, Expand, Concat): output
// shapes, source strides and the checks, shared by the CPU kernels and the CUDA kernels,
// which differ only in the copy they run.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// Transpose's `perm` (reversed axes when absent), checked against the rank and normalised.
Expected<std::vector<int64_t>> TransposePerm(const KernelContext& context, const Tensor& data);

// Expand of input 0 to the shape in input 1: the broadcast output shape and, per output
// axis, the input's stride (0 where the input is broadcast).
struct ExpandLayout {
  const Tensor* data = nullptr;
  Shape out_shape;
  std::vector<int64_t> src_strides;
};
Expected<ExpandLayout> PlanExpand(const KernelContext& context);

// Concat's present inputs, its normalised axis and the output shape (inputs checked for
// one dtype and equal dims off the axis).
struct ConcatLayout {
  std::vector<const Tensor*> inputs;
  int64_t axis = 0;
  Shape out_shape;
};
Expected<ConcatLayout> PlanConcat(const KernelContext& context);

}  // namespace onnx_amp
