// Bitwise ops on integers (BitwiseAnd/Or/Xor/Not) and logical ops on bool (And Or Xor Not).
#include "ops/common/elementwise_math.h"
#include "ops/elementwise/elementwise_families.h"
#include "ops/elementwise/elementwise_kernel.h"
#include "ops/kernel_registry.h"

namespace onnx_amp {
namespace {

template <typename Op>
Status Bitwise(KernelContext& context) {
  return RunBinary<kMaskIntegers>(context, Op{});
}
Status BitwiseNot(KernelContext& context) { return RunUnary<kMaskIntegers>(context, BitwiseNotOp{}); }

template <typename Op>
Status Logical(KernelContext& context) {
  return RunBinary<kMaskBool>(context, Op{});
}
Status Not(KernelContext& context) { return RunUnary<kMaskBool>(context, NotOp{}); }

}  // namespace

void RegisterLogicCpuKernels(KernelRegistry& registry) {
  // The fifth field, may_inplace: element i of the output reads only element i of a
  // same-shaped input, so the output may reuse that input's buffer.
  const KernelDef defs[] = {
      {"", "BitwiseAnd", DeviceKind::kCpu, Bitwise<BitwiseAndOp>, true},
      {"", "BitwiseOr", DeviceKind::kCpu, Bitwise<BitwiseOrOp>, true},
      {"", "BitwiseXor", DeviceKind::kCpu, Bitwise<BitwiseXorOp>, true},
      {"", "BitwiseNot", DeviceKind::kCpu, BitwiseNot, true},
      {"", "And", DeviceKind::kCpu, Logical<AndOp>, true},
      {"", "Or", DeviceKind::kCpu, Logical<OrOp>, true},
      {"", "Xor", DeviceKind::kCpu, Logical<XorOp>, true},
      {"", "Not", DeviceKind::kCpu, Not, true},
  };
  for (const KernelDef& def : defs) registry.Register(def);
}

}  // namespace onnx_amp
