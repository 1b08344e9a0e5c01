#include "runtime/onnx/model_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "runtime/onnx/atomic_file.h"
#include "runtime/onnx/external_data.h"
#include "runtime/onnx/external_data_writer.h"
#include "runtime/onnx/opset_support.h"

namespace onnx_amp {
namespace {

namespace fs = std::filesystem;

constexpr int kReadBlockBytes = 1 << 20;
constexpr size_t kProtobufLimitBytes = INT_MAX;

fs::path FolderOf(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

std::string SizeText(size_t bytes) { return std::to_string(bytes) + " bytes"; }

Expected<onnx::ModelProto> ParseModelFile(const fs::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("file not found");
    return IoError(std::string("cannot open: ") + std::strerror(errno));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return IoError(std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return InvalidArgument("is a folder, not a model file");
  if (!S_ISREG(info.st_mode)) return InvalidArgument("is not a regular file");
  if (info.st_size == 0) return InvalidModel("file is empty");
  if (static_cast<uint64_t>(info.st_size) > kProtobufLimitBytes) {
    return Unsupported("file is " + SizeText(info.st_size) +
                       ", over protobuf's 2 GiB limit; store the weights as external data");
  }
  // A small model needs no 1 MiB read buffer (st_size is at most INT_MAX here).
  const int block = static_cast<int>(std::min<int64_t>(kReadBlockBytes, info.st_size));
  google::protobuf::io::FileInputStream file_stream(fd, block);
  google::protobuf::io::CodedInputStream coded(&file_stream);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  const bool parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  if (file_stream.GetErrno() != 0) return IoError(std::string("cannot read: ") + std::strerror(file_stream.GetErrno()));
  if (!parsed) return InvalidModel("not a valid ONNX model (protobuf parsing failed: truncated or not ONNX)");
  if (!model.has_graph()) return InvalidModel("not a valid ONNX model: it has no graph");
  if (!model.has_ir_version()) return InvalidModel("not a valid ONNX model: it has no ir_version");
  return model;
}

// Feeds protobuf's serializer straight into the atomic writer, so large models are not
// first serialized into a string.
class WriterOutputStream final : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit WriterOutputStream(AtomicFileWriter& writer) : writer_(writer) {}
  bool Write(const void* buffer, int size) override {
    status_ = writer_.Write(buffer, static_cast<size_t>(size));
    return status_.ok();
  }
  const Status& status() const { return status_; }

 private:
  AtomicFileWriter& writer_;
  Status status_;
};

Status CheckSerializableSize(size_t bytes) {
  if (bytes <= kProtobufLimitBytes) return Status::Ok();
  return Unsupported("the model is " + SizeText(bytes) +
                     " serialized, over protobuf's 2 GiB limit; save it with external data");
}

// Writes `model`, whose ByteSizeLong() just returned `bytes`: that call cached the size
// of every message, which the serializer reuses instead of measuring the model again.
Status WriteModel(const onnx::ModelProto& model, size_t bytes, AtomicFileWriter& writer) {
  ONNX_AMP_RETURN_IF_ERROR(CheckSerializableSize(bytes));
  WriterOutputStream stream(writer);
  google::protobuf::io::CopyingOutputStreamAdaptor adaptor(&stream, kReadBlockBytes);
  bool written = false;
  {
    google::protobuf::io::CodedOutputStream coded(&adaptor);
    model.SerializeWithCachedSizes(&coded);
    written = !coded.HadError();
  }  // the coded stream hands the adaptor back what it did not fill
  written = written && adaptor.Flush();
  ONNX_AMP_RETURN_IF_ERROR(stream.status());
  if (!written) return InternalError("protobuf failed to serialize the model");
  return Status::Ok();
}

Expected<std::string> DataFileName(const fs::path& path, const SaveOptions& options) {
  const std::string name =
      options.external_file_name.empty() ? path.filename().string() + ".data" : options.external_file_name;
  const fs::path name_path(name);
  if (name_path.has_parent_path() || name_path.is_absolute() || name == "." || name == ".." ||
      name_path == path.filename()) {
    return InvalidArgument("external data file name '" + name + "' must be a plain file name other than the model's");
  }
  return name;
}

// The serialized size of `model` when it is written as one file; nullopt when its
// tensors go to an external data file.
std::optional<size_t> SingleFileBytes(const onnx::ModelProto& model, ExternalData mode) {
  if (mode == ExternalData::kAlways) return std::nullopt;
  const size_t bytes = model.ByteSizeLong();
  if (mode == ExternalData::kAuto && bytes > kAutoExternalDataBytes) return std::nullopt;
  return bytes;
}

// Moves the in-memory tensors of at least the threshold after the `streamed` ones already
// in `data_file`, writes the model and commits both files.
Status WriteWithExternalData(const onnx::ModelProto& model, const std::string& data_name, size_t streamed,
                             AtomicFileWriter& model_file, AtomicFileWriter& data_file, const SaveOptions& options,
                             const fs::path& path) {
  ONNX_AMP_ASSIGN_OR_RETURN(ExternalizedModel externalized,
                            ExternalizeTensors(model, options.external_threshold_bytes, data_name, data_file));
  const size_t bytes = externalized.model.ByteSizeLong();
  ONNX_AMP_RETURN_IF_ERROR(WriteModel(externalized.model, bytes, model_file).WithContext(path.string()));
  ONNX_AMP_RETURN_IF_ERROR(model_file.Sync());
  // No tensor was large enough: no data file, and no stale one is overwritten.
  if (streamed + externalized.moved_count == 0) return model_file.Commit();
  ONNX_AMP_RETURN_IF_ERROR(data_file.Sync());
  ONNX_AMP_RETURN_IF_ERROR(data_file.Commit());
  return model_file.Commit();
}

}  // namespace

Expected<onnx::ModelProto> LoadModel(const fs::path& path, const LoadOptions& options, size_t* kept_in_files) {
  Expected<onnx::ModelProto> model = ParseModelFile(path);
  if (!model.ok()) return model.status().WithContext(path.string());
  if (options.check_opsets) ONNX_AMP_RETURN_IF_ERROR(CheckOpsetsSupported(*model).WithContext(path.string()));
  const bool read_all = options.load_external_data && options.keep_external_from_bytes == SIZE_MAX;
  Expected<size_t> external = LoadExternalData(*model, FolderOf(path), read_all);
  if (!external.ok()) return external.status().WithContext(path.string());
  size_t kept = read_all ? 0 : *external;
  if (options.load_external_data && !read_all && kept > 0) {
    Expected<size_t> still = ReadSmallExternalTensors(*model, FolderOf(path), options.keep_external_from_bytes);
    if (!still.ok()) return still.status().WithContext(path.string());
    kept = *still;
  }
  if (kept_in_files != nullptr) *kept_in_files = kept;
  return model;
}

Status SaveModel(const onnx::ModelProto& model, const fs::path& path, const SaveOptions& options) {
  ONNX_AMP_RETURN_IF_ERROR(RequireDataInMemory(model).WithContext(path.string()));
  // The model file is created first so that a missing folder is reported by its path.
  ONNX_AMP_ASSIGN_OR_RETURN(AtomicFileWriter model_file, AtomicFileWriter::Create(path, options.durable));
  if (const std::optional<size_t> bytes = SingleFileBytes(model, options.mode)) {
    ONNX_AMP_RETURN_IF_ERROR(WriteModel(model, *bytes, model_file).WithContext(path.string()));
    return model_file.Commit();
  }
  Expected<std::string> data_name = DataFileName(path, options);
  if (!data_name.ok()) return data_name.status().WithContext(path.string());
  ONNX_AMP_ASSIGN_OR_RETURN(AtomicFileWriter data_file,
                            AtomicFileWriter::Create(FolderOf(path) / *data_name, options.durable));
  return WriteWithExternalData(model, *data_name, 0, model_file, data_file, options, path);
}

Status SaveModelStreaming(onnx::ModelProto& model, const fs::path& path, const ExternalSources& sources,
                          const SaveOptions& options) {
  ONNX_AMP_ASSIGN_OR_RETURN(AtomicFileWriter model_file, AtomicFileWriter::Create(path, options.durable));
  Expected<std::string> data_name = DataFileName(path, options);
  if (!data_name.ok()) return data_name.status().WithContext(path.string());
  ONNX_AMP_ASSIGN_OR_RETURN(AtomicFileWriter data_file,
                            AtomicFileWriter::Create(FolderOf(path) / *data_name, options.durable));
  size_t streamed = 0;
  ONNX_AMP_RETURN_IF_ERROR(
      StreamExternalTensors(model, sources, *data_name, data_file, &streamed).WithContext(path.string()));
  return WriteWithExternalData(model, *data_name, streamed, model_file, data_file, options, path);
}

Expected<std::string> SerializeModel(const onnx::ModelProto& model) {
  ONNX_AMP_RETURN_IF_ERROR(CheckSerializableSize(model.ByteSizeLong()));
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return InternalError("protobuf failed to serialize the model");
  return bytes;
}

}  // namespace onnx_amp
