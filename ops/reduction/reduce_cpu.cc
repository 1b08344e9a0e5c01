// ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum
// ReduceLogSumExp ReduceSumSquare. float16/bfloat16 inputs are widened to float32 as
// they are read, reduced with the float32 code and rounded once; integers accumulate
// in 64 bits.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/common/block_io.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/kernel_registry.h"
#include "ops/reduction/reduce_driver.h"
#include "ops/reduction/reduce_math.h"
#include "ops/reduction/reduction_families.h"

namespace onnx_amp {
namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_integral_v<T>,
                                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, ComputeType<T>>;

template <typename Kind, uint32_t kMask>
Status Reduce(KernelContext& context, int axes_input_since) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input 0 is missing");
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<bool> mask, ReduceAxesMask(context, x->rank(), axes_input_since));
  const bool keepdims = context.attr_int("keepdims", 1) != 0;
  // noop_with_empty_axes leaves the data as it is (not even |x| for ReduceL2).
  if (x->rank() > 0 && std::find(mask.begin(), mask.end(), true) == mask.end()) {
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, x->dtype(), x->shape()));
    std::memcpy(y->raw_data(), x->raw_data(), x->bytes());
    return Status::Ok();
  }
  const ReducePlan plan = MakeReducePlan(x->shape(), mask, keepdims);
  return DispatchDType<kMask>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using A = Accumulator<T>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, x->dtype(), plan.output_shape));
    const T* data = x->data<T>();
    std::vector<A> shift;
    if constexpr (std::is_same_v<Kind, ReduceLogSumExpKind>) {
      shift.resize(plan.outputs);
      ReduceInto<ReduceFiniteMaxKind>(context.threads(), plan, data, static_cast<const A*>(nullptr), shift.data());
    }
    const A* shift_data = shift.empty() ? nullptr : shift.data();
    if constexpr (std::is_same_v<A, T>) {
      ReduceInto<Kind>(context.threads(), plan, data, shift_data, y->data<T>());
    } else {
      std::vector<A> result(plan.outputs);
      ReduceInto<Kind>(context.threads(), plan, data, shift_data, result.data());
      StoreAs(result.data(), y->data<T>(), plan.outputs);
    }
    return Status::Ok();
  });
}

constexpr uint32_t kReduceNumeric = kMaskFloats | kMaskInt32 | kMaskInt64 | kMaskUInt32 | kMaskUInt64;
constexpr uint32_t kReduceOrdered = kReduceNumeric | kMaskInt8 | kMaskUInt8;

// ReduceSum takes axes as an input from opset 13, the other Reduce ops from opset 18.
Status ReduceSum(KernelContext& c) { return Reduce<ReduceSumKind, kReduceNumeric>(c, 13); }
Status ReduceMean(KernelContext& c) { return Reduce<ReduceMeanKind, kReduceNumeric>(c, 18); }
Status ReduceMax(KernelContext& c) { return Reduce<ReduceMaxKind, kReduceOrdered>(c, 18); }
Status ReduceMin(KernelContext& c) { return Reduce<ReduceMinKind, kReduceOrdered>(c, 18); }
Status ReduceProd(KernelContext& c) { return Reduce<ReduceProdKind, kReduceNumeric>(c, 18); }
Status ReduceL1(KernelContext& c) { return Reduce<ReduceL1Kind, kReduceNumeric>(c, 18); }
Status ReduceL2(KernelContext& c) { return Reduce<ReduceL2Kind, kMaskFloats>(c, 18); }
Status ReduceLogSum(KernelContext& c) { return Reduce<ReduceLogSumKind, kMaskFloats>(c, 18); }
Status ReduceLogSumExp(KernelContext& c) { return Reduce<ReduceLogSumExpKind, kMaskFloats>(c, 18); }
Status ReduceSumSquare(KernelContext& c) { return Reduce<ReduceSumSquareKind, kReduceNumeric>(c, 18); }

}  // namespace

void RegisterReduceCpuKernels(KernelRegistry& registry) {
  const KernelDef defs[] = {
      {"", "ReduceSum", DeviceKind::kCpu, ReduceSum},
      {"", "ReduceMean", DeviceKind::kCpu, ReduceMean},
      {"", "ReduceMax", DeviceKind::kCpu, ReduceMax},
      {"", "ReduceMin", DeviceKind::kCpu, ReduceMin},
      {"", "ReduceProd", DeviceKind::kCpu, ReduceProd},
      {"", "ReduceL1", DeviceKind::kCpu, ReduceL1},
      {"", "ReduceL2", DeviceKind::kCpu, ReduceL2},
      {"", "ReduceLogSum", DeviceKind::kCpu, ReduceLogSum},
      {"", "ReduceLogSumExp", DeviceKind::kCpu, ReduceLogSumExp},
      {"", "ReduceSumSquare", DeviceKind::kCpu, ReduceSumSquare},
  };
  for (const KernelDef& def : defs) registry.Register(def);
}

}  // namespace onnx_amp
