// TopK: the k largest (or smallest) values along an axis and their int64 indices,
// sorted, equal values ordered by lower index. NaN counts as larger than any number.
// k is an attribute before opset 10 and an input from opset 10 on.
#include <algorithm>
#include <cmath>
#include <utility>
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

template <typename C>
bool Greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

Expected<int64_t> ReadK(const KernelContext& context) {
  if (context.opset() < 10) return context.attr_int("k", -1);
  const Tensor* k = context.input(1);
  if (k == nullptr || k->dtype() != DType::kInt64 || k->num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "K must be an int64 tensor with one element");
  }
  return k->data<int64_t>()[0];
}

Status TopK(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "input 0 is missing");
  ONNX_AMP_ASSIGN_OR_RETURN(int64_t k, ReadK(context));
  ONNX_AMP_ASSIGN_OR_RETURN(AxisSplit split, SplitAtAxis(context, x->shape(), context.attr_int("axis", -1)));
  if (k < 0 || k > split.dim) {
    return context.Error(ErrorCode::kInvalidModel,
                         "K = " + std::to_string(k) + " is outside [0, " + std::to_string(split.dim) + "]");
  }
  const bool largest = context.attr_int("largest", 1) != 0;
  Shape shape = x->shape();
  shape[split.axis] = k;
  return DispatchDType<kMaskNumeric>(context, x->dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* values, context.AllocateOutput(0, x->dtype(), shape));
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor* indices, context.AllocateOutput(1, DType::kInt64, shape));
    const T* src = x->data<T>();
    T* out_values = values->data<T>();
    int64_t* out_indices = indices->data<int64_t>();
    const int64_t inner = split.inner;
    const int64_t grain = ItemsPerChunk(split.dim, kReduceGrain);
    context.threads().ParallelFor(split.outer * inner, grain, [&](int64_t begin, int64_t end) {
      std::vector<std::pair<C, int64_t>> items(split.dim);
      std::vector<C> line(inner == 1 ? split.dim : 0);  // a contiguous line, converted whole
      auto before = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
        const bool ahead = largest ? Greater(a.first, b.first) : Greater(b.first, a.first);
        const bool behind = largest ? Greater(b.first, a.first) : Greater(a.first, b.first);
        return ahead || (!behind && a.second < b.second);
      };
      for (int64_t m = begin; m < end; ++m) {
        const int64_t o = m / inner;
        const int64_t i = m % inner;
        const T* base = src + o * split.dim * inner + i;
        if (inner == 1) {
          LoadAs(base, line.data(), split.dim);
          for (int64_t j = 0; j < split.dim; ++j) items[j] = {line[j], j};
        } else {
          for (int64_t j = 0; j < split.dim; ++j) {
            C value;
            LoadAs(base + j * inner, &value, 1);
            items[j] = {value, j};
          }
        }
        std::partial_sort(items.begin(), items.begin() + k, items.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          out_values[at] = base[items[j].second * inner];
          out_indices[at] = items[j].second;
        }
      }
    });
    return Status::Ok();
  });
}

}  // namespace

void RegisterTopKCpuKernels(KernelRegistry& registry) { registry.Register({"", "TopK", DeviceKind::kCpu, TopK}); }

}  // namespace onnx_amp
