// Kernel bodies shared by the element-wise families: read the inputs, check dtypes,
// allocate the output and run a per-element functor (elementwise_math.h) through the
// loop drivers (elementwise_apply.h).
#pragma once

#include <array>
#include <string>
#include <type_traits>

#include "ops/common/dtype_dispatch.h"
#include "ops/elementwise/elementwise_apply.h"
#include "runtime/exec/kernel.h"

namespace onnx_amp {

// The input at `index`, or an InvalidModel error when the node lacks it.
inline Expected<const Tensor*> RequiredInput(const KernelContext& context, int index) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) return context.Error(ErrorCode::kInvalidModel, "input " + std::to_string(index) + " is missing");
  return tensor;
}

inline Status RequireSameDType(const KernelContext& context, const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return Status::Ok();
  return context.Error(ErrorCode::kInvalidModel, "inputs have different dtypes: " + std::string(DTypeName(a.dtype())) +
                                                     " and " + std::string(DTypeName(b.dtype())));
}

// Output storage type for a functor result R computed from storage type T: bool
// results stay bool, everything else is stored back as T.
template <typename T, typename R>
using OutputStorage = std::conditional_t<std::is_same_v<R, bool>, bool, T>;

// y = op(x) for the dtypes in kMask.
template <uint32_t kMask, typename Op>
Status RunUnary(KernelContext& context, const Op& op) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  return DispatchDType<kMask>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    using O = OutputStorage<T, decltype(op(C{}))>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, DTypeOf<O>::value, x->shape()));
    UnaryMap<C>(context.threads(), x->data<T>(), y->data<O>(), x->num_elements(), op);
    return Status::Ok();
  });
}

// Broadcast plan of the given inputs, with shape errors naming the node.
template <size_t N>
Expected<BroadcastPlan> PlanBroadcast(const KernelContext& context, const std::array<const Tensor*, N>& inputs) {
  std::array<Shape, N> shapes;
  for (size_t i = 0; i < N; ++i) shapes[i] = inputs[i]->shape();
  Expected<BroadcastPlan> plan = MakeBroadcastPlan(shapes);
  if (!plan.ok()) return context.Error(plan.status().code(), plan.status().message());
  return plan;
}

// z = op(a, b) with broadcasting, for the dtypes in kMask (both inputs alike).
template <uint32_t kMask, typename Op>
Status RunBinaryOn(KernelContext& context, const Tensor* a, const Tensor* b, const Op& op) {
  ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *a, *b));
  ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, PlanBroadcast<2>(context, {a, b}));
  return DispatchDType<kMask>(context, a->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    using O = OutputStorage<T, decltype(op(C{}, C{}))>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* z, context.AllocateOutput(0, DTypeOf<O>::value, plan.output_shape));
    BinaryBroadcast<C>(context.threads(), plan, a->data<T>(), b->data<T>(), z->data<O>(), op);
    return Status::Ok();
  });
}

// The same on the node's inputs 0 and 1.
template <uint32_t kMask, typename Op>
Status RunBinary(KernelContext& context, const Op& op) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* a, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* b, RequiredInput(context, 1));
  return RunBinaryOn<kMask>(context, a, b, op);
}

}  // namespace onnx_amp
