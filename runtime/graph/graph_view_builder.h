// Internal to runtime/graph: builds GraphView/ModelView. The structure (values, uses,
// subgraphs, order) is built in graph_view.cc, the element types in value_types.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/graph_view.h"
#include "runtime/onnx/type_inference.h"

namespace onnx { class AttributeProto; }

namespace onnx_amp {

// The graphs a node holds in its attributes, in attribute order (a GRAPHS attribute
// contributes each of its graphs).
struct NodeSubgraph {
  const onnx::AttributeProto* attribute = nullptr;
  const onnx::GraphProto* graph = nullptr;
};
std::vector<NodeSubgraph> NodeSubgraphs(const onnx::NodeProto& node);

// "node 'name' (Op)", or "node #3 (Op)" for an unnamed node.
std::string NodeLabel(const onnx::NodeProto& node, int index);

class GraphViewBuilder {
 public:
  static Expected<std::unique_ptr<ModelView>> Build(const onnx::ModelProto& model);

 private:
  static Expected<std::unique_ptr<GraphView>> BuildGraph(const onnx::GraphProto& graph,
                                                         const GraphView* parent,
                                                         const OpsetMap* opsets,
                                                         std::string scope_name);
  static Status DefineValues(GraphView& view);
  static Status IndexUses(GraphView& view);
  static Status IndexGraphOutputs(GraphView& view);
  static Status SortNodes(GraphView& view);
  // Index of `name` in this scope; a name defined only in an enclosing scope gets a
  // kOuterScope entry here. -1 when no scope defines it.
  static int ResolveRead(GraphView& view, const std::string& name);
  static void AddValue(GraphView& view, ValueInfo value);

  // value_types.cc
  static void AssignTypes(const onnx::ModelProto& model, ModelView& view);
  // `shaped_graph`: the graph in the copy that ONNX shape inference ran on.
  static void AssignGraphTypes(GraphView& view, const onnx::GraphProto& shaped_graph, const ModelTypes& types);
};

}  // namespace onnx_amp
