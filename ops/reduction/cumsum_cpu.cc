// CumSum(x, axis) with the exclusive and reverse attributes. float16/bfloat16 sums run
// in float32 and each output is rounded once.
#include <vector>

#include "ops/common/block_io.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/kernel_registry.h"
#include "ops/reduction/axis_split.h"
#include "ops/reduction/reduce_driver.h"
#include "ops/reduction/reduction_families.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

Expected<int64_t> ReadAxis(const KernelContext& context) {
  const Tensor* axis = context.input(1);
  if (axis == nullptr || axis->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "axis must be a tensor with one element");
  }
  if (axis->dtype() == DType::kInt64) return axis->data<int64_t>()[0];
  if (axis->dtype() == DType::kInt32) return static_cast<int64_t>(axis->data<int32_t>()[0]);
  return context.Error(ErrorCode::kInvalidModel, "axis must be int32 or int64");
}

Status CumSum(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input 0 is missing");
  ONNX_AMP_ASSIGN_OR_RETURN(int64_t axis, ReadAxis(context));
  ONNX_AMP_ASSIGN_OR_RETURN(AxisSplit split, SplitAtAxis(context, x->shape(), axis));
  const bool exclusive = context.attr_int("exclusive", 0) != 0;
  const bool reverse = context.attr_int("reverse", 0) != 0;
  constexpr uint32_t kMask = kMaskFloats | kMaskInt32 | kMaskInt64 | kMaskUInt32 | kMaskUInt64;
  return DispatchDType<kMask>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using A = ComputeType<T>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, x->dtype(), x->shape()));
    const T* src = x->data<T>();
    T* dst = y->data<T>();
    const int64_t inner = split.inner;
    const int64_t grain = ItemsPerChunk(split.dim * inner, kReduceGrain);
    context.threads().ParallelFor(split.outer, grain, [&](int64_t begin, int64_t end) {
      if (inner == 1) {
        // Along the last axis: each line converted whole, not one value per call.
        std::vector<A> line(static_cast<size_t>(split.dim));
        for (int64_t o = begin; o < end; ++o) {
          LoadAs(src + o * split.dim, line.data(), split.dim);
          A acc = A(0);
          for (int64_t step = 0; step < split.dim; ++step) {
            A& value = line[static_cast<size_t>(reverse ? split.dim - 1 - step : step)];
            const A sum = static_cast<A>(acc + value);
            value = exclusive ? acc : sum;
            acc = sum;
          }
          StoreAs(line.data(), dst + o * split.dim, split.dim);
        }
        return;
      }
      std::vector<A> acc(inner);
      std::vector<A> row(inner);
      std::vector<A> result(inner);
      for (int64_t o = begin; o < end; ++o) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t step = 0; step < split.dim; ++step) {
          const int64_t k = reverse ? split.dim - 1 - step : step;
          const int64_t offset = (o * split.dim + k) * inner;
          LoadAs(src + offset, row.data(), inner);
          for (int64_t i = 0; i < inner; ++i) {
            if (exclusive) result[i] = acc[i];
            acc[i] = static_cast<A>(acc[i] + row[i]);
            if (!exclusive) result[i] = acc[i];
          }
          StoreAs(result.data(), dst + offset, inner);
        }
      }
    });
    return Status::Ok();
  });
}

}  // namespace

void RegisterCumSumCpuKernels(KernelRegistry& registry) { registry.Register({"", "CumSum", DeviceKind::kCpu, CumSum}); }

}  // namespace onnx_amp
