#include "ops/tensor/tensor_util.h"

#include <string>

#include "ops/common/dtype_dispatch.h"

namespace onnx_amp {
namespace {

template <typename T>
double ToDouble(T value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return value.ToFloat();
  } else {
    return static_cast<double>(value);
  }
}

template <typename T>
T FromDouble(double value) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T::FromFloat(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else {
    return static_cast<T>(value);
  }
}

Status CheckVector(const KernelContext& context, const Tensor& tensor, std::string_view what) {
  if (tensor.rank() > 1) {
    return context.Error(ErrorCode::kInvalidModel, std::string(what) + " must be 1-D, got shape " +
                                                       ShapeToString(tensor.shape()));
  }
  return Status::Ok();
}

}  // namespace

bool IsMovableDType(DType dtype) {
  const size_t size = DTypeSize(dtype);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

Expected<std::vector<int64_t>> ReadInt64List(const KernelContext& context, const Tensor& tensor,
                                             std::string_view what) {
  ONNX_AMP_RETURN_IF_ERROR(CheckVector(context, tensor, what));
  const int64_t count = tensor.num_elements();
  std::vector<int64_t> values(count);
  switch (tensor.dtype()) {
    case DType::kInt64:
      for (int64_t i = 0; i < count; ++i) values[i] = tensor.data<int64_t>()[i];
      return values;
    case DType::kInt32:
      for (int64_t i = 0; i < count; ++i) values[i] = tensor.data<int32_t>()[i];
      return values;
    default:
      return context.Error(ErrorCode::kInvalidModel, std::string(what) + " must be int64 or int32, got " +
                                                         std::string(DTypeName(tensor.dtype())));
  }
}

Expected<std::vector<double>> ReadFloatList(const KernelContext& context, const Tensor& tensor,
                                            std::string_view what) {
  ONNX_AMP_RETURN_IF_ERROR(CheckVector(context, tensor, what));
  if (!IsFloatingPoint(tensor.dtype())) {
    return context.Error(ErrorCode::kInvalidModel,
                         std::string(what) + " must be floating point, got " + std::string(DTypeName(tensor.dtype())));
  }
  std::vector<double> values(tensor.num_elements());
  Status status = DispatchDType<kMaskFloats>(context, tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) values[i] = ToDouble(tensor.data<T>()[i]);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return values;
}

Expected<std::vector<double>> ReadAllAsDoubles(const KernelContext& context, const Tensor& tensor) {
  std::vector<double> values(tensor.num_elements());
  Status status = DispatchDType<kMaskAll>(context, tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) values[i] = ToDouble(tensor.data<T>()[i]);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return values;
}

Expected<double> ReadScalarAsDouble(const KernelContext& context, const Tensor& tensor, std::string_view what) {
  if (tensor.num_elements() != 1) {
    return context.Error(ErrorCode::kInvalidModel, std::string(what) + " must hold one element, got shape " +
                                                       ShapeToString(tensor.shape()));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<double> values, ReadAllAsDoubles(context, tensor));
  return values[0];
}

Expected<int64_t> NormalizeAxis(const KernelContext& context, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return context.Error(ErrorCode::kInvalidModel,
                         "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Expected<std::vector<int64_t>> NormalizeAxes(const KernelContext& context, const std::vector<int64_t>& axes,
                                             int64_t rank) {
  std::vector<int64_t> normalized;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    ONNX_AMP_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(context, axis, rank));
    if (seen[a]) return context.Error(ErrorCode::kInvalidModel, "axis " + std::to_string(axis) + " is repeated");
    seen[a] = true;
    normalized.push_back(a);
  }
  return normalized;
}

Expected<const Tensor*> RequiredInput(const KernelContext& context, int index) {
  const Tensor* tensor = context.input(index);
  if (tensor == nullptr) {
    return context.Error(ErrorCode::kInvalidModel, "required input " + std::to_string(index) + " is missing");
  }
  return tensor;
}

Status StoreDouble(const KernelContext& context, Tensor& tensor, int64_t index, double value) {
  return DispatchDType<kMaskAll>(context, tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    tensor.data<T>()[index] = FromDouble<T>(value);
    return Status::Ok();
  });
}

}  // namespace onnx_amp
