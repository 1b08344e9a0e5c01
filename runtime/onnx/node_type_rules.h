// Internal to runtime/onnx (type_inference.cc): the output types of one node from its
// input types, as ONNX's type inference gives them (type_inference.h lists the rules).
// If, Loop, Scan and model-local functions need their bodies and are typed by the
// caller.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "runtime/onnx/schema_types.h"

namespace onnx { class NodeProto; class OpSchema; }

namespace onnx_amp {

struct NodeTypes {
  std::vector<ValueType> outputs;  // one per node output; kUnknown where no rule types it
  std::string problem;             // why the node typed nothing ("" when it did)
  bool constraint_broken = false;  // the problem is a broken type constraint, which ONNX's
                                   // inference rejects the model for (not just the node)
};

// `schema` is the op's schema at the model's opset (nullptr when it has none: then
// nothing is typed). `inputs` has one entry per node input (kUnknown for an absent one).
NodeTypes InferNodeTypes(const onnx::NodeProto& node, const onnx::OpSchema* schema,
                         std::span<const ValueType> inputs);

// The type constraints of `schema` on a node whose inputs and outputs have the given
// types (ONNX's CheckInputOutputType): "" when they hold, else what breaks them, naming
// the parameter. Unknown types are not checked.
std::string CheckTypeConstraints(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                                 std::span<const ValueType> inputs, std::span<const ValueType> outputs);

}  // namespace onnx_amp
