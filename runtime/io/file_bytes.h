// Whole-file reads and atomic whole-file writes for the tensor file formats.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "runtime/core/status.h"

namespace onnx_amp {

// Errors name the file.
Expected<std::string> ReadWholeFile(const std::filesystem::path& path);
// Through a temporary file renamed into place: a failed write leaves no partial file.
Status WriteWholeFile(const std::filesystem::path& path, std::string_view contents);

}  // namespace onnx_amp
