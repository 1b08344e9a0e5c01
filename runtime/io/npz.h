// NumPy .npz archives: a zip of .npy entries named after the arrays. Reading accepts
// stored and deflated entries (np.savez, np.savez_compressed) and zip64 records; writing
// produces stored entries.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/io/named_tensor.h"

namespace onnx_amp {

// Arrays in archive order, names without the ".npy" suffix. Errors name the file and entry.
Expected<std::vector<NamedTensor>> ReadNpzFile(const std::filesystem::path& path);
Expected<std::vector<NamedTensor>> ParseNpz(std::string_view bytes, const std::string& label);

// Writes atomically; names must be unique and non-empty.
Status WriteNpzFile(const std::filesystem::path& path, const std::vector<NamedTensor>& arrays);

}  // namespace onnx_amp
