// ArgMax and ArgMin along one axis (keepdims, select_last_index); int64 indices.
#include "ops/common/block_io.h"
#include "ops/common/dtype_dispatch.h"
#include "ops/kernel_registry.h"
#include "ops/reduction/axis_split.h"
#include "ops/reduction/reduce_driver.h"
#include "ops/reduction/reduction_families.h"

namespace onnx_amp {
namespace {

template <typename T>
ComputeType<T> Widen(T value) {
  if constexpr (kIsLowPrecision<T>) return value.ToFloat();
  else return value;
}

template <bool kMax>
Status ArgReduce(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input 0 is missing");
  ONNX_AMP_ASSIGN_OR_RETURN(AxisSplit split, SplitAtAxis(context, x->shape(), context.attr_int("axis", 0)));
  if (split.dim == 0) return context.Error(ErrorCode::kInvalidModel, "cannot reduce an empty axis");
  const bool keepdims = context.attr_int("keepdims", 1) != 0;
  const bool last = context.attr_int("select_last_index", 0) != 0;
  Shape shape = x->shape();
  if (keepdims) shape[split.axis] = 1;
  else shape.erase(shape.begin() + split.axis);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor* y, context.AllocateOutput(0, DType::kInt64, shape));
  return DispatchDType<kMaskNumeric>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T* data = x->data<T>();
    int64_t* out = y->data<int64_t>();
    const int64_t grain = std::max<int64_t>(1, kReduceGrain / split.dim);
    context.threads().ParallelFor(split.outer * split.inner, grain, [&](int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m) {
        const T* base = data + (m / split.inner) * split.dim * split.inner + m % split.inner;
        auto best = Widen(base[0]);
        int64_t best_index = 0;
        for (int64_t k = 1; k < split.dim; ++k) {
          const auto v = Widen(base[k * split.inner]);
          const bool better = kMax ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
          if (better) {
            best = v;
            best_index = k;
          }
        }
        out[m] = best_index;
      }
    });
    return Status::Ok();
  });
}

}  // namespace

void RegisterArgReduceCpuKernels(KernelRegistry& registry) {
  registry.Register({"", "ArgMax", DeviceKind::kCpu, ArgReduce<true>});
  registry.Register({"", "ArgMin", DeviceKind::kCpu, ArgReduce<false>});
}

}  // namespace onnx_amp
