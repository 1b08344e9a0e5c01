// Gather, GatherElements and GatherND. Every index is checked against its axis before
// anything is copied; negative indices count from the end.
#include <algorithm>
#include <cstring>
#include <string>

#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"
#include "runtime/exec/thread_pool.h"

namespace onnx_amp {
namespace {

constexpr int64_t kBytesPerTask = 64 * 1024;

// Indices as int64 with negatives resolved; an error names the first bad index.
Expected<std::vector<int64_t>> ResolveIndices(const KernelContext& context, const Tensor& indices, int64_t dim,
                                              std::string_view what) {
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32) {
    return context.Error(ErrorCode::kInvalidModel, std::string(what) + " must be int64 or int32, got " +
                                                       std::string(DTypeName(indices.dtype())));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> values, ReadInt64List(context, indices.Reshaped({indices.num_elements()}), what));
  for (int64_t& v : values) {
    if (v < -dim || v >= dim) {
      return context.Error(ErrorCode::kInvalidArgument, std::string(what) + " value " + std::to_string(v) +
                                                            " is out of range [" + std::to_string(-dim) + ", " +
                                                            std::to_string(dim) + ")");
    }
    if (v < 0) v += dim;
  }
  return values;
}

}  // namespace

Status GatherKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 1));
  if (data->rank() == 0) return context.Error(ErrorCode::kInvalidModel, "cannot gather from a scalar");
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(context, context.attr_int("axis", 0), data->rank()));
  const int64_t dim = data->dim(axis);
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> index, ResolveIndices(context, *indices, dim, "index"));
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());

  Shape out_shape(data->shape().begin(), data->shape().begin() + axis);
  out_shape.insert(out_shape.end(), indices->shape().begin(), indices->shape().end());
  out_shape.insert(out_shape.end(), data->shape().begin() + axis + 1, data->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));

  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= data->dim(k);
  const size_t block = static_cast<size_t>(data->num_elements() / std::max<int64_t>(1, outer * dim)) *
                       DTypeSize(data->dtype());
  if (block == 0 || out->num_elements() == 0) return Status::Ok();
  const int64_t count = static_cast<int64_t>(index.size());
  const char* src = static_cast<const char*>(data->raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  const int64_t grain = std::max<int64_t>(1, kBytesPerTask / static_cast<int64_t>(block));
  context.threads().ParallelFor(outer * count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t o = i / count;
      std::memcpy(dst + i * block, src + (o * dim + index[i % count]) * block, block);
    }
  });
  return Status::Ok();
}

Status GatherElementsKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 1));
  if (data->rank() == 0 || indices->rank() != data->rank()) {
    return context.Error(ErrorCode::kInvalidModel, "data " + ShapeToString(data->shape()) + " and indices " +
                                                       ShapeToString(indices->shape()) + " must have the same rank >= 1");
  }
  const int64_t rank = data->rank();
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(context, context.attr_int("axis", 0), rank));
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis && indices->dim(k) > data->dim(k)) {
      return context.Error(ErrorCode::kInvalidModel, "indices " + ShapeToString(indices->shape()) +
                                                         " exceed data " + ShapeToString(data->shape()) +
                                                         " on axis " + std::to_string(k));
    }
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<int64_t> index,
                            ResolveIndices(context, *indices, data->dim(axis), "index"));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), indices->shape()));
  const std::vector<int64_t> data_strides = ContiguousStrides(data->shape());
  return DispatchElementWidth(context, data->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = data->data<T>();
    T* dst = out->data<T>();
    std::vector<int64_t> position(rank, 0);
    for (size_t i = 0; i < index.size(); ++i) {
      int64_t offset = 0;
      for (int64_t k = 0; k < rank; ++k) offset += (k == axis ? index[i] : position[k]) * data_strides[k];
      dst[i] = src[offset];
      for (int64_t k = rank - 1; k >= 0 && ++position[k] == indices->dim(k); --k) position[k] = 0;
    }
    return Status::Ok();
  });
}

Status GatherNDKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* data, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 1));
  const int64_t batch_dims = context.attr_int("batch_dims", 0);
  if (indices->rank() < 1 || batch_dims < 0 || batch_dims >= std::min(data->rank(), indices->rank())) {
    return context.Error(ErrorCode::kInvalidModel, "batch_dims " + std::to_string(batch_dims) +
                                                       " is invalid for data " + ShapeToString(data->shape()) +
                                                       " and indices " + ShapeToString(indices->shape()));
  }
  const int64_t depth = indices->dim(indices->rank() - 1);
  if (batch_dims + depth > data->rank()) {
    return context.Error(ErrorCode::kInvalidModel, "index tuples of length " + std::to_string(depth) +
                                                       " exceed data rank " + std::to_string(data->rank()));
  }
  int64_t batches = 1;
  for (int64_t k = 0; k < batch_dims; ++k) {
    if (indices->dim(k) != data->dim(k)) {
      return context.Error(ErrorCode::kInvalidModel, "batch dimension " + std::to_string(k) + " differs");
    }
    batches *= data->dim(k);
  }
  if (!IsMovableDType(data->dtype())) return context.UnsupportedDType(data->dtype());
  Shape out_shape(indices->shape().begin(), indices->shape().end() - 1);
  out_shape.insert(out_shape.end(), data->shape().begin() + batch_dims + depth, data->shape().end());
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, data->dtype(), out_shape));

  ONNX_AMP_ASSIGN_OR_RETURN(std::vector<int64_t> index,
                            ReadInt64List(context, indices->Reshaped({indices->num_elements()}), "indices"));
  const std::vector<int64_t> data_strides = ContiguousStrides(data->shape());
  int64_t slice = 1;
  for (int64_t k = batch_dims + depth; k < data->rank(); ++k) slice *= data->dim(k);
  const int64_t batch_stride = batch_dims > 0 ? data_strides[batch_dims - 1] : data->num_elements();
  const int64_t tuples = NumElements(Shape(indices->shape().begin(), indices->shape().end() - 1));
  const int64_t tuples_per_batch = batches > 0 ? tuples / batches : 0;
  // Resolve each tuple to an element offset first, so nothing is copied on a bad index.
  std::vector<int64_t> offsets(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (tuples_per_batch > 0 ? t / tuples_per_batch : 0) * batch_stride;
    for (int64_t j = 0; j < depth; ++j) {
      const int64_t axis = batch_dims + j;
      int64_t v = index[t * depth + j];
      if (v < -data->dim(axis) || v >= data->dim(axis)) {
        return context.Error(ErrorCode::kInvalidArgument, "index " + std::to_string(v) + " is out of range for axis " +
                                                              std::to_string(axis) + " of size " +
                                                              std::to_string(data->dim(axis)));
      }
      if (v < 0) v += data->dim(axis);
      offset += v * data_strides[axis];
    }
    offsets[t] = offset;
  }
  const size_t block = static_cast<size_t>(slice) * DTypeSize(data->dtype());
  if (block == 0) return Status::Ok();
  const char* src = static_cast<const char*>(data->raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  const size_t width = DTypeSize(data->dtype());
  context.threads().ParallelFor(tuples, std::max<int64_t>(1, kBytesPerTask / static_cast<int64_t>(block)),
                                [&](int64_t begin, int64_t end) {
                                  for (int64_t t = begin; t < end; ++t) {
                                    std::memcpy(dst + t * block, src + offsets[t] * width, block);
                                  }
                                });
  return Status::Ok();
}

}  // namespace onnx_amp
