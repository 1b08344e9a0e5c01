// A private folder for fuzz targets that must hand their input to an API taking a path
// (model files with external data, IDX files, checkpoints). Created once per process
// in /dev/shm when it exists (no disk traffic per execution), removed at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace onnx_amp::fuzz {

class ScratchFolder {
 public:
  explicit ScratchFolder(const std::string& prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Replaces the file `name` in the folder with `size` bytes; returns its path.
  std::filesystem::path Write(const std::string& name, const uint8_t* data, size_t size) const;

 private:
  std::filesystem::path path_;
};

}  // namespace onnx_amp::fuzz
