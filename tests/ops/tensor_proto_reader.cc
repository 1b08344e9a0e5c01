#include "tests/ops/tensor_proto_reader.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace onnx_amp::testing {
namespace {

template <typename Message>
Expected<Message> ReadMessage(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return NotFound(path.string() + ": cannot open");
  std::stringstream bytes;
  bytes << file.rdbuf();
  Message message;
  if (!message.ParseFromString(bytes.str())) return InvalidModel(path.string() + ": not a valid protobuf message");
  return message;
}

template <typename T, typename Field>
void CopyField(const Field& field, Tensor& tensor) {
  T* data = tensor.data<T>();
  for (int i = 0; i < field.size(); ++i) data[i] = static_cast<T>(field.Get(i));
}

}  // namespace

Expected<onnx::ModelProto> ReadModelProto(const std::filesystem::path& path) {
  return ReadMessage<onnx::ModelProto>(path);
}

Expected<onnx::TensorProto> ReadTensorProto(const std::filesystem::path& path) {
  return ReadMessage<onnx::TensorProto>(path);
}

Expected<Tensor> TensorFromProto(const onnx::TensorProto& proto) {
  std::optional<DType> dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype || DTypeSize(*dtype) == 0) {
    return Unsupported("tensor '" + proto.name() + "' has unsupported type " + std::to_string(proto.data_type()));
  }
  Shape shape(proto.dims().begin(), proto.dims().end());
  Tensor tensor = Tensor::Empty(*dtype, shape);
  const size_t bytes = tensor.bytes();
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes) return InvalidModel("tensor '" + proto.name() + "': raw_data size mismatch");
    if (bytes > 0) std::memcpy(tensor.raw_data(), proto.raw_data().data(), bytes);
    return tensor;
  }
  const int64_t n = tensor.num_elements();
  auto check = [&](int size) -> Status {
    if (size == n) return Status::Ok();
    return InvalidModel("tensor '" + proto.name() + "': element count mismatch");
  };
  switch (*dtype) {
    case DType::kFloat32: ONNX_AMP_RETURN_IF_ERROR(check(proto.float_data_size())); CopyField<float>(proto.float_data(), tensor); break;
    case DType::kFloat64: ONNX_AMP_RETURN_IF_ERROR(check(proto.double_data_size())); CopyField<double>(proto.double_data(), tensor); break;
    case DType::kInt64: ONNX_AMP_RETURN_IF_ERROR(check(proto.int64_data_size())); CopyField<int64_t>(proto.int64_data(), tensor); break;
    case DType::kUInt32: ONNX_AMP_RETURN_IF_ERROR(check(proto.uint64_data_size())); CopyField<uint32_t>(proto.uint64_data(), tensor); break;
    case DType::kUInt64: ONNX_AMP_RETURN_IF_ERROR(check(proto.uint64_data_size())); CopyField<uint64_t>(proto.uint64_data(), tensor); break;
    case DType::kInt32: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<int32_t>(proto.int32_data(), tensor); break;
    case DType::kInt16: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<int16_t>(proto.int32_data(), tensor); break;
    case DType::kInt8: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<int8_t>(proto.int32_data(), tensor); break;
    case DType::kUInt16: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<uint16_t>(proto.int32_data(), tensor); break;
    case DType::kUInt8: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<uint8_t>(proto.int32_data(), tensor); break;
    case DType::kBool: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<bool>(proto.int32_data(), tensor); break;
    // float16/bfloat16 are stored as their bit patterns in int32_data.
    case DType::kFloat16:
    case DType::kBFloat16: ONNX_AMP_RETURN_IF_ERROR(check(proto.int32_data_size())); CopyField<uint16_t>(proto.int32_data(), tensor); break;
    case DType::kUndefined:
    case DType::kString:
    case DType::kComplex64:
    case DType::kComplex128:
      return Unsupported("tensor '" + proto.name() + "' has an unsupported type");
  }
  return tensor;
}

}  // namespace onnx_amp::testing
