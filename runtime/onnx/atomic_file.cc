#include "runtime/onnx/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace onnx_amp {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

std::filesystem::path FolderOf(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

Status SyncFolder(const std::filesystem::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open folder '" + folder.string() + "': " + ErrnoText(errno));
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return IoError("cannot sync folder '" + folder.string() + "': " + ErrnoText(error));
  return Status::Ok();
}

// The process id in a temporary name ".<target>.tmp-<pid>-<counter>"; 0 when it has none.
pid_t WriterOf(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  pid_t pid = 0;
  for (size_t i = prefix.size(); i < name.size() && name[i] != '-'; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 1000000000) return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

// A writer killed before Commit() leaves its temporary file behind. The next writer of the
// same target removes those whose process is gone; a live writer's file is never touched.
void RemoveStaleTemporaries(const std::filesystem::path& path) {
  const std::string prefix = "." + path.filename().string() + ".tmp-";
  std::error_code error;
  std::filesystem::directory_iterator entry(FolderOf(path), error);
  for (; !error && entry != std::filesystem::directory_iterator(); entry.increment(error)) {
    const pid_t pid = WriterOf(entry->path().filename().string(), prefix);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;  // another writer may have removed it first
    std::filesystem::remove(entry->path(), ignored);
  }
}

}  // namespace

Expected<AtomicFileWriter> AtomicFileWriter::Create(const std::filesystem::path& path, bool durable) {
  if (path.filename().empty()) return IoError("cannot write '" + path.string() + "': not a file name");
  static std::atomic<unsigned> counter{0};
  RemoveStaleTemporaries(path);
  // O_EXCL makes the name ours; a clash with a leftover file just tries the next name.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp_name = ".";
    temp_name += path.filename().string();
    temp_name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    std::filesystem::path temp_path = FolderOf(path) / temp_name;
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return AtomicFileWriter(path, std::move(temp_path), fd, durable);
    if (errno != EEXIST) return IoError("cannot create '" + path.string() + "': " + ErrnoText(errno));
  }
  return IoError("cannot create '" + path.string() + "': no free temporary file name");
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      durable_(other.durable_),
      size_(other.size_),
      synced_(other.synced_),
      committed_(std::exchange(other.committed_, true)) {}

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& other) noexcept {
  if (this != &other) {
    Discard();
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
    durable_ = other.durable_;
    size_ = other.size_;
    synced_ = other.synced_;
    committed_ = std::exchange(other.committed_, true);
  }
  return *this;
}

AtomicFileWriter::~AtomicFileWriter() { Discard(); }

void AtomicFileWriter::Discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  committed_ = true;
}

Status AtomicFileWriter::Write(const void* data, size_t size) {
  ONNX_AMP_ASSERT(fd_ >= 0, "Write after Sync or on a moved-from writer");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write '" + path_.string() + "': " + ErrnoText(errno));
    }
    bytes += written;
    size -= static_cast<size_t>(written);
    size_ += static_cast<size_t>(written);
  }
  return Status::Ok();
}

Status AtomicFileWriter::WriteZeros(size_t size) {
  static constexpr char kZeros[4096] = {};
  while (size > 0) {
    const size_t chunk = size < sizeof(kZeros) ? size : sizeof(kZeros);
    ONNX_AMP_RETURN_IF_ERROR(Write(kZeros, chunk));
    size -= chunk;
  }
  return Status::Ok();
}

Status AtomicFileWriter::Sync() {
  ONNX_AMP_ASSERT(fd_ >= 0, "Sync called twice or on a moved-from writer");
  if (durable_ && ::fsync(fd_) != 0) return IoError("cannot sync '" + path_.string() + "': " + ErrnoText(errno));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) return IoError("cannot close '" + path_.string() + "': " + ErrnoText(errno));
  synced_ = true;
  return Status::Ok();
}

Status AtomicFileWriter::Commit() {
  if (!synced_) ONNX_AMP_RETURN_IF_ERROR(Sync());
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return IoError("cannot replace '" + path_.string() + "': " + ErrnoText(errno));
  }
  committed_ = true;
  return durable_ ? SyncFolder(FolderOf(path_)) : Status::Ok();
}

}  // namespace onnx_amp
