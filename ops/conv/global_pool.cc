// GlobalAveragePool, GlobalMaxPool and GlobalLpPool: one value per (n, c) plane over
// all spatial dims, kept as size-1 dims. Sums accumulate in float32 (float64 for
// float64) and each output is rounded once.
#include <cmath>
#include <limits>

#include "ops/common/float_compute.h"
#include "ops/conv/conv_kernels.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

enum class GlobalKind { kAverage, kMax, kLp };

template <typename T>
void RunGlobalPool(KernelContext& context, const Tensor& x, GlobalKind kind, int64_t p, Tensor& y) {
  using Acc = ComputeType<T>;
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_size = planes == 0 ? 0 : x.num_elements() / planes;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  context.threads().ParallelFor(planes, ItemsPerChunk(plane_size, 1 << 14), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* values = in + plane * plane_size;
      Acc result = 0;
      switch (kind) {
        case GlobalKind::kAverage: {
          for (int64_t i = 0; i < plane_size; ++i) result += LoadValue(values[i]);
          result /= static_cast<Acc>(plane_size);
          break;
        }
        case GlobalKind::kMax: {
          result = -std::numeric_limits<Acc>::infinity();
          for (int64_t i = 0; i < plane_size; ++i) {
            const Acc value = LoadValue(values[i]);
            if (value > result || std::isnan(value)) result = value;
            if (std::isnan(result)) break;
          }
          break;
        }
        case GlobalKind::kLp: {
          for (int64_t i = 0; i < plane_size; ++i) result += std::pow(std::abs(LoadValue(values[i])), static_cast<Acc>(p));
          result = std::pow(result, Acc(1) / static_cast<Acc>(p));
          break;
        }
      }
      out[plane] = StoreValue<T>(result);
    }
  });
}

Status GlobalPool(KernelContext& context, GlobalKind kind) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "the pool needs input X");
  if (x->rank() < 2) return context.Error(ErrorCode::kInvalidModel, "X must be [N, C, ...], is " + ShapeToString(x->shape()));
  Shape y_shape(x->shape().size(), 1);
  y_shape[0] = x->dim(0);
  y_shape[1] = x->dim(1);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), y_shape));
  const int64_t p = context.attr_int("p", 2);
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    RunGlobalPool<decltype(tag)>(context, *x, kind, p, *y);
    return Status::Ok();
  });
}

}  // namespace

Status GlobalAveragePoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kAverage); }
Status GlobalMaxPoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kMax); }
Status GlobalLpPoolCpu(KernelContext& context) { return GlobalPool(context, GlobalKind::kLp); }

}  // namespace onnx_amp
