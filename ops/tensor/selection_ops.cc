// Ops whose output size depends on the data: NonZero, Compress and Unique.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "ops/common/dtype_dispatch.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

template <typename T>
auto Comparable(T value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return value.ToFloat();
  } else {
    return value;
  }
}

// Output `output` = data with only the slices `picked` (in that order) along `axis`.
Status CopySlices(KernelContext& context, int output, const Tensor& data, int64_t axis,
                  const std::vector<int64_t>& picked) {
  Shape out_shape = data.shape();
  out_shape[axis] = static_cast<int64_t>(picked.size());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(output, data.dtype(), out_shape));
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data.dim(k);
  int64_t inner = 1;
  for (int64_t k = axis + 1; k < data.rank(); ++k) inner *= data.dim(k);
  const size_t block = static_cast<size_t>(inner) * DTypeSize(data.dtype());
  const char* src = static_cast<const char*>(data.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  const int64_t dim = data.dim(axis);
  const int64_t count = static_cast<int64_t>(picked.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      std::memcpy(dst + (o * count + j) * block, src + (o * dim + picked[j]) * block, block);
    }
  }
  return Status::Ok();
}

Status WriteInt64Output(KernelContext& context, int output, const std::vector<int64_t>& values) {
  if (output >= context.num_outputs() || !context.output_used(output)) return Status::Ok();
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out,
                            context.AllocateOutput(output, DType::kInt64, {static_cast<int64_t>(values.size())}));
  std::copy(values.begin(), values.end(), out->data<int64_t>());
  return Status::Ok();
}

}  // namespace

Status NonZeroKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<double> values, ReadAllAsDoubles(context, *data));
  std::vector<int64_t> hits;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != 0.0) hits.push_back(static_cast<int64_t>(i));  // NaN counts as non-zero
  }
  const int64_t rank = data->rank();
  const int64_t count = static_cast<int64_t>(hits.size());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kInt64, {rank, count}));
  int64_t* dst = out->data<int64_t>();
  for (int64_t n = 0; n < count; ++n) {
    int64_t rest = hits[n];
    for (int64_t k = rank - 1; k >= 0; --k) {
      dst[k * count + n] = rest % data->dim(k);
      rest /= data->dim(k);
    }
  }
  return Status::Ok();
}

Status CompressKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* condition, RequiredInput(context, 1));
  if (condition->dtype() != DType::kBool || condition->rank() != 1) {
    return context.Error(ErrorCode::kInvalidModel, "condition must be a 1-D bool tensor");
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  const bool flatten = !context.has_attribute("axis");
  const Tensor source = flatten ? data->Reshaped({data->num_elements()}) : *data;
  int64_t axis = 0;
  if (!flatten) {
    ONNX_AMP_ASSIGN_OR_RETURN(axis, NormalizeAxis(context, context.attr_int("axis", 0), data->rank()));
  }
  if (condition->num_elements() > source.dim(axis)) {
    return context.Error(ErrorCode::kInvalidModel, "condition has " + std::to_string(condition->num_elements()) +
                                                       " entries for an axis of size " +
                                                       std::to_string(source.dim(axis)));
  }
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < condition->num_elements(); ++i) {
    if (condition->data<bool>()[i]) picked.push_back(i);
  }
  return CopySlices(context, 0, source, axis, picked);
}

Status UniqueKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  const bool flatten = !context.has_attribute("axis");
  const Tensor source = flatten ? data->Reshaped({data->num_elements()}) : *data;
  int64_t axis = 0;
  if (!flatten) {
    ONNX_AMP_ASSIGN_OR_RETURN(axis, NormalizeAxis(context, context.attr_int("axis", 0), data->rank()));
  }
  const bool sorted = context.attr_int("sorted", 1) != 0;
  const int64_t dim = source.dim(axis);
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= source.dim(k);
  int64_t inner = 1;
  for (int64_t k = axis + 1; k < source.rank(); ++k) inner *= source.dim(k);

  // order: slice indices sorted by value, ties by position (so each group starts with
  // its first occurrence); group_of: the group each position belongs to.
  std::vector<int64_t> order(dim);
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> group_start;
  ONNX_AMP_RETURN_IF_ERROR(DispatchDType<kMaskAll>(context, source.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = source.data<T>();
    // -1, 0, 1 as slice a sorts before, equal to, after slice b.
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const auto x = Comparable(v[(o * dim + a) * inner + i]);
          const auto y = Comparable(v[(o * dim + b) * inner + i]);
          if (x < y) return -1;
          if (y < x) return 1;
        }
      }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    for (int64_t n = 0; n < dim; ++n) {
      if (n == 0 || compare(order[n - 1], order[n]) != 0) group_start.push_back(n);
    }
    return Status::Ok();
  }));
  const int64_t groups = static_cast<int64_t>(group_start.size());
  std::vector<int64_t> group_rank(groups);  // output position of each group
  std::iota(group_rank.begin(), group_rank.end(), 0);
  if (!sorted) {
    std::sort(group_rank.begin(), group_rank.end(),
              [&](int64_t a, int64_t b) { return order[group_start[a]] < order[group_start[b]]; });
    std::vector<int64_t> position(groups);
    for (int64_t p = 0; p < groups; ++p) position[group_rank[p]] = p;
    group_rank = std::move(position);
  }
  std::vector<int64_t> first(groups), counts(groups), inverse(dim);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = group_start[g];
    const int64_t end = g + 1 < groups ? group_start[g + 1] : dim;
    first[group_rank[g]] = order[begin];
    counts[group_rank[g]] = end - begin;
    for (int64_t n = begin; n < end; ++n) inverse[order[n]] = group_rank[g];
  }
  ONNX_AMP_RETURN_IF_ERROR(CopySlices(context, 0, source, axis, first));
  ONNX_AMP_RETURN_IF_ERROR(WriteInt64Output(context, 1, first));
  ONNX_AMP_RETURN_IF_ERROR(WriteInt64Output(context, 2, inverse));
  return WriteInt64Output(context, 3, counts);
}

}  // namespace onnx_amp
