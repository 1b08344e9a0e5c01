// Moves large tensors of a model into one external data file, for SaveModel.
#pragma once

#include <cstddef>
#include <string>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"
#include "runtime/onnx/atomic_file.h"

namespace onnx_amp {

// Offsets of tensors of at least kExternalPageAlignThreshold bytes are aligned to a page
// so that the file can be memory-mapped tensor by tensor, as onnx does; smaller ones to a
// cache line.
inline constexpr size_t kExternalPageAlignment = 4096;
inline constexpr size_t kExternalPageAlignThreshold = 64 * 1024;
inline constexpr size_t kExternalSmallAlignment = 64;

struct ExternalizedModel {
  onnx::ModelProto model;   // refers to the data file for every moved tensor
  size_t moved_count = 0;   // tensors moved out
};

// Returns a copy of `model` in which every tensor whose raw_data holds at least
// `threshold_bytes` refers to `location` instead, and writes those bytes to `data_file`.
// The copy is built without those bytes, so a model holding more than 2 GiB of weights
// is never duplicated in memory. Tensors kept in typed fields (float_data, ...) stay inline.
Expected<ExternalizedModel> ExternalizeTensors(const onnx::ModelProto& model, size_t threshold_bytes,
                                               const std::string& location, AtomicFileWriter& data_file);

}  // namespace onnx_amp
