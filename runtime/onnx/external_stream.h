// Streams tensors stored as external data from the files a model was loaded from into
// the external data file of the model being written, chunk by chunk: a tensor is never
// held whole in memory, so converting a model needs memory for one graph, not one
// copy of its weights. A tensor may be transformed on the way (float32 -> float16).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/onnx/atomic_file.h"

namespace onnx_amp {

// Converts whole elements: `count` elements of in_element_bytes each at `in` into
// count elements of out_element_bytes each at `out`. Called once per chunk, in order.
struct ChunkTransform {
  size_t in_element_bytes = 4;
  size_t out_element_bytes = 2;
  std::function<void(const void* in, void* out, size_t count)> convert;
};

// Where the external tensors of a model come from, and how some of them change.
struct ExternalSources {
  std::filesystem::path folder;  // the folder the model's external locations resolve in
  // By tensor name; every other external tensor is copied as it is.
  std::unordered_map<std::string, ChunkTransform> transforms;
};

// Bytes read or written per step while streaming.
inline constexpr size_t kStreamChunkBytes = size_t{4} << 20;

// With LoadOptions::keep_external_from_bytes: reads into raw_data every external
// tensor of `model` whose data is shorter than `below_bytes` (shape tensors, biases,
// scalars that inference and painting look at). The ranges must have been validated
// (LoadExternalData with read = false). Returns how many tensors stay in their files.
Expected<size_t> ReadSmallExternalTensors(onnx::ModelProto& model, const std::filesystem::path& folder,
                                          size_t below_bytes);

// Calls `visit` with the external data of `tensor` chunk by chunk, in order; each chunk
// is a whole number of `element_bytes`-byte elements.
Status ReadExternalChunks(const onnx::TensorProto& tensor, const std::filesystem::path& folder, size_t element_bytes,
                          const std::function<void(const char* data, size_t size)>& visit);

// Streams every tensor of `model` stored externally under sources.folder (through its
// transform, if it has one) into `data_file`, aligned as ExternalizeTensors aligns, and
// points the tensor at `location` instead. `streamed` receives how many were moved.
// Errors name the tensor.
Status StreamExternalTensors(onnx::ModelProto& model, const ExternalSources& sources, const std::string& location,
                             AtomicFileWriter& data_file, size_t* streamed);

}  // namespace onnx_amp
