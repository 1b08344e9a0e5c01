// Binary arithmetic with broadcasting: Add Sub Mul Div Pow Mod BitShift.
#include <optional>

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

// The value of a one-element floating or integer exponent.
std::optional<double> OneExponent(const Tensor& exponent) {
  if (exponent.num_elements() != 1) return std::nullopt;
  switch (exponent.dtype()) {
    case DType::kFloat32: return exponent.data<float>()[0];
    case DType::kFloat64: return exponent.data<double>()[0];
    case DType::kFloat16: return exponent.data<Float16>()[0].ToFloat();
    case DType::kBFloat16: return exponent.data<BFloat16>()[0].ToFloat();
    case DType::kInt32: return exponent.data<int32_t>()[0];
    case DType::kInt64: return static_cast<double>(exponent.data<int64_t>()[0]);
    default: return std::nullopt;
  }
}

struct SquareOp {
  template <typename C> C operator()(C x) const { return x * x; }
};

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
    if constexpr (!std::is_integral_v<T>) {
      // x^2 (decomposed LayerNorms and L2 norms square this way): x * x is the correctly
      // rounded square, as pow's is, and vectorises where the library call does not.
      if (OneExponent(*exponent) == 2.0) {
        UnaryMap<C>(context.threads(), base->data<T>(), z->data<T>(), z->num_elements(), SquareOp{});
        return Status::Ok();
      }
    }
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
