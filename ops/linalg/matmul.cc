// MatMul with numpy semantics: a 1-D A is promoted to [1, K] and a 1-D B to [K, 1],
// the added dims are dropped from the output, and batch dims broadcast. A constant B
// is kept packed from run to run; a fused activation applies to the output.
#include <algorithm>

#include "ops/common/matmul_problem.h"
#include "ops/linalg/linalg_kernels.h"

namespace onnx_amp {

Status MatMulCpu(KernelContext& context) {
  const Tensor* a = context.input(0);
  const Tensor* b = context.input(1);
  if (a == nullptr || b == nullptr) return context.Error(ErrorCode::kInvalidModel, "MatMul needs inputs A and B");
  if (a->dtype() != b->dtype()) return context.Error(ErrorCode::kInvalidModel, "A and B have different dtypes");
  if (a->rank() == 0 || b->rank() == 0) return context.Error(ErrorCode::kInvalidModel, "MatMul inputs must not be scalars");

  Shape a_shape = a->shape(), b_shape = b->shape();
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  const size_t rank = std::max(a_shape.size(), b_shape.size());
  a_shape.insert(a_shape.begin(), rank - a_shape.size(), 1);
  b_shape.insert(b_shape.begin(), rank - b_shape.size(), 1);
  if (a_shape[rank - 1] != b_shape[rank - 2]) {
    return context.Error(ErrorCode::kInvalidModel, "inner dimensions differ: A " + ShapeToString(a->shape()) +
                                                       ", B " + ShapeToString(b->shape()));
  }
  Shape c_shape(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a_shape[i] != b_shape[i] && a_shape[i] != 1 && b_shape[i] != 1) {
      return context.Error(ErrorCode::kInvalidModel, "batch dims do not broadcast: A " + ShapeToString(a->shape()) +
                                                         ", B " + ShapeToString(b->shape()));
    }
    c_shape[i] = a_shape[i] == 1 ? b_shape[i] : a_shape[i];
  }
  c_shape[rank - 2] = a_shape[rank - 2];
  c_shape[rank - 1] = b_shape[rank - 1];
  if (rank > DNNL_MAX_NDIMS && a->dtype() != DType::kFloat64) {
    return context.Error(ErrorCode::kUnsupported, "MatMul of rank above " + std::to_string(DNNL_MAX_NDIMS));
  }

  Shape y_shape = c_shape;
  if (b_vector) y_shape.pop_back();
  if (a_vector) y_shape.erase(y_shape.end() - (b_vector ? 1 : 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const DType y_dtype, MatMulOutputDType(context, a->dtype()));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, y_dtype, y_shape));
  Tensor y_view = y->Reshaped(c_shape);

  MatMulProblem problem;
  problem.a_dims.assign(a_shape.begin(), a_shape.end());
  problem.a_strides = DenseStrides(problem.a_dims);
  problem.b_dims.assign(b_shape.begin(), b_shape.end());
  problem.b_strides = DenseStrides(problem.b_dims);
  problem.c_dims.assign(c_shape.begin(), c_shape.end());
  problem.activation = context.fused_activation();
  if (const Tensor* bias = context.fused_bias()) {
    // float32 only: the product's sums are float32 values already, which the MatMul node
    // stores as they are, so the row added before they are stored is rounded once, as
    // the Add node rounds it. A float16/bfloat16 product is rounded before its Add.
    if (bias->dtype() != DType::kFloat32 || y_dtype != DType::kFloat32 || bias->num_elements() != c_shape.back()) {
      return context.Error(ErrorCode::kInternal, "a bias Add folded into this MatMul does not fit its float32 output " +
                                                     ShapeToString(y_shape) + ": " + std::string(DTypeName(bias->dtype())) +
                                                     " " + ShapeToString(bias->shape()));
    }
    problem.bias.assign(bias->data<float>(), bias->data<float>() + bias->num_elements());
  }
  problem.packed_b = dnn::PackedWeightsOf(context, 1);
  return ComputeMatMul(context, problem, *a, *b, y_view, {});
}

}  // namespace onnx_amp
