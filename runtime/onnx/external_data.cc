#include "runtime/onnx/external_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

#include "runtime/core/limits.h"
#include "runtime/onnx/tensor_walk.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

Expected<uint64_t> ParseUnsigned(const std::string& key, const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end) {
    return InvalidModel("external data " + key + " '" + text + "' is not a non-negative integer");
  }
  return value;
}

// Bits per element of an ONNX data type; 0 when elements have no fixed size.
uint64_t ElementBits(int32_t data_type) {
  switch (static_cast<onnx::TensorProto_DataType>(data_type)) {
    case onnx::TensorProto_DataType_UNDEFINED: return 0;
    case onnx::TensorProto_DataType_STRING: return 0;
    case onnx::TensorProto_DataType_UINT4: return 4;
    case onnx::TensorProto_DataType_INT4: return 4;
    case onnx::TensorProto_DataType_FLOAT4E2M1: return 4;
    case onnx::TensorProto_DataType_BOOL: return 8;
    case onnx::TensorProto_DataType_UINT8: return 8;
    case onnx::TensorProto_DataType_INT8: return 8;
    case onnx::TensorProto_DataType_FLOAT8E4M3FN: return 8;
    case onnx::TensorProto_DataType_FLOAT8E4M3FNUZ: return 8;
    case onnx::TensorProto_DataType_FLOAT8E5M2: return 8;
    case onnx::TensorProto_DataType_FLOAT8E5M2FNUZ: return 8;
    case onnx::TensorProto_DataType_UINT16: return 16;
    case onnx::TensorProto_DataType_INT16: return 16;
    case onnx::TensorProto_DataType_FLOAT16: return 16;
    case onnx::TensorProto_DataType_BFLOAT16: return 16;
    case onnx::TensorProto_DataType_FLOAT: return 32;
    case onnx::TensorProto_DataType_INT32: return 32;
    case onnx::TensorProto_DataType_UINT32: return 32;
    case onnx::TensorProto_DataType_INT64: return 64;
    case onnx::TensorProto_DataType_UINT64: return 64;
    case onnx::TensorProto_DataType_DOUBLE: return 64;
    case onnx::TensorProto_DataType_COMPLEX64: return 64;
    case onnx::TensorProto_DataType_COMPLEX128: return 128;
  }
  return 0;  // a data type code newer than this build
}

// Bytes the tensor's data takes (4-bit types pack two per byte); nullopt when the type has
// no fixed size or the dims are negative or overflow.
std::optional<uint64_t> DataBytes(const onnx::TensorProto& tensor) {
  const uint64_t bits = ElementBits(tensor.data_type());
  if (bits == 0) return std::nullopt;
  uint64_t elements = 1;
  for (const int64_t dim : tensor.dims()) {
    if (dim < 0 || __builtin_mul_overflow(elements, static_cast<uint64_t>(dim), &elements)) return std::nullopt;
  }
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(elements, bits, &total_bits)) return std::nullopt;
  return (total_bits + 7) / 8;
}

bool IsStrictlyInside(const fs::path& folder, const fs::path& path) {
  auto path_it = path.begin();
  for (const fs::path& part : folder) {
    if (path_it == path.end() || *path_it != part) return false;
    ++path_it;
  }
  return path_it != path.end();
}

// The byte range [offset, offset + length) of the tensor inside its file, checked
// against the file size and the tensor's type and shape.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

Expected<ByteRange> CheckRange(const onnx::TensorProto& tensor, const ExternalDataRef& ref, uint64_t file_size) {
  const std::string where = "external data '" + ref.location + "' (" + std::to_string(file_size) + " bytes)";
  if (ref.offset > file_size) {
    return InvalidModel(where + " is shorter than the tensor's offset " + std::to_string(ref.offset));
  }
  const uint64_t length = ref.length.value_or(file_size - ref.offset);
  if (length > file_size - ref.offset) {
    return InvalidModel(where + " is shorter than the tensor's range: offset " + std::to_string(ref.offset) +
                        " + length " + std::to_string(length));
  }
  const std::optional<uint64_t> expected = DataBytes(tensor);
  if (expected && *expected != length) {
    return InvalidModel(where + " holds " + std::to_string(length) +
                        " bytes for the tensor, but its type and shape need " + std::to_string(*expected));
  }
  return ByteRange{ref.offset, length};
}

Status ReadRange(const fs::path& file, const std::string& location, const ByteRange& range, std::string* out) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return IoError("cannot open external data '" + location + "': " + std::strerror(errno));
  // Reading straight into the tensor's string avoids a second copy of large weights.
  out->resize(range.length);
  uint64_t done = 0;
  while (done < range.length) {
    const ssize_t got = ::pread(fd, out->data() + done, range.length - done, static_cast<off_t>(range.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const std::string reason = got < 0 ? std::strerror(errno) : "unexpected end of file";
      ::close(fd);
      return IoError("cannot read external data '" + location + "': " + reason);
    }
    done += static_cast<uint64_t>(got);
  }
  ::close(fd);
  return Status::Ok();
}

// `loaded_bytes` counts what the model's external tensors have read into memory so far.
Status LoadTensor(onnx::TensorProto& tensor, const fs::path& model_folder, bool read, size_t& loaded_bytes) {
  if (tensor.data_type() == onnx::TensorProto_DataType_STRING) {
    return InvalidModel("string tensors cannot be stored as external data");
  }
  if (tensor.has_raw_data()) return InvalidModel("has both external data and inline raw_data");
  ONNX_AMP_ASSIGN_OR_RETURN(const ExternalDataRef ref, ParseExternalDataRef(tensor));
  ONNX_AMP_ASSIGN_OR_RETURN(const fs::path file, ResolveExternalDataPath(model_folder, ref.location));
  std::error_code error;
  const uintmax_t file_size = fs::file_size(file, error);
  if (error) return IoError("cannot read external data '" + ref.location + "': " + error.message());
  ONNX_AMP_ASSIGN_OR_RETURN(const ByteRange range, CheckRange(tensor, ref, file_size));
  if (!read) return Status::Ok();
  loaded_bytes += range.length;
  ONNX_AMP_RETURN_IF_ERROR(CheckMemoryCap(loaded_bytes, PhysicalMemoryBytes(), "the external data read so far",
                                          "physical memory"));
  ONNX_AMP_RETURN_IF_ERROR(ReadRange(file, ref.location, range, tensor.mutable_raw_data()));
  tensor.clear_external_data();
  tensor.clear_data_location();
  return Status::Ok();
}

bool IsExternal(const onnx::TensorProto& tensor) {
  return tensor.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
}

}  // namespace

Expected<ExternalDataRef> ParseExternalDataRef(const onnx::TensorProto& tensor) {
  ExternalDataRef ref;
  bool has_location = false;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      ONNX_AMP_ASSIGN_OR_RETURN(ref.offset, ParseUnsigned("offset", entry.value()));
    } else if (entry.key() == "length") {
      ONNX_AMP_ASSIGN_OR_RETURN(ref.length, ParseUnsigned("length", entry.value()));
    }
  }
  if (!has_location) return InvalidModel("external data has no location");
  return ref;
}

Expected<fs::path> ResolveExternalDataPath(const fs::path& model_folder, const std::string& location) {
  const std::string quoted = "'" + location + "'";
  if (location.empty()) return InvalidModel("external data location is empty");
  if (location.size() > kMaxExternalLocationBytes) {
    return InvalidModel("external data location of " + std::to_string(location.size()) +
                        " bytes exceeds the limit of " + std::to_string(kMaxExternalLocationBytes));
  }
  if (location.find('\0') != std::string::npos) return InvalidModel("external data location contains a NUL byte");
  const fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_path()) {
    return InvalidModel("external data location " + quoted + " is absolute");
  }
  const fs::path normal = relative.lexically_normal();
  if (normal.empty() || *normal.begin() == ".." || normal == ".") {
    return InvalidModel("external data location " + quoted + " points outside the model folder");
  }
  std::error_code error;
  const fs::path folder = fs::canonical(model_folder, error);
  if (error) return IoError("cannot open model folder '" + model_folder.string() + "': " + error.message());
  // Resolves every symbolic link on the way, so a link inside the folder that points out
  // is caught here.
  const fs::path real = fs::weakly_canonical(folder / normal, error);
  if (error) return IoError("cannot resolve external data location " + quoted + ": " + error.message());
  if (!IsStrictlyInside(folder, real)) {
    return InvalidModel("external data location " + quoted + " resolves through a symbolic link to '" +
                        real.string() + "', outside the model folder");
  }
  const fs::file_status status = fs::status(real, error);
  if (status.type() == fs::file_type::not_found) return NotFound("external data file " + quoted + " not found");
  if (error) return IoError("cannot access external data file " + quoted + ": " + error.message());
  if (status.type() != fs::file_type::regular) {
    return InvalidModel("external data location " + quoted + " is not a regular file");
  }
  return real;
}

Expected<size_t> LoadExternalData(onnx::ModelProto& model, const fs::path& model_folder, bool read) {
  size_t loaded_bytes = 0;
  size_t count = 0;
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(model, [&](onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (!IsExternal(tensor)) return Status::Ok();
    ++count;
    return LoadTensor(tensor, model_folder, read, loaded_bytes).WithContext(DescribeTensor(tensor, node_name));
  }));
  return count;
}

Status RequireDataInMemory(const onnx::ModelProto& model) {
  return ForEachTensor(model, [](const onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (!IsExternal(tensor)) return Status::Ok();
    return InvalidArgument(DescribeTensor(tensor, node_name) +
                           " still refers to its external data file; load the model with its external data first");
  });
}

}  // namespace onnx_amp
