// Internal to runtime/onnx (type_inference.cc): the output types of a call of a
// model-local function, from its body typed with the call's input types, as ONNX's
// inference does for such calls.
#pragma once

#include <span>
#include <vector>

#include "runtime/onnx/schema_types.h"

namespace onnx { class FunctionProto; class ModelProto; class NodeProto; }

namespace onnx_amp {

// The model-local function `node` calls (same domain and name); nullptr for none.
const onnx::FunctionProto* FindModelFunction(const onnx::ModelProto& model, const onnx::NodeProto& node);

// One type per node output (kUnknown where the body gives none). Attributes the body
// refers to (ref_attr_name) take the call's values, or the function's defaults.
std::vector<ValueType> FunctionCallTypes(const onnx::ModelProto& model, const onnx::FunctionProto& function,
                                         const onnx::NodeProto& call, std::span<const ValueType> inputs);

}  // namespace onnx_amp
