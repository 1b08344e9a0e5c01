// Products on operands oneDNN cannot take as they are (float16; bfloat16 where float32
// kernels are faster, bf16_kernel_choice.h) run on float32 copies, which widening makes
// exactly. A large operand is copied a panel at a time (rows of A, columns of B) into
// bounded work tensors, instead of whole: widening a 4096 x 4096 weight whole takes 64 MiB
// for the length of one product.
#pragma once

#include <vector>

#include "ops/common/matmul_problem.h"

namespace onnx_amp {

// Whether the 2-D problem has an operand whose float32 copy passes the panel size.
bool WidensInPanels(const MatMulProblem& problem);

// C (float32, dense [M, N], holding the addend when problem.accumulate) = the problem on
// the widened operands, panel by panel; problem.packed_b must be null.
Status WidenedMatMulInPanels(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                             float* c);

}  // namespace onnx_amp
