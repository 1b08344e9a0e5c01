// One batched matrix product C = alpha * A @ B (+ C), the core of MatMul, Gemm and
// Einsum. Operands are described by dims and element strides (so transposes and
// broadcast views need no copy); batch dims of A and B are equal or 1 (broadcast).
#pragma once

#include <cstdint>
#include <vector>

#include <dnnl.hpp>

#include "ops/common/onednn_utils.h"
#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

struct MatMulProblem {
  // Same rank r >= 2 for all three: [batch..., M, K], [batch..., K, N], [batch..., M, N].
  dnnl::memory::dims a_dims, a_strides;
  dnnl::memory::dims b_dims, b_strides;
  dnnl::memory::dims c_dims;  // C is dense row-major
  float alpha = 1.0f;
  bool accumulate = false;  // add the product to C's current contents
  FusedActivation activation;  // applied to the output (ComputeMatMul only)
  // B's node-level cache when B is constant (MatMul/Gemm weights); ComputeMatMul keeps
  // B there in the primitive's preferred layout.
  dnn::PackedWeights* packed_b = nullptr;
  // A row of c_dims.back() values added to every row of the product before the one
  // rounding (Gemm's beta * C when C is a row); oneDNN adds it as the primitive's bias.
  std::vector<float> bias;
};

// The destination of RunDnnlMatMul: float32, or bfloat16 rounded once by oneDNN.
struct MatMulDestination {
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;
  void* data = nullptr;
};

// Dense row-major element strides for dims.
dnnl::memory::dims DenseStrides(const dnnl::memory::dims& dims);

// Runs the problem through oneDNN with float32 accumulation and a float32 C. Operands
// are float32 or bfloat16 (`operand_type`). Returns Unsupported when oneDNN has no
// optimised implementation for bfloat16 operands on this CPU (callers then convert
// the operands to float32, which is exact, and call again).
Status RunDnnlMatMul(const MatMulProblem& problem, dnnl::memory::data_type operand_type,
                     const void* a, const void* b, float* c);
// The same with B from `b` (plain with problem.b_strides, or packed), problem.bias
// added and `post_op` applied by oneDNN, into a float32 or bfloat16 C.
Status RunDnnlMatMul(const MatMulProblem& problem, dnnl::memory::data_type operand_type, const void* a,
                     const dnn::WeightsSource& b, const FusedActivation& post_op, const MatMulDestination& c);

// Whether RunRelaidMatMul relays out this product's operands: one of at least 2^26
// multiply-adds, in float32 or in bfloat16 on native kernels that pay.
bool RelaysOut(const MatMulProblem& problem, dnnl::memory::data_type operand_type);

// RunDnnlMatMul on float32 or bfloat16 operands, a large product (RelaysOut) first
// relaid: a B the node does not keep packed is packed on this call (PackB), and in
// bfloat16 a transposed A is copied dense (in float32 that measured no faster). Work
// memory comes from `context`.
Status RunRelaidMatMul(KernelContext& context, const MatMulProblem& problem, dnnl::memory::data_type operand_type,
                       const void* a, const dnn::WeightsSource& b, const FusedActivation& post_op,
                       const MatMulDestination& c);

// B of `problem` (one matrix at `b` of `source_type`, plain or transposed as
// problem.b_strides say) written in `layout` into `scratch` (made, or grown, to the
// layout's size): by PackWeights (ops/common/weight_pack.h) where it writes the layout
// from `source_type`, else, for a B of the layout's type, by oneDNN's reorder.
Expected<const void*> PackB(KernelContext& context, const MatMulProblem& problem, const void* b,
                            dnnl::memory::data_type source_type, const dnnl::memory::desc& layout, Tensor& scratch);

// Writes float32 results c[0, count) to out's elements [begin, begin + count), on the
// calling thread: rounded to out's dtype with the activation applied to the rounded
// values, or, for a float32 `out` of `dtype` products (a Cast to float32 folded in, no
// activation), rounded to `dtype` (`c` may alias out from begin).
void FinishProductBlock(const float* c, Tensor& out, DType dtype, int64_t begin, int64_t count,
                        const FusedActivation& activation);

// The same product as a plain loop in double (float64 tensors).
void ReferenceMatMul(const MatMulProblem& problem, const double* a, const double* b, double* c);

// The dtype of a MatMul/Gemm output for operands of `operands`: theirs, or float32 when
// the plan folded a Cast to float32 into the node (KernelContext::widens_output);
// an error naming the node when such a fold meets operands other than float16/bfloat16/float32.
Expected<DType> MatMulOutputDType(const KernelContext& context, DType operands);

// Computes the problem on tensors of one floating dtype into `out` (allocated, of the
// operands' dtype or MatMulOutputDType's float32, problem.c_dims elements): out = act(round(alpha * A @ B + bias + addend)), with
// addend (problem.c_dims elements) used when problem.accumulate and act the fused
// activation. float16/bfloat16 operands accumulate in float32 and are rounded once
// (bfloat16 by oneDNN where its native kernels pay, bf16_kernel_choice.h: their dot
// products and rounding flush float32 subnormals, as VDPBF16PS and VCVTNEPS2BF16 do;
// elsewhere on exactly widened float32 operands); float64 runs the
// reference loop. A float32 `out` for low-precision operands receives the rounded
// values widened (the Cast folded in; the same numbers, but for bfloat16 results below
// the smallest normal, which the widened path does not flush).
Status ComputeMatMul(KernelContext& context, const MatMulProblem& problem, const Tensor& a,
                     const Tensor& b, Tensor& out, const std::vector<double>& addend);

}  // namespace onnx_amp
