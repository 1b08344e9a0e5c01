// Where(condition, X, Y) with three-way broadcasting. It selects stored values, so
// every dtype is handled bit for bit without conversion.
#include <cstdint>
#include <type_traits>

#include "ops/common/cpu_clones.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

// out[i] = c[i] ? a[i] : b[i] along a run whose operands have strides 0 or 1. Both values
// are read and one picked, without a branch (a random mask mispredicts half of them); the
// all-contiguous case, the common one, is a loop of its own so that it vectorises. The
// condition is read as bytes compared with 0: GCC does not vectorise a select on a bool.
template <typename T>
ONNX_AMP_CPU_CLONES void SelectRun(const bool* condition, int64_t stride_c, const T* a, int64_t stride_a, const T* b,
                                   int64_t stride_b, T* out, int64_t n) {
  const auto* c = reinterpret_cast<const uint8_t*>(condition);
  if (stride_c == 1 && stride_a == 1 && stride_b == 1) {
    // `out` is an operand itself (in place) or apart from all of them.
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) {
      const T x = a[i], y = b[i];
      out[i] = c[i] != 0 ? x : y;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const T x = a[i * stride_a], y = b[i * stride_b];
    out[i] = c[i * stride_c] != 0 ? x : y;
  }
}

Status Where(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* condition, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, RequiredInput(context, 2));
  if (condition->dtype() != DType::kBool) return context.Error(ErrorCode::kInvalidModel, "condition must be bool");
  ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *x, *y));
  ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, PlanBroadcast<3>(context, {condition, x, y}));
  return DispatchDType<kMaskAll>(context, x->dtype(), [&](auto tag) -> Status {
    // Values are moved, never computed on: float16/bfloat16 as their bits, so that the
    // select is one on integers, which vectorises.
    using Stored = typename decltype(tag)::type;
    using T = std::conditional_t<std::is_same_v<Stored, Float16> || std::is_same_v<Stored, BFloat16>, uint16_t, Stored>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* output, context.AllocateOutput(0, x->dtype(), plan.output_shape));
    const bool* c = condition->data<bool>();
    const T* a = reinterpret_cast<const T*>(x->data<Stored>());
    const T* b = reinterpret_cast<const T*>(y->data<Stored>());
    T* out = reinterpret_cast<T*>(output->data<Stored>());
    const OperandOffsets strides = plan.inner_strides;
    context.threads().ParallelFor(plan.total, kParallelGrain, [&](int64_t begin, int64_t end) {
      ForEachRun(plan, begin, end, [&](const OperandOffsets& offsets, int64_t pos, int64_t length) {
        SelectRun(c + offsets[0], strides[0], a + offsets[1], strides[1], b + offsets[2], strides[2], out + pos,
                  length);
      });
    });
    return Status::Ok();
  });
}

}  // namespace

// may_inplace (true): element i of the output reads only element i of each same-shaped
// input, so the output may reuse an input's buffer.
void RegisterWhereCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Where", DeviceKind::kCpu, Where, true});
}

}  // namespace onnx_amp
