// Reads tensor data stored outside the model file (TensorProto.data_location ==
// EXTERNAL). Locations are untrusted: they must be relative paths that stay inside the
// model's folder, also after resolving symbolic links.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// The external_data entries of one tensor.
struct ExternalDataRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // absent: up to the end of the file
};

// InvalidModel when location is missing or offset/length are not decimal numbers.
Expected<ExternalDataRef> ParseExternalDataRef(const onnx::TensorProto& tensor);

// The real path of `location` inside `model_folder`. Rejects absolute locations, `..`
// that leaves the folder, symbolic links (of the file or of a folder on the way) whose
// target is outside the folder, and anything that is not a regular file; NotFound when
// the file does not exist.
Expected<std::filesystem::path> ResolveExternalDataPath(const std::filesystem::path& model_folder,
                                                        const std::string& location);

// For every tensor with external data in `model` (at any depth): validates its location
// and byte range against the file; with `read`, moves the bytes into raw_data and marks
// the tensor as stored inline. Returns how many tensors had external data. Errors name
// the tensor and location, not the model file.
Expected<size_t> LoadExternalData(onnx::ModelProto& model, const std::filesystem::path& model_folder, bool read);

// InvalidArgument naming the first tensor that still refers to external data (a model
// loaded with load_external_data = false); saving and checking need the data in memory.
Status RequireDataInMemory(const onnx::ModelProto& model);

}  // namespace onnx_amp
