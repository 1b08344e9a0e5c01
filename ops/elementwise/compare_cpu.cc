// Comparisons with broadcasting, producing bool: Equal Less LessOrEqual Greater GreaterOrEqual.
#include "ops/common/elementwise_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename Op>
Status Compare(KernelContext& context) {
  return RunBinary<kMaskAll>(context, Op{});
}

}  // namespace

void RegisterCompareCpuKernels(KernelRegistry& registry) {
  // The fifth field, may_inplace: element i of the output reads only element i of a
  // same-shaped input, so the output may reuse that input's buffer.
  const KernelDef defs[] = {
      {"", "Equal", DeviceKind::kCpu, Compare<EqualOp>, true},
      {"", "Less", DeviceKind::kCpu, Compare<LessOp>, true},
      {"", "LessOrEqual", DeviceKind::kCpu, Compare<LessOrEqualOp>, true},
      {"", "Greater", DeviceKind::kCpu, Compare<GreaterOp>, true},
      {"", "GreaterOrEqual", DeviceKind::kCpu, Compare<GreaterOrEqualOp>, true},
  };
  for (const KernelDef& def : defs) registry.Register(def);
}

}  // namespace onnx_amp
