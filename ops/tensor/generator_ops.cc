// Ops that create tensors from shapes and scalars: ConstantOfShape, Range, OneHot and
// EyeLike.
#include <cmath>
#include <cstring>
#include <string>

#include <onnx/onnx_pb.h>

#include "ops/common/dtype_dispatch.h"
#include "ops/tensor/strided_copy.h"
#include "ops/tensor/tensor_kernels.h"
#include "ops/tensor/tensor_util.h"

namespace onnx_amp {
namespace {

// Decodes the one-element TensorProto of ConstantOfShape's `value` into `value`.
Status DecodeScalarProto(const KernelContext& context, const onnx::TensorProto& proto, Tensor& value) {
  const std::optional<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype || !IsMovableDType(*dtype)) {
    return context.Error(ErrorCode::kUnsupported, "value has unsupported data type " +
                                                      std::to_string(proto.data_type()));
  }
  value = Tensor::Zeros(*dtype, {});
  const size_t width = DTypeSize(*dtype);
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != width) {
      return context.Error(ErrorCode::kInvalidModel, "value must hold exactly one element");
    }
    std::memcpy(value.raw_data(), proto.raw_data().data(), width);
    return Status::Ok();
  }
  // Typed fields: each holds the element in the field ONNX assigns to its dtype.
  auto store = [&](auto element) {
    std::memcpy(value.raw_data(), &element, width);
    return Status::Ok();
  };
  const bool one = proto.float_data_size() + proto.double_data_size() + proto.int32_data_size() +
                       proto.int64_data_size() + proto.uint64_data_size() == 1;
  if (!one) return context.Error(ErrorCode::kInvalidModel, "value must hold exactly one element");
  switch (*dtype) {
    case DType::kFloat32: return store(proto.float_data(0));
    case DType::kFloat64: return store(proto.double_data(0));
    case DType::kInt64: return store(proto.int64_data(0));
    case DType::kUInt32: return store(static_cast<uint32_t>(proto.uint64_data(0)));
    case DType::kUInt64: return store(proto.uint64_data(0));
    case DType::kInt32: return store(proto.int32_data(0));
    case DType::kInt8: return store(static_cast<int8_t>(proto.int32_data(0)));
    case DType::kInt16: return store(static_cast<int16_t>(proto.int32_data(0)));
    case DType::kUInt8:
    case DType::kBool: return store(static_cast<uint8_t>(proto.int32_data(0)));
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: return store(static_cast<uint16_t>(proto.int32_data(0)));
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: break;
  }
  return context.UnsupportedDType(*dtype);
}

}  // namespace

Status ConstantOfShapeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* shape_tensor, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Shape shape, ReadInt64List(context, *shape_tensor, "shape"));
  for (int64_t d : shape) {
    if (d < 0) return context.Error(ErrorCode::kInvalidModel, "shape " + ShapeToString(shape) + " has a negative dimension");
  }
  Tensor value = Tensor::Zeros(DType::kFloat32, {});
  if (const onnx::AttributeProto* attr = context.attribute("value")) {
    ONNX_AMP_RETURN_IF_ERROR(DecodeScalarProto(context, attr->t(), value));
  }
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, value.dtype(), shape));
  FillElements(DTypeSize(value.dtype()), out->raw_data(), out->num_elements(), value.raw_data());
  return Status::Ok();
}

Status RangeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* start_tensor, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* limit_tensor, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* delta_tensor, RequiredInput(context, 2));
  const DType dtype = start_tensor->dtype();
  if (limit_tensor->dtype() != dtype || delta_tensor->dtype() != dtype) {
    return context.Error(ErrorCode::kInvalidModel, "start, limit and delta must share one dtype");
  }
  return DispatchDType<kMaskNumeric>(context, dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ONNX_AMP_ASSIGN_OR_RETURN(const double start, ReadScalarAsDouble(context, *start_tensor, "start"));
    ONNX_AMP_ASSIGN_OR_RETURN(const double limit, ReadScalarAsDouble(context, *limit_tensor, "limit"));
    ONNX_AMP_ASSIGN_OR_RETURN(const double delta, ReadScalarAsDouble(context, *delta_tensor, "delta"));
    if (delta == 0) return context.Error(ErrorCode::kInvalidArgument, "delta is 0");
    const double steps = std::ceil((limit - start) / delta);
    if (!(steps < 1e12)) return context.Error(ErrorCode::kInvalidArgument, "range is too long");
    const int64_t count = steps > 0 ? static_cast<int64_t>(steps) : 0;
    ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype, {count}));
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_integral_v<T>) {
        out->data<T>()[i] = static_cast<T>(static_cast<int64_t>(start) + i * static_cast<int64_t>(delta));
      } else {
        ONNX_AMP_RETURN_IF_ERROR(StoreDouble(context, *out, i, start + static_cast<double>(i) * delta));
      }
    }
    return Status::Ok();
  });
}

Status OneHotKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* indices, RequiredInput(context, 0));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* depth_tensor, RequiredInput(context, 1));
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* values, RequiredInput(context, 2));
  ONNX_AMP_ASSIGN_OR_RETURN(const double depth_value, ReadScalarAsDouble(context, *depth_tensor, "depth"));
  if (!(depth_value >= 1 && depth_value < 1e12)) {
    return context.Error(ErrorCode::kInvalidArgument, "depth must be a positive count");
  }
  const int64_t depth = static_cast<int64_t>(depth_value);
  if (values->num_elements() != 2 || !IsMovableDType(values->dtype())) {
    return context.Error(ErrorCode::kInvalidModel, "values must hold [off_value, on_value]");
  }
  const int64_t out_rank = indices->rank() + 1;
  ONNX_AMP_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(context, context.attr_int("axis", -1), out_rank));
  Shape out_shape = indices->shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, values->dtype(), out_shape));
  const size_t width = DTypeSize(values->dtype());
  const char* off_on = static_cast<const char*>(values->raw_data());
  FillElements(width, out->raw_data(), out->num_elements(), off_on);
  int64_t inner = 1;
  for (int64_t k = axis; k < indices->rank(); ++k) inner *= indices->dim(k);
  ONNX_AMP_ASSIGN_OR_RETURN(const std::vector<double> index_values, ReadAllAsDoubles(context, *indices));
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t i = 0; i < indices->num_elements(); ++i) {
    const double raw = index_values[i];
    if (!(std::fabs(raw) < 1e18)) continue;  // NaN or beyond any axis: all off
    int64_t index = static_cast<int64_t>(raw);
    if (index < 0) index += depth;
    if (index < 0 || index >= depth) continue;  // out-of-range indices give an all-off row
    const int64_t o = i / inner;
    const int64_t r = i % inner;
    std::memcpy(dst + ((o * depth + index) * inner + r) * width, off_on + width, width);
  }
  return Status::Ok();
}

Status EyeLikeKernel(KernelContext& context) {
  ONNX_AMP_ASSIGN_OR_RETURN(const Tensor* like, RequiredInput(context, 0));
  if (like->rank() != 2) {
    return context.Error(ErrorCode::kInvalidModel, "input must be 2-D, got " + ShapeToString(like->shape()));
  }
  DType dtype = like->dtype();
  if (context.has_attribute("dtype")) {
    const std::optional<DType> requested = DTypeFromOnnx(static_cast<int32_t>(context.attr_int("dtype", 0)));
    if (!requested) return context.Error(ErrorCode::kUnsupported, "unknown dtype attribute");
    dtype = *requested;
  }
  if (!IsMovableDType(dtype) || dtype == DType::kComplex64) return context.UnsupportedDType(dtype);
  const int64_t k = context.attr_int("k", 0);
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype, like->shape()));
  if (out->bytes() > 0) std::memset(out->raw_data(), 0, out->bytes());
  const int64_t rows = like->dim(0);
  const int64_t cols = like->dim(1);
  for (int64_t r = std::max<int64_t>(0, -k); r < rows && r + k < cols; ++r) {
    ONNX_AMP_RETURN_IF_ERROR(StoreDouble(context, *out, r * cols + r + k, 1.0));
  }
  return Status::Ok();
}

}  // namespace onnx_amp
