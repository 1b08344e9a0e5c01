// Activations: Relu LeakyRelu PRelu Elu Selu Celu Sigmoid HardSigmoid HardSwish Softplus
// Softsign Tanh ThresholdedRelu Gelu Mish Shrink.
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

Status Relu(KernelContext& context) { return RunUnary<kMaskFloats | kMaskSigned>(context, ReluOp{}); }

Status LeakyRelu(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, LeakyReluOp{context.attr_float("alpha", 0.01f)});
}

// Before opset 7 a 1-D slope of length C applies per channel (axis 1), not by NumPy
// broadcasting; it is viewed as [C, 1, ..., 1].
Status PRelu(KernelContext& context) {
  constexpr uint32_t kMask = kMaskFloats | kMaskInt32 | kMaskInt64 | kMaskUInt32 | kMaskUInt64;
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* slope, RequiredInput(context, 1));
  if (context.opset() < 7 && x->rank() >= 2 && slope->rank() == 1 && slope->dim(0) == x->dim(1) &&
      slope->dim(0) != 1) {
    Shape channel_shape(x->rank() - 1, 1);
    channel_shape[0] = slope->dim(0);
    const Tensor per_channel = slope->Reshaped(channel_shape);
    return RunBinaryOn<kMask>(context, x, &per_channel, PReluOp{});
  }
  return RunBinaryOn<kMask>(context, x, slope, PReluOp{});
}

Status Elu(KernelContext& context) { return RunUnary<kMaskFloats>(context, EluOp{context.attr_float("alpha", 1.0f)}); }

Status Selu(KernelContext& context) {
  SeluOp op;
  op.alpha = context.attr_float("alpha", op.alpha);
  op.gamma = context.attr_float("gamma", op.gamma);
  return RunUnary<kMaskFloats>(context, op);
}

Status Celu(KernelContext& context) { return RunUnary<kMaskFloats>(context, CeluOp{context.attr_float("alpha", 1.0f)}); }

Status HardSigmoid(KernelContext& context) {
  HardSigmoidOp op;
  op.alpha = context.attr_float("alpha", op.alpha);
  op.beta = context.attr_float("beta", op.beta);
  return RunUnary<kMaskFloats>(context, op);
}

Status ThresholdedRelu(KernelContext& context) {
  return RunUnary<kMaskFloats>(context, ThresholdedReluOp{context.attr_float("alpha", 1.0f)});
}

Status Gelu(KernelContext& context) {
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return context.Error(ErrorCode::kInvalidModel, "approximate must be 'none' or 'tanh', got '" + approximate + "'");
  }
  return RunUnary<kMaskFloats>(context, GeluOp{approximate == "tanh"});
}

Status Shrink(KernelContext& context) {
  ShrinkOp op;
  op.bias = context.attr_float("bias", op.bias);
  op.lambd = context.attr_float("lambd", op.lambd);
  return RunUnary<kMaskNumeric>(context, op);
}

}  // namespace

void RegisterActivationCpuKernels(KernelRegistry& registry) {
  // The fifth field, may_inplace: element i of the output reads only element i of a
  // same-shaped input, so the output may reuse that input's buffer.
  const KernelDef defs[] = {
      {"", "Relu", DeviceKind::kCpu, Relu, true},
      {"", "LeakyRelu", DeviceKind::kCpu, LeakyRelu, true},
      {"", "PRelu", DeviceKind::kCpu, PRelu, true},
      {"", "Elu", DeviceKind::kCpu, Elu, true},
      {"", "Selu", DeviceKind::kCpu, Selu, true},
      {"", "Celu", DeviceKind::kCpu, Celu, true},
      {"", "Sigmoid", DeviceKind::kCpu, FloatUnary<SigmoidOp>, true},
      {"", "HardSigmoid", DeviceKind::kCpu, HardSigmoid, true},
      {"", "HardSwish", DeviceKind::kCpu, FloatUnary<HardSwishOp>, true},
      {"", "Softplus", DeviceKind::kCpu, FloatUnary<SoftplusOp>, true},
      {"", "Softsign", DeviceKind::kCpu, FloatUnary<SoftsignOp>, true},
      {"", "Tanh", DeviceKind::kCpu, FloatUnary<TanhOp>, true},
      {"", "ThresholdedRelu", DeviceKind::kCpu, ThresholdedRelu, true},
      {"", "Gelu", DeviceKind::kCpu, Gelu, true},
      {"", "Mish", DeviceKind::kCpu, FloatUnary<MishOp>, true},
      {"", "Shrink", DeviceKind::kCpu, Shrink, true},
  };
  for (const KernelDef& def : defs) registry.Register(def);
}

}  // namespace onnx_amp
