// Does this build know the model's opsets? The limits come from the schema registry of
// the linked ONNX library, so upgrading ONNX raises them without code changes.
#pragma once

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

// Unsupported when the IR version, or an opset import (of the model or of one of its
// functions) in a domain the registry knows (ai.onnx, ai.onnx.ml, ai.onnx.training,
// ai.onnx.preview.training), is newer than the linked ONNX supports; InvalidModel when
// such a version is below the domain's first version. Custom domains pass: the
// converter and runtime decide about their ops.
Status CheckOpsetsSupported(const onnx::ModelProto& model);

}  // namespace onnx_amp
