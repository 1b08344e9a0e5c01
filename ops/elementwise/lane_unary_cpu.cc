// The lane kernels of lane_unary.h, and the registration of Exp, Log and Erf (Sigmoid, Tanh
// and Gelu register with their gradients in activations_cpu.cc).
#include "ops/elementwise/lane_unary.h"

#include <algorithm>

#include "ops/common/block_io.h"
#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

// The scalar form, for float64.
template <LaneFunction kFunction>
auto ScalarForm() {
  if constexpr (kFunction == LaneFunction::kExp) return ExpOp{};
  if constexpr (kFunction == LaneFunction::kLog) return LogOp{};
  if constexpr (kFunction == LaneFunction::kErf) return ErfOp{};
  if constexpr (kFunction == LaneFunction::kSigmoid) return SigmoidOp{};
  if constexpr (kFunction == LaneFunction::kTanh) return TanhOp{};
  if constexpr (kFunction == LaneFunction::kGelu) return GeluOp{false};
  if constexpr (kFunction == LaneFunction::kGeluTanh) return GeluOp{true};
}

}  // namespace

template <LaneFunction kFunction>
Status LaneUnaryKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  if (x->dtype() != DType::kFloat32 && !IsLowPrecision(x->dtype())) {
    return RunUnary<kMaskFloat64>(context, ScalarForm<kFunction>());
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  context.threads().ParallelFor(x->num_elements(), kParallelGrain, [&](int64_t begin, int64_t end) {
    if (x->dtype() == DType::kFloat32) {
      ApplyLaneFunction(kFunction, x->data<float>() + begin, y->data<float>() + begin, end - begin);
      return;
    }
    float block[kBlockSize];
    for (int64_t i = begin; i < end; i += kBlockSize) {
      const int64_t count = std::min(kBlockSize, end - i);
      LoadFloat32Block(*x, i, count, block);
      ApplyLaneFunction(kFunction, block, block, count);
      StoreFloat32Block(block, i, count, *y);
    }
  });
  return Status::Ok();
}

template Status LaneUnaryKernel<LaneFunction::kExp>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kLog>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kErf>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kSigmoid>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kTanh>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kGelu>(KernelContext& context);
template Status LaneUnaryKernel<LaneFunction::kGeluTanh>(KernelContext& context);

void RegisterLaneUnaryCpuKernels(KernelRegistry& registry) {
  // may_inplace: element i of the output reads only element i of the input.
  registry.Register({"", "Exp", DeviceKind::kCpu, LaneUnaryKernel<LaneFunction::kExp>, true});
  registry.Register({"", "Log", DeviceKind::kCpu, LaneUnaryKernel<LaneFunction::kLog>, true});
  registry.Register({"", "Erf", DeviceKind::kCpu, LaneUnaryKernel<LaneFunction::kErf>, true});
}

}  // namespace onnx_amp
