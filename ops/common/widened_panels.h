// Products on operands oneDNN cannot take as they are (float16; bfloat16 where float32
// kernels are faster, bf16_kernel_choice.h) run on float32 copies, which widening makes
// exactly. A large operand is copied a panel at a time (rows of A, columns of B, slices
// of both along k) into bounded work tensors, instead of whole: widening a 4096 x 4096
// weight whole takes 64 MiB for the length of one product. The result is finished (rounded, activated) a block at
// a time, so no float32 copy of the whole result is held either.
#pragma once

#include <vector>

#include "ops/common/matmul_problem.h"

namespace onnx_amp {

// Whether the 2-D problem has an operand whose float32 copy passes the panel size.
bool WidensInPanels(const MatMulProblem& problem);

// ComputeMatMul (matmul_problem.h) for a 2-D problem on float16/bfloat16 operands on
// float32 kernels, panel by panel: out = act(round(alpha * A @ B + bias + addend)), `out`
// of the operands' dtype or float32 (a Cast folded in, no activation then);
// problem.packed_b must be null.
Status WidenedMatMulInPanels(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                             Tensor& out, const std::vector<double>& addend);

}  // namespace onnx_amp
