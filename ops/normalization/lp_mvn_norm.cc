// LpNormalization (x / ||x||_p along one axis, p = 1 or 2) and
// MeanVarianceNormalization ((x - mean) / (std + 1e-9) over `axes`, default [0, 2, 3],
// with std = sqrt(E[x^2] - E[x]^2) as the ONNX function body defines it).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/normalization/normalization_kernels.h"

namespace onnx_amp {
namespace {

template <typename T>
void RunLpNorm(const Tensor& x, int64_t outer, int64_t count, int64_t inner, int64_t p, Tensor& y) {
  using Acc = ComputeType<T>;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (int64_t line = 0; line < outer * inner; ++line) {
    const int64_t base = (line / inner) * count * inner + line % inner;
    Acc norm = 0;
    for (int64_t i = 0; i < count; ++i) {
      const Acc v = LoadValue(in[base + i * inner]);
      norm += p == 1 ? std::abs(v) : v * v;
    }
    if (p == 2) norm = std::sqrt(norm);
    for (int64_t i = 0; i < count; ++i) {
      const Acc v = LoadValue(in[base + i * inner]);
      out[base + i * inner] = StoreValue<T>(norm == 0 ? Acc(0) : v / norm);
    }
  }
}

template <typename T>
void RunMvn(const Tensor& x, const std::vector<bool>& reduced, Tensor& y) {
  using Acc = ComputeType<T>;
  const int64_t rank = x.rank(), total = x.num_elements();
  // Each element's group: its index with the reduced dims dropped.
  std::vector<int64_t> group_of(static_cast<size_t>(total));
  int64_t groups = 1;
  for (int64_t d = 0; d < rank; ++d) groups *= reduced[d] ? 1 : x.dim(d);
  for (int64_t e = 0; e < total; ++e) {
    int64_t rest = e, group = 0, scale = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t index = rest % x.dim(d);
      rest /= x.dim(d);
      if (!reduced[d]) group += index * scale, scale *= x.dim(d);
    }
    group_of[e] = group;
  }
  const T* in = x.data<T>();
  std::vector<Acc> sum(static_cast<size_t>(groups), 0), sum_squares(static_cast<size_t>(groups), 0);
  for (int64_t e = 0; e < total; ++e) {
    const Acc v = LoadValue(in[e]);
    sum[group_of[e]] += v;
    sum_squares[group_of[e]] += v * v;
  }
  const Acc count = static_cast<Acc>(groups == 0 ? 1 : total / groups);
  T* out = y.data<T>();
  for (int64_t e = 0; e < total; ++e) {
    const int64_t g = group_of[e];
    const Acc mean = sum[g] / count;
    const Acc variance = std::max(sum_squares[g] / count - mean * mean, Acc(0));
    out[e] = StoreValue<T>((LoadValue(in[e]) - mean) / (std::sqrt(variance) + static_cast<Acc>(1e-9)));
  }
}

}  // namespace

Status LpNormalizationCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr || x->rank() == 0) return context.Error(ErrorCode::kInvalidModel, "X is absent or a scalar");
  int64_t axis = context.attr_int("axis", -1);
  if (axis < 0) axis += x->rank();
  if (axis < 0 || axis >= x->rank()) return context.Error(ErrorCode::kInvalidModel, "axis out of range");
  const int64_t p = context.attr_int("p", 2);
  if (p != 1 && p != 2) return context.Error(ErrorCode::kInvalidModel, "p must be 1 or 2");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x->rank(); ++i) {
    if (i < axis) outer *= x->dim(i);
    if (i > axis) inner *= x->dim(i);
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    RunLpNorm<decltype(tag)>(*x, outer, x->dim(axis), inner, p, *y);
    return Status::Ok();
  });
}

Status MeanVarianceNormalizationCpu(KernelContext& context) {
  const Tensor* x = context.input(0);
  if (x == nullptr) return context.Error(ErrorCode::kInvalidModel, "X is absent");
  std::vector<int64_t> axes = context.has_attribute("axes") ? context.attr_ints("axes") : std::vector<int64_t>{0, 2, 3};
  std::vector<bool> reduced(static_cast<size_t>(x->rank()), false);
  for (int64_t axis : axes) {
    if (axis < 0) axis += x->rank();
    if (axis < 0 || axis >= x->rank()) return context.Error(ErrorCode::kInvalidModel, "axes out of range");
    reduced[axis] = true;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x->dtype(), x->shape()));
  return DispatchFloat(context, x->dtype(), [&](auto tag) {
    RunMvn<decltype(tag)>(*x, reduced, *y);
    return Status::Ok();
  });
}

}  // namespace onnx_amp
