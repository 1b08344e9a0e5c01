// Clip: bounds are attributes (min, max) before opset 11 and optional scalar inputs
// from opset 11 on; a missing bound leaves that side open.
#include <limits>

#include "ops/common/elementwise_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename C>
struct ClipBetween {
  C lo;
  C hi;
  ONNX_AMP_HD C operator()(C x) const { return ClipOp{}(x, lo, hi); }
};

// Reads an optional scalar bound input into `bound`.
template <typename T, typename C>
Status ReadBound(const KernelContext& context, int index, const Tensor& x, C& bound) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) return Status::Ok();
  if (tensor->dtype() != x.dtype()) return context.Error(ErrorCode::kInvalidModel, "bounds must have the input's dtype");
  if (tensor->num_elements() != 1) return context.Error(ErrorCode::kInvalidModel, "bounds must be scalars");
  LoadAs(tensor->data<T>(), &bound, 1);
  return Status::Ok();
}

Status Clip(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  return DispatchDType<kMaskNumeric>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    ClipBetween<C> op{std::numeric_limits<C>::lowest(), std::numeric_limits<C>::max()};
    if constexpr (std::is_floating_point_v<C>) {
      op.lo = -std::numeric_limits<C>::infinity();
      op.hi = std::numeric_limits<C>::infinity();
    }
    if (context.opset() < 11) {
      if (context.has_attribute("min")) op.lo = static_cast<C>(context.attr_float("min", 0.0f));
      if (context.has_attribute("max")) op.hi = static_cast<C>(context.attr_float("max", 0.0f));
    } else {
      ONNX_AMP_RETURN_IF_ERROR((ReadBound<T, C>(context, 1, *x, op.lo)));
      ONNX_AMP_RETURN_IF_ERROR((ReadBound<T, C>(context, 2, *x, op.hi)));
    }
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, x->dtype(), x->shape()));
    UnaryMap<C>(context.threads(), x->data<T>(), y->data<T>(), x->num_elements(), op);
    return Status::Ok();
  });
}

}  // namespace

// may_inplace (true): element i of the output reads only element i of each same-shaped
// input, so the output may reuse an input's buffer.
void RegisterClipCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Clip", DeviceKind::kCpu, Clip, true});
}

}  // namespace onnx_amp
