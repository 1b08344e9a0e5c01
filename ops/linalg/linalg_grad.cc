// Gradient rules of MatMul and Gemm.
#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "ops/gradient_context.h"
#include "ops/gradients.h"

namespace onnx_amp {
namespace {

// Transpose of the last two axes of a value of rank `rank`.
std::string SwapLastTwo(GradientContext& c, const std::string& value, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  std::swap(perm[rank - 1], perm[rank - 2]);
  return c.EmitValue("Transpose", {value}, {MakeAttribute("perm", perm)});
}

// Extent `axis` of a partly known shape (-1: unknown), with its symbolic name.
struct Extent {
  int64_t dim = 1;
  std::string param;
};

Extent ExtentAt(const ValueShape& shape, size_t axis) {
  return {shape.dims[axis], axis < shape.dim_params.size() ? shape.dim_params[axis] : std::string()};
}

// The broadcast of two extents: the one that is not 1, as far as the known dims tell.
Extent Broadcast(const Extent& a, const Extent& b) {
  if (a.dim == 1) return b;
  if (b.dim == 1 || a.dim >= 0) return a;
  if (b.dim >= 0) return b;
  return a.param == b.param ? a : Extent{-1, ""};
}

void Append(ValueShape& shape, const Extent& extent) {
  shape.dims.push_back(extent.dim);
  shape.dim_params.push_back(extent.param);
}

void EraseAxis(ValueShape& shape, size_t axis) {
  shape.dims.erase(shape.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  shape.dim_params.erase(shape.dim_params.begin() + static_cast<std::ptrdiff_t>(axis));
}

// The shapes of the gradients of the promoted operands (1-D ones promoted as MatMul
// does): the broadcast batch dims, then each operand's own last two dims.
std::pair<ValueShape, ValueShape> PromotedGradientShapes(ValueShape a, ValueShape b, int64_t out_rank) {
  if (a.dims.size() == 1) {
    a.dims.insert(a.dims.begin(), 1);
    a.dim_params.insert(a.dim_params.begin(), "");
  }
  if (b.dims.size() == 1) {
    b.dims.push_back(1);
    b.dim_params.push_back("");
  }
  a.dim_params.resize(a.dims.size());
  b.dim_params.resize(b.dims.size());
  const int64_t pa = static_cast<int64_t>(a.dims.size());
  const int64_t pb = static_cast<int64_t>(b.dims.size());
  ValueShape da, db;
  for (int64_t i = 0; i < out_rank - 2; ++i) {
    const int64_t ia = i - (out_rank - pa);
    const int64_t ib = i - (out_rank - pb);
    const Extent batch = Broadcast(ia >= 0 ? ExtentAt(a, ia) : Extent{}, ib >= 0 ? ExtentAt(b, ib) : Extent{});
    Append(da, batch);
    Append(db, batch);
  }
  for (int64_t i = pa - 2; i < pa; ++i) Append(da, ExtentAt(a, i));
  for (int64_t i = pb - 2; i < pb; ++i) Append(db, ExtentAt(b, i));
  return {da, db};
}

// Y = A @ B with NumPy semantics (1-D operands promoted, batch dims broadcast).
// dA = dY @ B^T and dB = A^T @ dY on the promoted shapes, then reduced over the
// broadcast batch axes and reshaped to each operand's shape.
Status MatMulGrad(GradientContext& c) {
  const std::optional<ValueShape> a_shape = c.KnownShape(c.I(0));
  const std::optional<ValueShape> b_shape = c.KnownShape(c.I(1));
  if (!a_shape || !b_shape) return c.Error(ErrorCode::kUnsupported, "operand ranks must be known");
  const int64_t a_rank = static_cast<int64_t>(a_shape->dims.size());
  const int64_t b_rank = static_cast<int64_t>(b_shape->dims.size());
  const std::string a = a_rank == 1 ? c.Unsqueeze(c.I(0), {0}) : c.I(0);
  const std::string b = b_rank == 1 ? c.Unsqueeze(c.I(1), {1}) : c.I(1);
  std::string dy = c.GO(0);
  if (a_rank == 1) dy = c.Unsqueeze(dy, {-2});
  if (b_rank == 1) dy = c.Unsqueeze(dy, {-1});
  const int64_t pa = std::max<int64_t>(a_rank, 2);
  const int64_t pb = std::max<int64_t>(b_rank, 2);
  const int64_t out_rank = std::max(pa, pb);
  auto [da_shape, db_shape] = PromotedGradientShapes(*a_shape, *b_shape, out_rank);

  // A promoted 1-D operand's extra axis is squeezed away before the batch reduction.
  if (c.NeedsGI(0)) {
    std::string da = c.EmitValue("MatMul", {dy, SwapLastTwo(c, b, pb)});
    if (a_rank == 1) {
      da = c.Squeeze(da, {-2});
      EraseAxis(da_shape, da_shape.dims.size() - 2);
    }
    ONNX_AMP_RETURN_IF_ERROR(
        c.Unbroadcast(da, da_shape, static_cast<int64_t>(da_shape.dims.size()), c.I(0), c.GI(0)));
  }
  if (c.NeedsGI(1)) {
    std::string db = c.EmitValue("MatMul", {SwapLastTwo(c, a, pa), dy});
    if (b_rank == 1) {
      db = c.Squeeze(db, {-1});
      EraseAxis(db_shape, db_shape.dims.size() - 1);
    }
    ONNX_AMP_RETURN_IF_ERROR(
        c.Unbroadcast(db, db_shape, static_cast<int64_t>(db_shape.dims.size()), c.I(1), c.GI(1)));
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
    std::vector<std::string> inputs = {x, y};
    // Before opset 11 Gemm's C is required: a scalar zero, broadcast.
    if (c.default_opset() < 11) inputs.push_back(c.ConstScalar(0.0, c.ValueType(c.O(0))));
    c.Emit("Gemm", inputs, {out},
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
