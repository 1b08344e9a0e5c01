// Gradient rules of the element-wise family. Binary ops broadcast, so each input
// gradient is reduced back to the input's shape (GradientContext::UnbroadcastLike).
#include <cmath>
#include <numbers>

#include "ops/elementwise/activations.h"
#include "ops/gradient_context.h"
#include "ops/gradients.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

// Writes `grad` (shaped like output 0) into GI(index), undoing broadcasting.
Status ToInput(GradientContext& c, int index, const std::string& grad) {
  return c.UnbroadcastLike(grad, c.O(0), c.I(index), c.GI(index));
}

// dA = dY; dB = dY
Status AddGrad(GradientContext& c) {
  for (int i = 0; i < 2; ++i) {
    if (c.NeedsGI(i)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, i, c.GO(0)));
  }
  return Status::Ok();
}

// dA = dY; dB = -dY
Status SubGrad(GradientContext& c) {
  if (c.NeedsGI(0)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 0, c.GO(0)));
  if (c.NeedsGI(1)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 1, c.EmitValue("Neg", {c.GO(0)})));
  return Status::Ok();
}

// dA = dY * B; dB = dY * A
Status MulGrad(GradientContext& c) {
  if (c.NeedsGI(0)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 0, c.EmitValue("Mul", {c.GO(0), c.I(1)})));
  if (c.NeedsGI(1)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 1, c.EmitValue("Mul", {c.GO(0), c.I(0)})));
  return Status::Ok();
}

// dA = dY / B; dB = -dY * Y / B
Status DivGrad(GradientContext& c) {
  if (c.NeedsGI(0)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 0, c.EmitValue("Div", {c.GO(0), c.I(1)})));
  if (c.NeedsGI(1)) {
    const std::string dy_y_over_b = c.EmitValue("Div", {c.EmitValue("Mul", {c.GO(0), c.O(0)}), c.I(1)});
    ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 1, c.EmitValue("Neg", {dy_y_over_b})));
  }
  return Status::Ok();
}

// dX = -dY
Status NegGrad(GradientContext& c) {
  c.Emit("Neg", {c.GO(0)}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY * E * X^(E - 1); the exponent gets no gradient.
Status PowGrad(GradientContext& c) {
  if (c.NeedsGI(1)) return c.Error(ErrorCode::kUnsupported, "the gradient of Pow's exponent is not implemented");
  if (!c.NeedsGI(0)) return Status::Ok();
  const DType base_type = c.ValueType(c.I(0));
  std::string exponent = c.I(1);
  if (c.ValueType(exponent) != base_type) exponent = c.CastTo(exponent, base_type);
  const std::string e_minus_one = c.EmitValue("Sub", {exponent, c.ConstScalar(1.0, base_type)});
  const std::string slope = c.EmitValue("Mul", {exponent, c.EmitValue("Pow", {c.I(0), e_minus_one})});
  return ToInput(c, 0, c.EmitValue("Mul", {c.GO(0), slope}));
}

// dX = dY / (2 * Y)
Status SqrtGrad(GradientContext& c) {
  const std::string two_y = c.EmitValue("Mul", {c.O(0), c.ConstScalar(2.0, c.ValueType(c.O(0)))});
  c.Emit("Div", {c.GO(0), two_y}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY * Y
Status ExpGrad(GradientContext& c) {
  c.Emit("Mul", {c.GO(0), c.O(0)}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY / X
Status LogGrad(GradientContext& c) {
  c.Emit("Div", {c.GO(0), c.I(0)}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY * 2/sqrt(pi) * exp(-X^2)
Status ErfGrad(GradientContext& c) {
  const DType type = c.ValueType(c.I(0));
  const std::string minus_x2 = c.EmitValue("Neg", {c.EmitValue("Mul", {c.I(0), c.I(0)})});
  const std::string slope =
      c.EmitValue("Mul", {c.EmitValue("Exp", {minus_x2}), c.ConstScalar(2.0 / std::sqrt(std::numbers::pi), type)});
  c.Emit("Mul", {c.GO(0), slope}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY * sign(X)
Status AbsGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(9, "Sign"));
  c.Emit("Mul", {c.GO(0), c.EmitValue("Sign", {c.I(0)})}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY where min <= X <= max, else 0. The bounds are thresholds (Relu6-style
// constants): they get no gradient.
Status ClipGrad(GradientContext& c) {
  if (!c.NeedsGI(0)) return Status::Ok();
  const DType type = c.ValueType(c.I(0));
  std::string low = c.opset() < 11 ? (c.Attr("min") ? c.ConstScalar(c.AttrFloat("min", 0), type) : "") : c.I(1);
  std::string high = c.opset() < 11 ? (c.Attr("max") ? c.ConstScalar(c.AttrFloat("max", 0), type) : "") : c.I(2);
  std::string mask;
  if (!low.empty()) mask = c.EmitValue("Not", {c.EmitValue("Less", {c.I(0), low})});
  if (!high.empty()) {
    const std::string below_high = c.EmitValue("Not", {c.EmitValue("Greater", {c.I(0), high})});
    mask = mask.empty() ? below_high : c.EmitValue("And", {mask, below_high});
  }
  if (mask.empty()) {
    c.Emit("Identity", {c.GO(0)}, {c.GI(0)});
    return Status::Ok();
  }
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(9, "Where"));
  c.Emit("Where", {mask, c.GO(0), c.ConstScalar(0.0, type)}, {c.GI(0)});
  return Status::Ok();
}

// dX = Where(C, dY, 0); dY' = Where(C, 0, dY), each reduced to its input's shape.
Status WhereGrad(GradientContext& c) {
  const std::string zero = c.ConstScalar(0.0, c.ValueType(c.O(0)));
  if (c.NeedsGI(1)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 1, c.EmitValue("Where", {c.I(0), c.GO(0), zero})));
  if (c.NeedsGI(2)) ONNX_AMP_RETURN_IF_ERROR(ToInput(c, 2, c.EmitValue("Where", {c.I(0), zero, c.GO(0)})));
  return Status::Ok();
}

// dX = Cast(dY, to = type of X): float32 master weights behind a float16 Cast get
// float32 gradients.
Status CastGrad(GradientContext& c) {
  c.Emit("Cast", {c.GO(0)}, {c.GI(0)}, {MakeAttribute("to", static_cast<int64_t>(ToOnnx(c.ValueType(c.I(0)))))});
  return Status::Ok();
}

// dX = dY where X > 0, else alpha * dY
Status LeakyReluGrad(GradientContext& c) {
  ONNX_AMP_RETURN_IF_ERROR(c.NeedsOpset(9, "Where"));
  const DType type = c.ValueType(c.I(0));
  const std::string positive = c.EmitValue("Greater", {c.I(0), c.ConstScalar(0.0, type)});
  const std::string scaled = c.EmitValue("Mul", {c.GO(0), c.ConstScalar(c.AttrFloat("alpha", 0.01f), type)});
  c.Emit("Where", {positive, c.GO(0), scaled}, {c.GI(0)});
  return Status::Ok();
}

// dX = dY * slope(X or Y), one fused op of the activation table (activations.h; the
// slopes and their formulas are in ops/common/elementwise_math.h).
Status FusedActivationGrad(GradientContext& c) {
  const Activation* activation = FindActivation(c.op_type());
  ONNX_AMP_ASSERT(activation != nullptr && !activation->gradient_op.empty(), "rule registered for a fused activation");
  std::vector<std::string> attributes;
  for (std::string_view attribute : activation->attributes) {
    if (!attribute.empty()) attributes.emplace_back(attribute);
  }
  const std::string& value = activation->slope_of == SlopeOf::kInput ? c.I(0) : c.O(0);
  c.Emit(std::string(activation->gradient_op), {c.GO(0), value}, {c.GI(0)}, c.CopyAttributes(attributes),
         kOnnxAmpDomain);
  return Status::Ok();
}

}  // namespace

void RegisterElementwiseGradients(GradientRegistry& registry) {
  for (const Activation& activation : Activations()) {
    if (!activation.gradient_op.empty()) registry.Register("", activation.op, FusedActivationGrad);
  }
  registry.Register("", "Add", AddGrad);
  registry.Register("", "Sub", SubGrad);
  registry.Register("", "Mul", MulGrad);
  registry.Register("", "Div", DivGrad);
  registry.Register("", "Neg", NegGrad);
  registry.Register("", "Pow", PowGrad);
  registry.Register("", "Sqrt", SqrtGrad);
  registry.Register("", "Exp", ExpGrad);
  registry.Register("", "Log", LogGrad);
  registry.Register("", "Erf", ErfGrad);
  registry.Register("", "Abs", AbsGrad);
  registry.Register("", "Clip", ClipGrad);
  registry.Register("", "Where", WhereGrad);
  registry.Register("", "Cast", CastGrad);
  registry.Register("", "LeakyRelu", LeakyReluGrad);
}

}  // namespace onnx_amp
