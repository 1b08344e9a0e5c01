// NumPy .npy arrays: format versions 1.0-3.0, little-endian, C order. Element types
// f2 f4 f8, i1-i8, u1-u8 and b1. bfloat16 has no NumPy dtype; ml_dtypes saves it as the
// opaque '<V2', which is rejected rather than guessed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"

namespace onnx_amp {

// `label` names the array in errors ("inputs.npz: array 'x'").
Expected<Tensor> ParseNpy(std::string_view bytes, const std::string& label);
Expected<std::string> SerializeNpy(const Tensor& tensor, const std::string& label);

Expected<Tensor> ReadNpyFile(const std::filesystem::path& path);
// Writes atomically (a temporary file renamed into place).
Status WriteNpyFile(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace onnx_amp
