// Loading and saving ONNX models (onnx::ModelProto) with their external data.
//
// Load reads the protobuf (up to protobuf's 2 GiB message limit), checks that this
// build supports the model's opsets and IR version, and reads tensors stored in external
// files into raw_data. Save writes atomically and moves large tensors to one external
// data file when asked or when the model would not fit in one protobuf message.
// For models larger than memory, Load can leave large tensors in their files and
// SaveModelStreaming streams them into the new data file (external_stream.h).
// Every error names the model file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/onnx/external_stream.h"

namespace onnx_amp {

struct LoadOptions {
  // Read external tensor data into raw_data. When false the tensors keep referring to
  // their files; their locations and byte ranges are still validated.
  bool load_external_data = true;
  // With load_external_data: external tensors holding at least this many bytes stay in
  // their files (validated), to be streamed by SaveModelStreaming; smaller ones are read.
  size_t keep_external_from_bytes = SIZE_MAX;
  // Reject opsets and IR versions newer than the linked ONNX knows (see opset_support.h).
  bool check_opsets = true;
};

// `kept_in_files` (when given) receives how many tensors still refer to their external
// files (load_external_data false, or keep_external_from_bytes).
Expected<onnx::ModelProto> LoadModel(const std::filesystem::path& path, const LoadOptions& options = {},
                                     size_t* kept_in_files = nullptr);

enum class ExternalData {
  kAuto,    // external only when the model would exceed kAutoExternalDataBytes serialized
  kAlways,  // every tensor of at least external_threshold_bytes goes to the data file
  kNever,   // one self-contained file; fails for models over protobuf's 2 GiB limit
};

// Protobuf refuses messages over 2 GiB; kAuto moves tensors out well before that.
inline constexpr size_t kAutoExternalDataBytes = size_t{1800} << 20;

struct SaveOptions {
  ExternalData mode = ExternalData::kAuto;
  // Tensors whose raw_data holds at least this many bytes are moved out.
  size_t external_threshold_bytes = 1024;
  // File name (no folder) of the data file, next to the model; default "<model file name>.data".
  std::string external_file_name;
  // fsync the files before renaming them into place and the folder after. Without it the
  // replacement is still atomic but may not survive a power loss; for scratch outputs.
  bool durable = true;
};

// Writes to a temporary file in the target folder and renames it into place, so a
// failed save leaves any existing file untouched. All tensor data must be in memory: a
// model loaded with load_external_data = false cannot be saved.
Status SaveModel(const onnx::ModelProto& model, const std::filesystem::path& path, const SaveOptions& options = {});

// SaveModel for a model whose large tensors are still in the files under sources.folder
// (LoadOptions::keep_external_from_bytes): always writes external data, streaming those
// tensors into the new data file chunk by chunk (through their transforms), and changes
// `model` to refer to the new file; on error `model` may refer to either. options.mode is
// ignored.
Status SaveModelStreaming(onnx::ModelProto& model, const std::filesystem::path& path, const ExternalSources& sources,
                          const SaveOptions& options = {});

// The model as protobuf bytes; Unsupported when it exceeds protobuf's 2 GiB limit.
Expected<std::string> SerializeModel(const onnx::ModelProto& model);

}  // namespace onnx_amp
