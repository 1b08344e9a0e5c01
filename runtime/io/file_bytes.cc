#include "runtime/io/file_bytes.h"

#include <fstream>
#include <sstream>

#include "runtime/onnx/atomic_file.h"

namespace onnx_amp {

Expected<std::string> ReadWholeFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return NotFound(path.string() + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path.string() + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return IoError(path.string() + ": read failed");
  return std::move(buffer).str();
}

Status WriteWholeFile(const std::filesystem::path& path, std::string_view contents) {
  ONNX_AMP_ASSIGN_OR_RETURN(AtomicFileWriter writer, AtomicFileWriter::Create(path));
  ONNX_AMP_RETURN_IF_ERROR(writer.Write(contents.data(), contents.size()));
  ONNX_AMP_RETURN_IF_ERROR(writer.Sync());
  return writer.Commit();
}

}  // namespace onnx_amp
