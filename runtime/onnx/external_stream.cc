#include "runtime/onnx/external_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/onnx/external_data.h"
#include "runtime/onnx/external_data_writer.h"
#include "runtime/onnx/tensor_walk.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

bool IsExternal(const onnx::TensorProto& tensor) {
  return tensor.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
}

// One external tensor's file, opened read-only, and its byte range in it.
class ExternalRange {
 public:
  static Expected<ExternalRange> Open(const onnx::TensorProto& tensor, const fs::path& folder) {
    ONNX_AMP_ASSIGN_OR_RETURN(const ExternalDataRef ref, ParseExternalDataRef(tensor));
    ONNX_AMP_ASSIGN_OR_RETURN(const fs::path file, ResolveExternalDataPath(folder, ref.location));
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return IoError("cannot open external data '" + ref.location + "': " + std::strerror(errno));
    ExternalRange range(ref.location, fd);
    struct stat info {};
    if (::fstat(fd, &info) != 0) return IoError("cannot stat external data '" + ref.location + "'");
    const uint64_t file_size = static_cast<uint64_t>(info.st_size);
    if (ref.offset > file_size) return InvalidModel("external data offset is past the end of '" + ref.location + "'");
    range.offset_ = ref.offset;
    range.length_ = ref.length.value_or(file_size - ref.offset);
    if (range.length_ > file_size - ref.offset) {
      return InvalidModel("external data '" + ref.location + "' is shorter than the tensor's range");
    }
    ::posix_fadvise(fd, static_cast<off_t>(range.offset_), static_cast<off_t>(range.length_), POSIX_FADV_SEQUENTIAL);
    return range;
  }

  ExternalRange(ExternalRange&& other) noexcept
      : location_(std::move(other.location_)), fd_(std::exchange(other.fd_, -1)), offset_(other.offset_),
        length_(other.length_) {}
  ExternalRange& operator=(ExternalRange&&) = delete;
  ~ExternalRange() {
    if (fd_ >= 0) ::close(fd_);
  }

  uint64_t length() const { return length_; }

  // Reads `size` bytes starting `at` bytes into the range.
  Status Read(uint64_t at, char* out, size_t size) const {
    size_t done = 0;
    while (done < size) {
      const ssize_t got = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset_ + at + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return IoError("cannot read external data '" + location_ +
                       "': " + (got < 0 ? std::strerror(errno) : "unexpected end of file"));
      }
      done += static_cast<size_t>(got);
    }
    return Status::Ok();
  }

 private:
  ExternalRange(std::string location, int fd) : location_(std::move(location)), fd_(fd) {}

  std::string location_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t length_ = 0;
};

size_t AlignmentFor(uint64_t length) {
  return length >= kExternalPageAlignThreshold ? kExternalPageAlignment : kExternalSmallAlignment;
}

void PointAt(onnx::TensorProto& tensor, const std::string& location, uint64_t offset, uint64_t length) {
  tensor.clear_external_data();
  const std::pair<const char*, std::string> entries[] = {
      {"location", location},
      {"offset", std::to_string(offset)},
      {"length", std::to_string(length)},
  };
  for (const auto& [key, value] : entries) {
    onnx::StringStringEntryProto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  tensor.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
}

// Buffers reused across tensors.
struct StreamBuffers {
  std::vector<char> in;
  std::vector<char> out;
};

Status StreamOne(onnx::TensorProto& tensor, const ExternalSources& sources, const std::string& location,
                 AtomicFileWriter& data_file, StreamBuffers& buffers) {
  ONNX_AMP_ASSIGN_OR_RETURN(const ExternalRange range, ExternalRange::Open(tensor, sources.folder));
  const auto transform_it = tensor.name().empty() ? sources.transforms.end() : sources.transforms.find(tensor.name());
  const ChunkTransform* transform = transform_it == sources.transforms.end() ? nullptr : &transform_it->second;
  uint64_t out_length = range.length();
  if (transform != nullptr) {
    if (range.length() % transform->in_element_bytes != 0) {
      return InvalidModel("external data length " + std::to_string(range.length()) + " is not a whole number of " +
                          std::to_string(transform->in_element_bytes) + "-byte elements");
    }
    out_length = range.length() / transform->in_element_bytes * transform->out_element_bytes;
  }
  const size_t alignment = AlignmentFor(out_length);
  ONNX_AMP_RETURN_IF_ERROR(data_file.WriteZeros((alignment - data_file.size() % alignment) % alignment));
  const uint64_t out_offset = data_file.size();

  // A chunk is a whole number of input elements.
  const size_t element_bytes = transform != nullptr ? transform->in_element_bytes : 1;
  const size_t chunk_bytes = kStreamChunkBytes / element_bytes * element_bytes;
  buffers.in.resize(chunk_bytes);
  if (transform != nullptr) buffers.out.resize(chunk_bytes / transform->in_element_bytes * transform->out_element_bytes);
  for (uint64_t at = 0; at < range.length(); at += chunk_bytes) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk_bytes, range.length() - at));
    ONNX_AMP_RETURN_IF_ERROR(range.Read(at, buffers.in.data(), size));
    if (transform == nullptr) {
      ONNX_AMP_RETURN_IF_ERROR(data_file.Write(buffers.in.data(), size));
      continue;
    }
    const size_t count = size / transform->in_element_bytes;
    transform->convert(buffers.in.data(), buffers.out.data(), count);
    ONNX_AMP_RETURN_IF_ERROR(data_file.Write(buffers.out.data(), count * transform->out_element_bytes));
  }
  PointAt(tensor, location, out_offset, out_length);
  return Status::Ok();
}

}  // namespace

Expected<size_t> ReadSmallExternalTensors(onnx::ModelProto& model, const fs::path& folder, size_t below_bytes) {
  size_t kept = 0;
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(model, [&](onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (!IsExternal(tensor)) return Status::Ok();
    Expected<ExternalRange> range = ExternalRange::Open(tensor, folder);
    if (!range.ok()) return range.status().WithContext(DescribeTensor(tensor, node_name));
    if (range->length() >= below_bytes) {
      ++kept;
      return Status::Ok();
    }
    std::string bytes(range->length(), '\0');
    ONNX_AMP_RETURN_IF_ERROR(range->Read(0, bytes.data(), bytes.size()).WithContext(DescribeTensor(tensor, node_name)));
    tensor.set_raw_data(std::move(bytes));
    tensor.clear_external_data();
    tensor.clear_data_location();
    return Status::Ok();
  }));
  return kept;
}

Status ReadExternalChunks(const onnx::TensorProto& tensor, const fs::path& folder, size_t element_bytes,
                          const std::function<void(const char* data, size_t size)>& visit) {
  ONNX_AMP_ASSIGN_OR_RETURN(const ExternalRange range, ExternalRange::Open(tensor, folder));
  const size_t chunk_bytes = kStreamChunkBytes / element_bytes * element_bytes;
  std::vector<char> chunk(static_cast<size_t>(std::min<uint64_t>(chunk_bytes, range.length())));
  for (uint64_t at = 0; at < range.length(); at += chunk_bytes) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk_bytes, range.length() - at));
    ONNX_AMP_RETURN_IF_ERROR(range.Read(at, chunk.data(), size));
    visit(chunk.data(), size);
  }
  return Status::Ok();
}

Status StreamExternalTensors(onnx::ModelProto& model, const ExternalSources& sources, const std::string& location,
                             AtomicFileWriter& data_file, size_t* streamed) {
  StreamBuffers buffers;
  size_t count = 0;
  ONNX_AMP_RETURN_IF_ERROR(ForEachTensor(model, [&](onnx::TensorProto& tensor, std::string_view node_name) -> Status {
    if (!IsExternal(tensor)) return Status::Ok();
    ++count;
    return StreamOne(tensor, sources, location, data_file, buffers).WithContext(DescribeTensor(tensor, node_name));
  }));
  *streamed = count;
  return Status::Ok();
}

}  // namespace onnx_amp
