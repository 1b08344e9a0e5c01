#include "runtime/io/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <optional>
#include <string>

#include "runtime/core/limits.h"
#include "runtime/io/bool_bytes.h"
#include "runtime/io/file_bytes.h"

namespace onnx_amp {
namespace {

std::string TensorLabel(const onnx::TensorProto& proto) {
  return "tensor '" + (proto.name().empty() ? std::string("<unnamed>") : proto.name()) + "'";
}

// Copies a repeated typed field into the tensor, narrowing each value to T.
template <typename T, typename Field>
void CopyField(const Field& field, Tensor& tensor) {
  T* out = tensor.data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

// Float16 and bfloat16 values sit in the low 16 bits of int32_data.
void CopyHalfBits(const google::protobuf::RepeatedField<int32_t>& field, Tensor& tensor) {
  uint16_t* out = static_cast<uint16_t*>(tensor.raw_data());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<uint16_t>(field.Get(i) & 0xFFFF);
}

// Number of values the typed field for `dtype` holds.
int TypedFieldSize(const onnx::TensorProto& proto, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return proto.float_data_size();
    case DType::kFloat64: return proto.double_data_size();
    case DType::kInt64: return proto.int64_data_size();
    case DType::kUInt32:
    case DType::kUInt64: return proto.uint64_data_size();
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16: return proto.int32_data_size();
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: return 0;
  }
  return 0;
}

void CopyTypedField(const onnx::TensorProto& proto, DType dtype, Tensor& tensor) {
  switch (dtype) {
    case DType::kFloat32: CopyField<float>(proto.float_data(), tensor); return;
    case DType::kFloat64: CopyField<double>(proto.double_data(), tensor); return;
    case DType::kInt64: CopyField<int64_t>(proto.int64_data(), tensor); return;
    case DType::kUInt32: CopyField<uint32_t>(proto.uint64_data(), tensor); return;
    case DType::kUInt64: CopyField<uint64_t>(proto.uint64_data(), tensor); return;
    case DType::kUInt8: CopyField<uint8_t>(proto.int32_data(), tensor); return;
    case DType::kInt8: CopyField<int8_t>(proto.int32_data(), tensor); return;
    case DType::kUInt16: CopyField<uint16_t>(proto.int32_data(), tensor); return;
    case DType::kInt16: CopyField<int16_t>(proto.int32_data(), tensor); return;
    case DType::kInt32: CopyField<int32_t>(proto.int32_data(), tensor); return;
    case DType::kBool: {
      bool* out = tensor.data<bool>();
      for (int i = 0; i < proto.int32_data_size(); ++i) out[i] = proto.int32_data(i) != 0;
      return;
    }
    case DType::kFloat16: CopyHalfBits(proto.int32_data(), tensor); return;
    case DType::kBFloat16: CopyHalfBits(proto.int32_data(), tensor); return;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: ONNX_AMP_ASSERT(false, "unsupported dtypes are rejected before copying"); return;
  }
}

bool SupportedDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kBool: return true;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128: return false;
  }
  return false;
}

}  // namespace

Expected<Tensor> TensorFromProto(const onnx::TensorProto& proto) {
  const std::string label = TensorLabel(proto);
  const std::optional<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype || *dtype == DType::kUndefined) {
    return Unsupported(label + ": element type code " + std::to_string(proto.data_type()) + " is not supported");
  }
  if (!SupportedDType(*dtype)) {
    return Unsupported(label + ": element type " + std::string(DTypeName(*dtype)) + " is not supported");
  }
  if (proto.has_segment()) return Unsupported(label + ": segmented tensors are not supported");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return Unsupported(label + ": external data was not loaded into the model");
  }
  Shape shape(proto.dims().begin(), proto.dims().end());
  const Expected<int64_t> elements = CheckedElementCount(shape, label);
  if (!elements.ok()) return InvalidModel(elements.status().message());
  const int64_t count = *elements;
  const size_t bytes = static_cast<size_t>(count) * DTypeSize(*dtype);
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes) {
      return InvalidModel(label + ": raw_data holds " + std::to_string(proto.raw_data().size()) + " bytes, shape " +
                          ShapeToString(shape) + " of " + std::string(DTypeName(*dtype)) + " needs " +
                          std::to_string(bytes));
    }
    if (*dtype == DType::kBool) {
      Status valid = CheckBoolBytes(proto.raw_data().data(), bytes, label);
      if (!valid.ok()) return InvalidModel(valid.message());
    }
    Tensor tensor = Tensor::Empty(*dtype, std::move(shape));
    if (bytes > 0) std::memcpy(tensor.raw_data(), proto.raw_data().data(), bytes);
    return tensor;
  }
  const int values = TypedFieldSize(proto, *dtype);
  if (values != count) {
    return InvalidModel(label + ": holds " + std::to_string(values) + " values, shape " + ShapeToString(shape) +
                        " needs " + std::to_string(count));
  }
  Tensor tensor = Tensor::Empty(*dtype, std::move(shape));
  CopyTypedField(proto, *dtype, tensor);
  return tensor;
}

Expected<Tensor> ConstantNodeValue(const onnx::NodeProto& node) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    const std::string& name = attribute.name();
    if (name == "value") return TensorFromProto(attribute.t());
    if (name == "value_float" || name == "value_int") {
      const bool is_float = name == "value_float";
      Tensor tensor = Tensor::Empty(is_float ? DType::kFloat32 : DType::kInt64, {});
      if (is_float) *tensor.data<float>() = attribute.f();
      else *tensor.data<int64_t>() = attribute.i();
      return tensor;
    }
    if (name == "value_floats") {
      Tensor tensor = Tensor::Empty(DType::kFloat32, {attribute.floats_size()});
      CopyField<float>(attribute.floats(), tensor);
      return tensor;
    }
    if (name == "value_ints") {
      Tensor tensor = Tensor::Empty(DType::kInt64, {attribute.ints_size()});
      CopyField<int64_t>(attribute.ints(), tensor);
      return tensor;
    }
    if (name == "value_string" || name == "value_strings" || name == "sparse_value") {
      return Unsupported("'" + name + "' constants are not supported");
    }
  }
  return InvalidModel("no value attribute");
}

Expected<onnx::TensorProto> TensorToProto(const Tensor& tensor, const std::string& name) {
  if (!SupportedDType(tensor.dtype())) {
    return Unsupported("tensor '" + name + "': element type " + std::string(DTypeName(tensor.dtype())) +
                       " cannot be written");
  }
  if (tensor.device() != DeviceKind::kCpu) return Unsupported("tensor '" + name + "': not in CPU memory");
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(ToOnnx(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
  return proto;
}

Expected<NamedTensor> ReadTensorProtoFile(const std::filesystem::path& path) {
  ONNX_AMP_ASSIGN_OR_RETURN(std::string contents, ReadWholeFile(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(contents)) return InvalidArgument(path.string() + ": not a serialized TensorProto");
  Expected<Tensor> tensor = TensorFromProto(proto);
  if (!tensor.ok()) return tensor.status().WithContext(path.string());
  return NamedTensor{proto.name(), std::move(tensor).value()};
}

Status WriteTensorProtoFile(const std::filesystem::path& path, const Tensor& tensor, const std::string& name) {
  Expected<onnx::TensorProto> proto = TensorToProto(tensor, name);
  if (!proto.ok()) return proto.status().WithContext(path.string());
  std::string contents;
  if (!proto->SerializeToString(&contents)) return IoError(path.string() + ": cannot serialize tensor '" + name + "'");
  return WriteWholeFile(path, contents);
}

}  // namespace onnx_amp
