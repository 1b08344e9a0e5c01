// The ONNX checker and shape inference, with their exceptions turned into Status.
#pragma once

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// onnx::checker::check_model; full_check adds strict shape inference (on a copy). The
// model must hold its tensor data (LoadModel's default): for tensors still stored
// externally the ONNX checker would look for files relative to the working folder, so
// such a model gets InvalidArgument instead.
Status CheckModel(const onnx::ModelProto& model, bool full_check);

// Fills value_info with inferred types and shapes (with data propagation, so shapes
// computed by Shape/Gather/Concat chains resolve). strict: a node whose inference fails
// is an error instead of being skipped.
Status InferShapes(onnx::ModelProto& model, bool strict);

}  // namespace onnx_amp
