// Gradient rules of MatMul and Gemm.
#include <algorithm>

#include "ops/gradients.h"
#include "runtime/autodiff/gradient_builder.h"

namespace onnx_amp {
namespace {

// Transpose of the last two axes of a value of rank `rank`.
std::string SwapLastTwo(GradientContext& c, const std::string& value, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[rank - 1], perm[rank - 2]);
  return c.EmitValue("Transpose", {value}, {MakeAttribute("perm", perm)});
}

// Y = A @ B with NumPy semantics (1-D operands promoted, batch dims broadcast).
// dA = dY @ B^T and dB = A^T @ dY on the promoted shapes, then reduced over the
// broadcast batch axes and reshaped to each operand's shape.
Status MatMulGrad(GradientContext& c) {
  const std::optional<int64_t> a_rank = c.Rank(c.I(0));
  const std::optional<int64_t> b_rank = c.Rank(c.I(1));
  if (!a_rank || !b_rank) return c.Error(ErrorCode::kUnsupported, "operand ranks must be known");
  const std::string a = *a_rank == 1 ? c.Unsqueeze(c.I(0), {0}) : c.I(0);
  const std::string b = *b_rank == 1 ? c.Unsqueeze(c.I(1), {1}) : c.I(1);
  std::string dy = c.GO(0);
  if (*a_rank == 1) dy = c.Unsqueeze(dy, {-2});
  if (*b_rank == 1) dy = c.Unsqueeze(dy, {-1});
  const int64_t pa = std::max<int64_t>(*a_rank, 2);
  const int64_t pb = std::max<int64_t>(*b_rank, 2);
  const int64_t out_rank = std::max(pa, pb);

  // Static shapes of the promoted gradients, when every dim is known.
  std::optional<Shape> da_shape;
  std::optional<Shape> db_shape;
  std::optional<Shape> a_shape = c.StaticShape(c.I(0));
  std::optional<Shape> b_shape = c.StaticShape(c.I(1));
  if (a_shape && b_shape) {
    if (*a_rank == 1) a_shape->insert(a_shape->begin(), 1);
    if (*b_rank == 1) b_shape->push_back(1);
    Shape batch(static_cast<size_t>(out_rank - 2), 1);
    for (int64_t i = 0; i < out_rank - 2; ++i) {
      const int64_t ia = i - (out_rank - pa);
      const int64_t ib = i - (out_rank - pb);
      const int64_t da = ia >= 0 ? (*a_shape)[ia] : 1;
      const int64_t db = ib >= 0 ? (*b_shape)[ib] : 1;
      batch[i] = std::max(da, db);
    }
    da_shape = batch;
    da_shape->push_back((*a_shape)[pa - 2]);
    da_shape->push_back((*a_shape)[pa - 1]);
    db_shape = batch;
    db_shape->push_back((*b_shape)[pb - 2]);
    db_shape->push_back((*b_shape)[pb - 1]);
  }
  // A promoted 1-D operand's extra axis is squeezed away before the batch reduction.
  if (c.NeedsGI(0)) {
    std::string da = c.EmitValue("MatMul", {dy, SwapLastTwo(c, b, pb)});
    int64_t da_rank = out_rank;
    if (*a_rank == 1) {
      da = c.Squeeze(da, {-2});
      if (da_shape) da_shape->erase(da_shape->end() - 2);
      --da_rank;
    }
    ONNX_AMP_RETURN_IF_ERROR(c.Unbroadcast(da, da_shape, da_rank, c.I(0), c.GI(0)));
  }
  if (c.NeedsGI(1)) {
    std::string db = c.EmitValue("MatMul", {SwapLastTwo(c, a, pa), dy});
    int64_t db_rank = out_rank;
    if (*b_rank == 1) {
      db = c.Squeeze(db, {-1});
      if (db_shape) db_shape->pop_back();
      --db_rank;
    }
    ONNX_AMP_RETURN_IF_ERROR(c.Unbroadcast(db, db_shape, db_rank, c.I(1), c.GI(1)));
  }
  return Status::Ok();
}

// Y = alpha * op(A) @ op(B) + beta * C, with op(X) = X or X^T.
// dA = alpha * dY @ op(B)^T   (transposed back when transA)
// dB = alpha * op(A)^T @ dY   (transposed back when transB)
// dC = beta * dY, reduced to C's shape.
Status GemmGrad(GradientContext& c) {
  const bool trans_a = c.AttrInt("transA", 0) != 0;
  const bool trans_b = c.AttrInt("transB", 0) != 0;
  const float alpha = c.AttrFloat("alpha", 1.0f);
  const float beta = c.AttrFloat("beta", 1.0f);
  auto gemm = [&](const std::string& x, const std::string& y, bool tx, bool ty, const std::string& out) {
    c.Emit("Gemm", {x, y}, {out},
           {MakeAttribute("alpha", alpha), MakeAttribute("transA", static_cast<int64_t>(tx)),
            MakeAttribute("transB", static_cast<int64_t>(ty))});
  };
  const std::string& dy = c.GO(0);
  if (c.NeedsGI(0)) {
    if (!trans_a) {
      gemm(dy, c.I(1), false, !trans_b, c.GI(0));  // [M,N] x op(B)^T
    } else {
      gemm(c.I(1), dy, trans_b, true, c.GI(0));  // (dY op(B)^T)^T = op(B) dY^T
    }
  }
  if (c.NeedsGI(1)) {
    if (!trans_b) {
      gemm(c.I(0), dy, !trans_a, false, c.GI(1));  // op(A)^T x dY
    } else {
      gemm(dy, c.I(0), true, trans_a, c.GI(1));  // (op(A)^T dY)^T = dY^T op(A)
    }
  }
  if (c.NeedsGI(2)) {
    std::string scaled = dy;
    if (beta != 1.0f) scaled = c.EmitValue("Mul", {dy, c.ConstScalar(beta, c.ValueType(c.O(0)))});
    ONNX_AMP_RETURN_IF_ERROR(c.UnbroadcastLike(scaled, c.O(0), c.I(2), c.GI(2)));
  }
  return Status::Ok();
}

}  // namespace

void RegisterLinalgGradients(GradientRegistry& registry) {
  registry.Register("", "MatMul", MatMulGrad);
  registry.Register("", "Gemm", GemmGrad);
}

}  // namespace onnx_amp
