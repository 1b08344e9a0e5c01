// Element types of every value of a model, in every graph: the type half of ONNX type
// inference, without shapes, in one pass over the nodes. Shared by the converter (to
// paint, and to verify what it wrote), the ONNX checks and the graph view.
//
// A value's type is its declared one when the model declares it (graph inputs and
// outputs, value_info, initializers, whose data type wins over any declaration), else
// what its producer's rule gives, node by node in file order:
//   - the type variable of the output in the op's schema (at the model's opset), bound
//     by the inputs of the same variable ("T" of Add), or the one type a fixed
//     parameter or a single-type variable admits (Shape -> int64);
//   - Cast -> `to`; Constant -> its value; ConstantOfShape -> its value or float;
//   - If -> the branches' outputs; Loop and Scan -> the body's outputs, whose inputs
//     take the node's (iteration count int64, condition bool, carried values and scan
//     slices as the node's inputs) unless declared;
//   - ops with an ONNX inference function and an output no rule above types (EyeLike,
//     Random*, Sequence*, Optional*, ...) -> that function, run on the input types alone;
//   - ops of a model-local function -> its body, typed the same way.
// A node whose types break its schema's constraints (a variable bound to two types, a
// type the variable does not admit) types none of its outputs, and ModelTypes::rejection
// names the first such node: ONNX's inference rejects the whole model for it. A node
// whose ONNX inference function fails types none of its outputs either, as ONNX's
// inference skips it. Unknown ops, without a schema or a function, type nothing.
//
// Check mode (CheckModelTypes) turns what inference tolerates into errors naming the
// graph and the node: a value read before it is defined or defined twice in a graph,
// broken constraints on the nodes it checks, a declaration that differs from what the
// producer's rule gives, a body input whose declared type differs from the node's.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/onnx/name_map.h"
#include "runtime/onnx/schema_types.h"

namespace onnx { class GraphProto; class ModelProto; class NodeProto; }

namespace onnx_amp {

// A value one graph defines: its type, and an id unique across the model (ids run from
// 0 to ModelTypes::value_count - 1), so that callers can index vectors by value.
struct GraphValue {
  ValueType type;
  int id = -1;
};

// The types of the values one graph defines: its inputs, initializers and node outputs
// (a value read from an enclosing graph is in that graph's entry). Keys are views of
// the model's names: valid while the model is alive and its names unchanged.
struct GraphTypes {
  const onnx::GraphProto* graph = nullptr;
  int parent = -1;  // index of the enclosing graph in ModelTypes::graphs; -1 for the main graph
  NameMap<GraphValue> values;
  std::vector<int> initializers;  // the id of each of graph->initializer(), in order

  ValueType Find(std::string_view name) const;
};

// The ids of the values one node reads and writes (TypeInferenceOptions::record_node_values):
// ModelTypes::node_value_ids[offset + i] for input i, then [offset + input_size + o] for
// output o; -1 for an absent one, or an input nothing defined before the node.
struct NodeValues {
  const onnx::NodeProto* node = nullptr;
  int offset = 0;
};

struct ModelTypes {
  // The main graph first, then each body after the graph holding its node, in the order
  // of the nodes and their attributes.
  std::vector<GraphTypes> graphs;
  int value_count = 0;  // ids of GraphTypes::values run from 0 to value_count - 1
  // With TypeInferenceOptions::record_node_values: every node in the order visited (a
  // graph's nodes in order, each followed by the nodes of the graphs it holds).
  std::vector<NodeValues> nodes;
  std::vector<int> node_value_ids;
  // The first node whose types break its schema's constraints, with the graph, node and
  // value; "" when none does.
  std::string rejection;

  // The entry of `graph`; nullptr for a graph of another model.
  const GraphTypes* Of(const onnx::GraphProto& graph) const;
  // The type of `name` as seen from graph `g` (its own values, then enclosing graphs').
  ValueType Lookup(int g, std::string_view name) const;
};

// What a caller that must give every value a type (the runtime's graph view) adds to
// ONNX's rules; the defaults type as ONNX's inference does.
struct TypeInferenceOptions {
  // A model that imports no default-domain opset has its default-domain ops typed by
  // their newest schemas (ONNX's inference types none of them).
  bool assume_newest_default_opset = false;
  // An output no rule types (unknown and custom ops, nodes whose inference fails, but
  // not If/Loop/Scan) takes the type of the node's first typed input: most such ops are
  // element-wise or keep their data type.
  bool untyped_outputs_follow_first_input = false;
  // The order to type a graph's nodes in (indices into its node list), for graphs not
  // stored in topological order; null, or a null result, for file order.
  std::function<const std::vector<int>*(const onnx::GraphProto& graph)> node_order;
  // Fill ModelTypes::nodes and node_value_ids, for callers that then index by value id
  // instead of looking names up again.
  bool record_node_values = false;
};

// Infers the types of `model` (the header comment). Never fails: what no rule types
// stays ValueKind::kUnknown.
ModelTypes InferModelTypes(const onnx::ModelProto& model, const TypeInferenceOptions& options = {});

// Which nodes CheckModelTypes checks against their schema's type constraints, given the
// types of their inputs and outputs.
using NodeFilter = std::function<bool(const onnx::NodeProto& node, std::span<const ValueType> inputs,
                                      std::span<const ValueType> outputs)>;

// Infers the types of `model` in check mode (the header comment); the schema
// constraints are checked on the nodes `check_node` selects (every node when null).
// InvalidModel names the graph, node and value of the first problem.
Expected<ModelTypes> CheckModelTypes(const onnx::ModelProto& model, const NodeFilter& check_node);

}  // namespace onnx_amp
