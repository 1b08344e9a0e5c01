// Gradient rules of the reductions. A reduced value is brought back to the input's
// shape by re-inserting the reduced axes (keepdims=0) and expanding (Expand: opset >= 8). `axes` is an
// attribute before opset 13 (ReduceSum) / 18 (the others) and an input after.
#include "ops/gradient_context.h"
#include "ops/gradients.h"

namespace onnx_amp {
namespace {

// `value` (shaped like the output) with the reduced axes restored as size-1 dims.
std::string KeepDims(GradientContext& c, const std::string& value) {
  if (c.AttrInt("keepdims", 1) != 0) return value;
  const int64_t input_form_opset = c.op_type() == "ReduceSum" ? 13 : 18;
  if (c.opset() < input_form_opset) {
    const std::vector<int64_t> axes = c.AttrInts("axes");
    return axes.empty() ? value : c.Unsqueeze(value, axes);
  }
  if (!c.HasInput(1)) return value;  // all axes reduced: a scalar expands as it is
  if (std::optional<std::vector<int64_t>> axes = c.ConstantInts(c.I(1))) {
    return axes->empty() ? value : c.Unsqueeze(value, *axes);
  }
  return c.EmitValue("Unsqueeze", {value, c.I(1)});
}

// Whether the node reduces nothing (noop_with_empty_axes=1 with empty axes).
bool IsNoop(GradientContext& c) {
  if (c.AttrInt("noop_with_empty_axes", 0) == 0) return false;
  if (!c.HasInput(1)) return true;
  std::optional<std::vector<int64_t>> axes = c.ConstantInts(c.I(1));
  return axes && axes->empty();
}

std::string ExpandToInput(GradientContext& c, const std::string& value) {
  return c.EmitValue("Expand", {value, c.ShapeOf(c.I(0))});
}

// dX = expand(dY)
Status ReduceSumGrad(GradientContext& c) {
  if (IsNoop(c)) {
    c.Emit("Identity", {c.GO(0)}, {c.GI(0)});
    return Status::Ok();
  }
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(8, "Expand"));
  c.Emit("Expand", {KeepDims(c, c.GO(0)), c.ShapeOf(c.I(0))}, {c.GI(0)});
  return Status::Ok();
}

// dX = expand(dY) * size(Y) / size(X)
Status ReduceMeanGrad(GradientContext& c) {
  if (IsNoop(c)) {
    c.Emit("Identity", {c.GO(0)}, {c.GI(0)});
    return Status::Ok();
  }
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(8, "Expand"));
  const DType type = c.ValueType(c.I(0));
  const std::optional<Shape> in_shape = c.StaticShape(c.I(0));
  const std::optional<Shape> out_shape = c.StaticShape(c.O(0));
  std::string scale;
  if (in_shape && out_shape && NumElements(*in_shape) > 0) {
    scale = c.ConstScalar(static_cast<double>(NumElements(*out_shape)) / NumElements(*in_shape), type);
  } else {
    const std::string out_size = c.CastTo(c.EmitValue("Size", {c.O(0)}), type);
    scale = c.EmitValue("Div", {out_size, c.CastTo(c.EmitValue("Size", {c.I(0)}), type)});
  }
  c.Emit("Mul", {ExpandToInput(c, KeepDims(c, c.GO(0))), scale}, {c.GI(0)});
  return Status::Ok();
}

// dX = expand(dY) * X / expand(Y)
Status ReduceL2Grad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(8, "Expand"));
  const std::string ratio = c.EmitValue("Div", {c.I(0), KeepDims(c, c.O(0))});
  c.Emit("Mul", {ExpandToInput(c, KeepDims(c, c.GO(0))), ratio}, {c.GI(0)});
  return Status::Ok();
}

// dX = expand(dY) * exp(X - expand(Y))
Status ReduceLogSumExpGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(8, "Expand"));
  const std::string softmax = c.EmitValue("Exp", {c.EmitValue("Sub", {c.I(0), KeepDims(c, c.O(0))})});
  c.Emit("Mul", {ExpandToInput(c, KeepDims(c, c.GO(0))), softmax}, {c.GI(0)});
  return Status::Ok();
}

}  // namespace

void RegisterReductionGradients(GradientRegistry& registry) {
  registry.Register("", "ReduceSum", ReduceSumGrad);
  registry.Register("", "ReduceMean", ReduceMeanGrad);
  registry.Register("", "ReduceL2", ReduceL2Grad);
  registry.Register("", "ReduceLogSumExp", ReduceLogSumExpGrad);
}

}  // namespace onnx_amp
