// Where(condition, X, Y) with three-way broadcasting. It selects stored values, so
// every dtype is handled bit for bit without conversion.
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

Status Where(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* condition, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* y, RequiredInput(context, 2));
  if (condition->dtype() != DType::kBool) return context.Error(ErrorCode::kInvalidModel, "condition must be bool");
  ONNX_AMP_RETURN_IF_ERROR(RequireSameDType(context, *x, *y));
  ONNX_AMP_ASSIGN_OR_RETURN(BroadcastPlan plan, PlanBroadcast<3>(context, {condition, x, y}));
  return DispatchDType<kMaskAll>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* output, context.AllocateOutput(0, x->dtype(), plan.output_shape));
    const bool* c = condition->data<bool>();
    const T* a = x->data<T>();
    const T* b = y->data<T>();
    T* out = output->data<T>();
    const OperandOffsets strides = plan.inner_strides;
    context.threads().ParallelFor(plan.total, kParallelGrain, [&](int64_t begin, int64_t end) {
      ForEachRun(plan, begin, end, [&](const OperandOffsets& offsets, int64_t pos, int64_t length) {
        const bool* run_c = c + offsets[0];
        const T* run_a = a + offsets[1];
        const T* run_b = b + offsets[2];
        for (int64_t i = 0; i < length; ++i) {
          out[pos + i] = run_c[i * strides[0]] ? run_a[i * strides[1]] : run_b[i * strides[2]];
        }
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
