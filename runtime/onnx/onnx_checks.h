// The ONNX checker and shape inference, with their exceptions turned into Status.
#pragma once

#include <filesystem>
#include <functional>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// onnx::checker::check_model; full_check adds strict shape inference (on a copy). The
// model must hold its tensor data (LoadModel's default): for tensors still stored
// externally the ONNX checker would look for files relative to the working folder, so
// such a model gets InvalidArgument instead.
Status CheckModel(const onnx::ModelProto& model, bool full_check);

// The ONNX checker (not the full check) on a model whose tensors may still be in their
// external files, which it reads in `external_data_folder` (CheckModel when empty).
Status CheckModelWithData(const onnx::ModelProto& model, const std::filesystem::path& external_data_folder);

// Fills value_info with inferred types and shapes (with data propagation, so shapes
// computed by Shape/Gather/Concat chains resolve). strict: a node whose inference fails
// is an error instead of being skipped.
Status InferShapes(onnx::ModelProto& model, bool strict);

// Runs InferShapes on `model` itself, hands the inferred model to `inspect` (when
// given), and leaves `model` as it was: inference only adds value_info and refines graph
// inputs and outputs, and those are restored, which costs far less than a copy of a
// large model.
Status InspectInferred(onnx::ModelProto& model, bool strict,
                       const std::function<void(const onnx::ModelProto&)>& inspect);

}  // namespace onnx_amp
