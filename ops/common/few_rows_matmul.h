// Products of a few rows (at most kFewRowsMax: dense layers at batch 1 to 4) are bound by
// reading B once, not by arithmetic. oneDNN's blocked kernels read a 4096 x 4096 float32
// weight at batch 1 at about a third of the rate the cache and memory deliver here, so
// such products stream B as it is stored, in its own dtype: float16 and bfloat16 weights
// are widened exactly in registers, every sum accumulates in float32 in a fixed order
// (the same whichever thread computes it), and is rounded once.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ops/common/matmul_problem.h"
#include "runtime/core/dtype.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

inline constexpr int64_t kFewRowsMax = 4;

// The vector kernels, one per instruction set; kNone where the CPU has neither.
enum class FewRowsPath { kNone, kAvx2, kAvx512 };
std::string_view FewRowsPathName(FewRowsPath path);
bool FewRowsPathSupported(FewRowsPath path);
// The path ComputeFewRowsMatMul takes: the widest the CPU has, unless SetFewRowsPath
// chose another (tests run each path the CPU has). Returns the previous choice.
FewRowsPath CurrentFewRowsPath();
FewRowsPath SetFewRowsPath(FewRowsPath path);

// One kernel call: y[i][n] = sum over k of a[i][k] * B[k][n] for i < rows and n in
// [n_begin, n_end); a is float32 [rows][k] dense, B's element (k, n) sits at
// k * w_k_stride + n * w_n_stride of w (w_n_stride == 1, or w_k_stride == 1).
struct FewRowsArgs {
  const float* a = nullptr;
  int rows = 0;
  int64_t k = 0;
  const void* w = nullptr;
  DType w_dtype = DType::kFloat32;
  int64_t w_k_stride = 0, w_n_stride = 0;
  int64_t n_begin = 0, n_end = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};
void FewRowsAvx512(const FewRowsArgs& args);
void FewRowsAvx2(const FewRowsArgs& args);

// Whether ComputeFewRowsMatMul takes the problem: 2-D, at most kFewRowsMax rows, one of
// B's dims contiguous, float32/float16/bfloat16 operands, a vector path on this CPU.
bool TakesFewRows(const MatMulProblem& problem, DType dtype);

// ComputeMatMul (matmul_problem.h) for such a problem: out = act(round(alpha * A @ B +
// bias + addend)), `out` of the operands' dtype or float32 (a Cast folded in).
Status ComputeFewRowsMatMul(KernelContext& context, const MatMulProblem& problem, const Tensor& a, const Tensor& b,
                            Tensor& out, const std::vector<double>& addend);

}  // namespace onnx_amp
