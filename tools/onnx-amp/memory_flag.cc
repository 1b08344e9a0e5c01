#include "tools/onnx-amp/memory_flag.h"

#include "runtime/core/limits.h"

namespace onnx_amp {

void AddMaxMemoryFlag(CLI::App& command, std::string& text) {
  command.add_option("--max-memory", text,
                     "Cap on the bytes one run allocates for node outputs, e.g. 512M or 8G (default: physical memory)");
}

Expected<size_t> ParseMaxMemoryFlag(const std::string& text) {
  if (text.empty()) return size_t{0};
  return ParseByteSize(text, "--max-memory");
}

}  // namespace onnx_amp
