// What `onnx-amp inspect` reports about a model, computed from its ModelView.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph/graph_view.h"

namespace onnx_amp {

struct TensorSummary {
  std::string name;
  std::string dtype;                // as ONNX spells it ("float", "int64", "undefined")
  std::optional<ValueShape> shape;  // nullopt when the rank is unknown
};

struct SubgraphSummary {
  std::string attribute;  // "then_branch", "else_branch", "body"
  std::string name;       // the GraphProto's name
  int num_nodes = 0;      // its own nodes, not those of graphs nested in it
};

// A node owning subgraphs (If, Loop, Scan, ...), at any depth.
struct ControlFlowSummary {
  std::string scope;  // GraphView::scope_name() of the graph holding the node
  std::string node;   // node name ("" when unnamed)
  std::string op_type;
  std::vector<SubgraphSummary> subgraphs;
};

struct ModelSummary {
  OpsetMap opsets;
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::vector<TensorSummary> inputs;  // graph inputs that are not initializers
  std::vector<TensorSummary> outputs;
  // Main-graph nodes by op type; ops outside the default domain are "domain:OpType".
  std::map<std::string, int64_t> node_counts;
  int64_t num_nodes = 0;
  // Main-graph initializers: element counts and bytes per dtype.
  int64_t num_initializers = 0;
  std::map<std::string, int64_t> parameters;
  std::map<std::string, int64_t> parameter_bytes;
  int64_t num_subgraphs = 0;  // at any depth
  std::vector<ControlFlowSummary> control_flow;
};

// InvalidModel when an initializer's dims are negative or overflow.
Expected<ModelSummary> SummarizeModel(const ModelView& view);

}  // namespace onnx_amp
