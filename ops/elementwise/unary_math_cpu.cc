// Unary math: Abs Neg Sign Floor Ceil Round Reciprocal Sqrt, the trigonometric and
// hyperbolic functions, IsNaN, IsInf (Exp, Log and Erf: lane_unary_cpu.cc).
#include "ops/common/elementwise_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename Op>
Status FloatUnary(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, Op{});
}

Status Abs(KernelContext& context) { return RunUnary<kMaskNumeric>(context, AbsOp{}); }
Status Neg(KernelContext& context) { return RunUnary<kMaskFloats | kMaskSigned>(context, NegOp{}); }
Status Sign(KernelContext& context) { return RunUnary<kMaskNumeric>(context, SignOp{}); }

Status IsInf(KernelContext& context) {
  IsInfOp op;
  op.detect_negative = context.attr_int("detect_negative", 1) != 0;
  op.detect_positive = context.attr_int("detect_positive", 1) != 0;
  return RunUnary<kMaskFloats>(context, op);
}

}  // namespace

void RegisterUnaryMathCpuKernels(KernelRegistry& registry) {
  // The fifth field, may_inplace: element i of the output reads only element i of a
  // same-shaped input, so the output may reuse that input's buffer.
  const KernelDef defs[] = {
      {"", "Abs", DeviceKind::kCpu, Abs, true},
      {"", "Neg", DeviceKind::kCpu, Neg, true},
      {"", "Sign", DeviceKind::kCpu, Sign, true},
      {"", "Floor", DeviceKind::kCpu, FloatUnary<FloorOp>, true},
      {"", "Ceil", DeviceKind::kCpu, FloatUnary<CeilOp>, true},
      {"", "Round", DeviceKind::kCpu, FloatUnary<RoundOp>, true},
      {"", "Reciprocal", DeviceKind::kCpu, FloatUnary<ReciprocalOp>, true},
      {"", "Sqrt", DeviceKind::kCpu, FloatUnary<SqrtOp>, true},
      {"", "Sin", DeviceKind::kCpu, FloatUnary<SinOp>, true},
      {"", "Cos", DeviceKind::kCpu, FloatUnary<CosOp>, true},
      {"", "Tan", DeviceKind::kCpu, FloatUnary<TanOp>, true},
      {"", "Asin", DeviceKind::kCpu, FloatUnary<AsinOp>, true},
      {"", "Acos", DeviceKind::kCpu, FloatUnary<AcosOp>, true},
      {"", "Atan", DeviceKind::kCpu, FloatUnary<AtanOp>, true},
      {"", "Sinh", DeviceKind::kCpu, FloatUnary<SinhOp>, true},
      {"", "Cosh", DeviceKind::kCpu, FloatUnary<CoshOp>, true},
      {"", "Asinh", DeviceKind::kCpu, FloatUnary<AsinhOp>, true},
      {"", "Acosh", DeviceKind::kCpu, FloatUnary<AcoshOp>, true},
      {"", "Atanh", DeviceKind::kCpu, FloatUnary<AtanhOp>, true},
      {"", "IsNaN", DeviceKind::kCpu, FloatUnary<IsNaNOp>, true},
      {"", "IsInf", DeviceKind::kCpu, IsInf, true},
  };
  for (const KernelDef& def : defs) registry.Register(def);
}

}  // namespace onnx_amp
