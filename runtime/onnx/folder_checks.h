// The ONNX checker for a model whose large tensors are still in external files
// (LoadOptions::keep_external_from_bytes): external locations resolve in the model's
// folder instead of the working folder, so their files are checked where they are.
#pragma once

#include <filesystem>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// onnx::checker::check_model (without its full_check shape inference) with the model
// folder set; InvalidModel on failure.
Status CheckModelInFolder(const onnx::ModelProto& model, const std::filesystem::path& folder);

}  // namespace onnx_amp
