#include "tests/fuzz/scratch_folder.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <system_error>

namespace onnx_amp::fuzz {

ScratchFolder::ScratchFolder(const std::string& prefix) {
  std::error_code error;
  const std::filesystem::path base =
      std::filesystem::is_directory("/dev/shm", error) ? std::filesystem::path("/dev/shm")
                                                       : std::filesystem::temp_directory_path();
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("fuzz scratch folder");
    std::abort();
  }
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code error;
  std::filesystem::remove_all(path_, error);
}

std::filesystem::path ScratchFolder::Write(const std::string& name, const uint8_t* data, size_t size) const {
  const std::filesystem::path file = path_ / name;
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (out == nullptr || (size > 0 && std::fwrite(data, 1, size, out) != size) || std::fclose(out) != 0) {
    std::perror(file.c_str());
    std::abort();
  }
  return file;
}

}  // namespace onnx_amp::fuzz
