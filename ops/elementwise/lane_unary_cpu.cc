// Element-wise functions whose scalar forms are library calls the compiler cannot
// vectorise, run in 16-lane forms instead (ops/common/float_lanes.h): Erf (the GELU of
// transformer exports). float32 runs in place of the scalar loop; float16 and bfloat16
// are widened and rounded a block at a time, so they give the float32 results rounded
// once; float64 keeps the scalar functor.
#include <algorithm>

#include "ops/common/block_io.h"
#include "ops/common/cpu_clones.h"
#include "ops/common/elementwise_math.h"
#include "ops/common/float32_buffers.h"
#include "ops/common/float_lanes.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

// out[0, n) = erf(in[0, n)); out may be in. The last n % 16 values go through the same
// lanes, padded with zeros.
ONNX_AMP_CPU_CLONES void ErfRun(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) StoreLanes(ErfLanes(LoadLanes(in + i)), out + i);
  if (i == n) return;
  float tail[kLanes] = {};
  std::copy(in + i, in + n, tail);
  StoreLanes(ErfLanes(LoadLanes(tail)), tail);
  std::copy(tail, tail + (n - i), out + i);
}

Status Erf(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* x, RequiredInput(context, 0));
  if (x->dtype() != DType::kFloat32 && !IsLowPrecision(x->dtype())) return RunUnary<kMaskFloat64>(context, ErfOp{});
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  context.threads().ParallelFor(x->num_elements(), kParallelGrain, [&](int64_t begin, int64_t end) {
    if (x->dtype() == DType::kFloat32) {
      ErfRun(x->data<float>() + begin, y->data<float>() + begin, end - begin);
      return;
    }
    float block[kBlockSize];
    for (int64_t i = begin; i < end; i += kBlockSize) {
      const int64_t count = std::min(kBlockSize, end - i);
      LoadFloat32Block(*x, i, count, block);
      ErfRun(block, block, count);
      StoreFloat32Block(block, i, count, *y);
    }
  });
  return Status::Ok();
}

}  // namespace

void RegisterLaneUnaryCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "Erf", DeviceKind::kCpu, Erf, true});  // may_inplace: element i reads element i
}

}  // namespace onnx_amp
