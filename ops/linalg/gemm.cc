// Gemm: Y = alpha * A' @ B' + beta * C, with A' = transA ? A^T : A (likewise B) and C
// broadcast unidirectionally to [M, N]. Transposes are strides, not copies; beta * C
// is formed in double, rounded to float32 and added before the one rounding: as the
// matmul's bias when it is a row, else by its sum post-op.
// A constant B is kept packed from run to run; a fused activation applies to Y.
#include "ops/common/float_compute.h"
#include "ops/common/matmul_problem.h"
#include "ops/linalg/linalg_kernels.h"

namespace onnx_amp {
namespace {

// beta * C broadcast to [m, n], row-major.
template <typename T>
std::vector<double> BroadcastAddend(const Tensor& c, Shape c_shape, int64_t m, int64_t n, double beta) {
  const T* values = c.data<T>();
  const int64_t row_stride = c_shape[0] == 1 ? 0 : c_shape[1];
  const int64_t col_stride = c_shape[1] == 1 ? 0 : 1;
  std::vector<double> addend(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      addend[i * n + j] = beta * static_cast<double>(LoadValue(values[i * row_stride + j * col_stride]));
    }
  }
  return addend;
}

// beta * C for a C of n values (shape [n] or [1, n]), each rounded to float32 as the
// addend's values are.
template <typename T>
std::vector<float> BroadcastRow(const Tensor& c, int64_t n, double beta) {
  const T* values = c.data<T>();
  const bool scalar = c.num_elements() == 1;
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) row[j] = static_cast<float>(beta * static_cast<double>(LoadValue(values[scalar ? 0 : j])));
  return row;
}

}  // namespace

Status GemmCpu(KernelContext& context) {
  const Tensor* a = context.input(0);
  const Tensor* b = context.input(1);
  const Tensor* c = context.input(2);
  if (a == nullptr || b == nullptr) return context.Error(ErrorCode::kInvalidModel, "Gemm needs inputs A and B");
  if (a->rank() != 2 || b->rank() != 2) return context.Error(ErrorCode::kInvalidModel, "Gemm takes 2-D A and B");
  if (a->dtype() != b->dtype() || (c != nullptr && c->dtype() != a->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "A, B and C have different dtypes");
  }
  const bool trans_a = context.attr_int("transA", 0) != 0;
  const bool trans_b = context.attr_int("transB", 0) != 0;
  const float alpha = context.attr_float("alpha", 1.0f);
  const float beta = context.attr_float("beta", 1.0f);

  const int64_t m = trans_a ? a->dim(1) : a->dim(0);
  const int64_t k = trans_a ? a->dim(0) : a->dim(1);
  const int64_t kb = trans_b ? b->dim(1) : b->dim(0);
  const int64_t n = trans_b ? b->dim(0) : b->dim(1);
  if (k != kb) {
    return context.Error(ErrorCode::kInvalidModel, "inner dimensions differ: A " + ShapeToString(a->shape()) +
                                                       ", B " + ShapeToString(b->shape()));
  }
  MatMulProblem problem;
  problem.a_dims = {m, k};
  problem.a_strides = trans_a ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1};
  problem.b_dims = {k, n};
  problem.b_strides = trans_b ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1};
  problem.c_dims = {m, n};
  problem.alpha = alpha;
  problem.activation = context.fused_activation();
  problem.packed_b = dnn::PackedWeightsOf(context, 1);

  std::vector<double> addend;
  if (c != nullptr && beta != 0.0f) {
    Shape c_shape = c->shape();
    if (c_shape.size() > 2) return context.Error(ErrorCode::kInvalidModel, "C has rank above 2");
    c_shape.insert(c_shape.begin(), 2 - c_shape.size(), 1);
    if ((c_shape[0] != 1 && c_shape[0] != m) || (c_shape[1] != 1 && c_shape[1] != n)) {
      return context.Error(ErrorCode::kInvalidModel,
                           "C " + ShapeToString(c->shape()) + " does not broadcast to [" + std::to_string(m) + "," +
                               std::to_string(n) + "]");
    }
    // A row C (the usual bias) is oneDNN's bias, added in float32 before the rounding
    // as the addend would be; a full or column C, alpha != 1 and float64 take the addend.
    const bool row = c_shape[0] == 1 && alpha == 1.0f && c->dtype() != DType::kFloat64;
    ONNX_AMP_RETURN_IF_ERROR(DispatchFloat(context, c->dtype(), [&](auto tag) {
      if (row) {
        problem.bias = BroadcastRow<decltype(tag)>(*c, n, beta);
      } else {
        addend = BroadcastAddend<decltype(tag)>(*c, c_shape, m, n, beta);
      }
      return Status::Ok();
    }));
    problem.accumulate = !row;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const DType y_dtype, MatMulOutputDType(context, a->dtype()));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, y_dtype, {m, n}));
  return ComputeMatMul(context, problem, *a, *b, *y, addend);
}

}  // namespace onnx_amp
