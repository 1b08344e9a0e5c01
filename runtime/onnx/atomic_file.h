// Writes a file so that readers see either the old file or the complete new one:
// the bytes go to a temporary file in the same folder, which is fsync'ed and then
// renamed over the target. A writer dropped before Commit() removes its temporary file;
// the temporary file of a killed writer is removed by the next writer of the same target.
// Without `durable` the fsyncs are skipped: the rename is still atomic, but a power loss
// may lose the new file (fine for scratch outputs, and much faster for many small files).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "runtime/core/status.h"

namespace onnx_amp {

class AtomicFileWriter {
 public:
  // Creates the temporary file next to `path`; IoError (naming `path`) when the folder
  // does not exist or is not writable.
  static Expected<AtomicFileWriter> Create(const std::filesystem::path& path, bool durable = true);

  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status Write(const void* data, size_t size);
  Status WriteZeros(size_t size);
  // Bytes written so far.
  size_t size() const { return size_; }

  // Flushes the temporary file to disk (when durable) and closes it; the target is not
  // touched yet.
  Status Sync();
  // Renames the temporary file over the target and, when durable, syncs the folder.
  Status Commit();

  const std::filesystem::path& path() const { return path_; }

 private:
  AtomicFileWriter(std::filesystem::path path, std::filesystem::path temp_path, int fd, bool durable)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd), durable_(durable) {}
  void Discard();

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  int fd_ = -1;
  bool durable_ = true;
  size_t size_ = 0;
  bool synced_ = false;
  bool committed_ = false;
};

}  // namespace onnx_amp
