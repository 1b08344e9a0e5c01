// ScatterElements, Scatter (its opset-9 name) and ScatterND, with the reductions of
// opsets 16 (add, mul) and 18 (max, min). Updates apply in index order, so duplicate
// indices accumulate as the ONNX reference does; float16/bfloat16 combine in float32
// and round once per update.
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/common/dtype_dispatch.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Expected<Reduction> ParseReduction(const KernelContext& context) {
  const std::string name = context.attr_string("reduction", "none");
  if (name == "none") return Reduction::kNone;
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  return context.Error(ErrorCode::kInvalidModel, "unknown reduction '" + name + "'");
}

template <typename V>
V Combine(V current, V update, Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: return update;
    case Reduction::kAdd: return current + update;
    case Reduction::kMul: return current * update;
    case Reduction::kMax: return std::max(current, update);
    case Reduction::kMin: return std::min(current, update);
  }
  return update;
}

// dst[dst_offsets[g] + i] (op)= updates[g * block + i] for every group g, i < block.
Status ApplyUpdates(const KernelContext& context, Tensor& out, const Tensor& updates,
                    const std::vector<int64_t>& dst_offsets, int64_t block, Reduction reduction) {
  if (reduction == Reduction::kNone) {
    return DispatchElementWidth(context, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      const T* src = updates.data<T>();
      for (size_t g = 0; g < dst_offsets.size(); ++g) {
        std::memcpy(dst + dst_offsets[g], src + g * block, static_cast<size_t>(block) * sizeof(T));
      }
      return Status::Ok();
    });
  }
  return DispatchDType<kMaskNumeric>(context, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    const T* src = updates.data<T>();
    for (size_t g = 0; g < dst_offsets.size(); ++g) {
      for (int64_t i = 0; i < block; ++i) {
        T& d = dst[dst_offsets[g] + i];
        const T u = src[g * block + i];
        if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
          d = T::FromFloat(Combine(d.ToFloat(), u.ToFloat(), reduction));
        } else {
          d = Combine(d, u, reduction);
        }
      }
    }
    return Status::Ok();
  });
}

// Output 0 as a copy of data (its dtype checked against updates).
Expected<Tensor*> CopyDataToOutput(KernelContext& context, const Tensor& data, const Tensor& updates) {
  if (updates.dtype() != data.dtype()) {
    return context.Error(ErrorCode::kInvalidModel, "updates are " + std::string(DTypeName(updates.dtype())) +
                                                       " but data is " + std::string(DTypeName(data.dtype())));
  }
  if (!IsMovableDType(data.dtype())) return context.UnsupportedDType(data.dtype());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data.dtype(), data.shape()));
  if (data.bytes() > 0) std::memcpy(out->raw_data(), data.raw_data(), data.bytes());
  return out;
}

}  // namespace

Status ScatterElementsKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* updates, RequiredInput(context, 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const Reduction reduction, ParseReduction(context));
  const int64_t rank = data->rank();
  if (rank == 0 || indices->shape() != updates->shape() || indices->rank() != rank) {
    return context.Error(ErrorCode::kInvalidModel, "data " + ShapeToString(data->shape()) + ", indices " +
                                                       ShapeToString(indices->shape()) + " and updates " +
                                                       ShapeToString(updates->shape()) + " do not match");
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(context, context.attr_int("axis", 0), rank));
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis && indices->dim(k) > data->dim(k)) {
      return context.Error(ErrorCode::kInvalidModel, "indices " + ShapeToString(indices->shape()) +
                                                         " exceed data " + ShapeToString(data->shape()));
    }
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> index,
                            ReadInt64List(context, indices->Reshaped({indices->num_elements()}), "indices"));
  const std::vector<int64_t> strides = ContiguousStrides(data->shape());
  const int64_t dim = data->dim(axis);
  std::vector<int64_t> offsets(index.size());
  std::vector<int64_t> position(rank, 0);
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t v = index[i];
    if (v < -dim || v >= dim) {
      return context.Error(ErrorCode::kInvalidArgument, "index " + std::to_string(v) + " is out of range [" +
                                                            std::to_string(-dim) + ", " + std::to_string(dim) + ")");
    }
    if (v < 0) v += dim;
    int64_t offset = 0;
    for (int64_t k = 0; k < rank; ++k) offset += (k == axis ? v : position[k]) * strides[k];
    offsets[i] = offset;
    for (int64_t k = rank - 1; k >= 0 && ++position[k] == indices->dim(k); --k) position[k] = 0;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, CopyDataToOutput(context, *data, *updates));
  return ApplyUpdates(context, *out, *updates, offsets, 1, reduction);
}

Status ScatterNDKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* updates, RequiredInput(context, 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const Reduction reduction, ParseReduction(context));
  if (indices->rank() < 1) return context.Error(ErrorCode::kInvalidModel, "indices must have rank >= 1");
  const int64_t depth = indices->dim(indices->rank() - 1);
  if (depth > data->rank()) {
    return context.Error(ErrorCode::kInvalidModel, "index tuples of length " + std::to_string(depth) +
                                                       " exceed data rank " + std::to_string(data->rank()));
  }
  Shape expected(indices->shape().begin(), indices->shape().end() - 1);
  expected.insert(expected.end(), data->shape().begin() + depth, data->shape().end());
  if (updates->shape() != expected) {
    return context.Error(ErrorCode::kInvalidModel, "updates have shape " + ShapeToString(updates->shape()) +
                                                       ", expected " + ShapeToString(expected));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> index,
                            ReadInt64List(context, indices->Reshaped({indices->num_elements()}), "indices"));
  const std::vector<int64_t> strides = ContiguousStrides(data->shape());
  int64_t block = 1;
  for (int64_t k = depth; k < data->rank(); ++k) block *= data->dim(k);
  const int64_t tuples = NumElements(Shape(indices->shape().begin(), indices->shape().end() - 1));
  std::vector<int64_t> offsets(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t k = 0; k < depth; ++k) {
      int64_t v = index[t * depth + k];
      if (v < -data->dim(k) || v >= data->dim(k)) {
        return context.Error(ErrorCode::kInvalidArgument, "index " + std::to_string(v) + " is out of range for axis " +
                                                              std::to_string(k) + " of size " +
                                                              std::to_string(data->dim(k)));
      }
      if (v < 0) v += data->dim(k);
      offset += v * strides[k];
    }
    offsets[t] = offset;
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, CopyDataToOutput(context, *data, *updates));
  return ApplyUpdates(context, *out, *updates, offsets, block, reduction);
}

}  // namespace onnx_amp
