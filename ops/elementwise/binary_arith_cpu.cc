// Binary arithmetic with broadcasting: Add Sub Mul Div Pow Mod BitShift.
#include "ops/common/elementwise_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename Op>
Status Arithmetic(KernelContext& context) {
  return RunBinary<kMaskNumeric>(context, Op{});
}

Status Mod(KernelContext& context) {
  return RunBinary<kMaskNumeric>(context, ModOp{context.attr_int("fmod", 0) != 0});
}

Status BitShift(KernelContext& context) {
  const std::string direction = context.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return context.Error(ErrorCode::kInvalidModel, "direction must be LEFT or RIGHT, got '" + direction + "'");
  }
  return RunBinary<kMaskUnsigned>(context, BitShiftOp{direction == "LEFT"});
}

// Pow's exponent may have another dtype than the base; the output has the base's.
// Float bases compute in their float compute type, integer bases in double.
Status Pow(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* base, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* exponent, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, PlanBroadcast<2>(context, {base, exponent}));
  constexpr uint32_t kBaseMask = kMaskFloats | kMaskInt32 | kMaskInt64;
  return DispatchDType<kBaseMask>(context, base->dtype(), [&](auto base_tag) -> Status {
    using T = typename decltype(base_tag)::type;
    using C = std::conditional_t<std::is_integral_v<T>, double, ComputeType<T>>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* z, context.AllocateOutput(0, DTypeOf<T>::value, plan.output_shape));
    return DispatchDType<kMaskNumeric>(context, exponent->dtype(), [&](auto exponent_tag) -> Status {
      using E = typename decltype(exponent_tag)::type;
      BinaryBroadcast<C>(context.threads(), plan, base->data<T>(), exponent->data<E>(), z->data<T>(), PowOp{});
      return Status::Ok();
    });
  });
}

}  // namespace

void RegisterBinaryArithmeticCpuKernels(KernelRegistry& registry) {
  // The fifth field, may_inplace: element i of the output reads only element i of a
  // same-shaped input, so the output may reuse that input's buffer.
  const KernelDef defs[] = {
      {"", "Add", DeviceKind::kCpu, Arithmetic<AddOp>, true},
      {"", "Sub", DeviceKind::kCpu, Arithmetic<SubOp>, true},
      {"", "Mul", DeviceKind::kCpu, Arithmetic<MulOp>, true},
      {"", "Div", DeviceKind::kCpu, Arithmetic<DivOp>, true},
      {"", "Pow", DeviceKind::kCpu, Pow, true},
      {"", "Mod", DeviceKind::kCpu, Mod, true},
      {"", "BitShift", DeviceKind::kCpu, BitShift, true},
  };
  for (KernelDef def : defs) {
    def.channels_last = kElementWiseChannelsLast;
    registry.Register(def);
  }
}

}  // namespace onnx_amp
