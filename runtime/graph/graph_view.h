// GraphView: a read-only index over an ONNX graph shared by the converter and the
// runtime: who produces and who consumes each value, a topological order, the
// subgraphs of If/Loop/Scan with the outer-scope values they read, and the element
// type (and shape, when known) of every value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/status.h"

namespace onnx { class ModelProto; class GraphProto; class NodeProto; }

namespace onnx_amp {

// Lets the value index be searched with a string_view without building a string.
struct ValueNameHash {
  using is_transparent = void;
  size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
};

enum class ValueSource {
  kGraphInput,   // an input of this graph (for a subgraph: a body parameter)
  kInitializer,  // an initializer of this graph (may also be listed as an input)
  kNodeOutput,   // produced by a node of this graph
  kOuterScope,   // defined in an enclosing graph and read here (subgraphs only)
};

struct ValueUse {
  int node = -1;         // consuming node (index into the graph's node list)
  int input_index = -1;  // which input; -1 when the use is inside one of the node's subgraphs
};

// Dimensions are -1 when unknown; dim_params holds the symbolic name ("" if none).
struct ValueShape {
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
};

struct ValueInfo {
  std::string name;
  ValueSource source = ValueSource::kNodeOutput;
  int producer = -1;         // node index, for kNodeOutput
  int producer_output = -1;  // output slot of that node
  std::vector<ValueUse> uses;
  bool is_graph_output = false;
  DType dtype = DType::kUndefined;   // kUndefined when no rule could tell
  std::optional<ValueShape> shape;   // nullopt when the rank is unknown
};

// Opset versions by domain ("" and "ai.onnx" are both the default domain, keyed as "").
using OpsetMap = std::map<std::string, int64_t>;

class GraphView {
 public:
  struct Subgraph {
    int node = -1;          // owning node in this graph
    std::string attribute;  // "then_branch", "else_branch", "body"
    std::unique_ptr<GraphView> view;
  };

  const onnx::GraphProto& graph() const { return *graph_; }
  const GraphView* parent() const { return parent_; }
  // Where this graph sits, for messages: the main graph's name ("main" when it has
  // none), then one "/<node>.<attribute>" step per nesting level, e.g.
  // "main/loop1.body/if2.then_branch" (an unnamed node appears as "#<index>").
  const std::string& scope_name() const { return scope_name_; }
  const OpsetMap& opsets() const { return *opsets_; }

  int num_nodes() const;
  const onnx::NodeProto& node(int index) const;
  // Every node index, producers before consumers (stable: ties keep file order).
  const std::vector<int>& topological_order() const { return topological_order_; }

  // Values defined in or read by this graph; FindValue looks in this scope only (an
  // outer value read here has a kOuterScope entry), LookupValue walks out through the
  // enclosing scopes and returns the entry of the scope that defines the value.
  const ValueInfo* FindValue(std::string_view name) const;
  const ValueInfo* LookupValue(std::string_view name) const;
  const std::vector<ValueInfo>& values() const { return values_; }

  // Names this graph (or any graph nested in it) reads from enclosing scopes.
  const std::vector<std::string>& outer_scope_reads() const { return outer_scope_reads_; }

  const std::vector<Subgraph>& subgraphs() const { return subgraphs_; }
  // The subgraphs owned by one node, in attribute order.
  std::vector<const Subgraph*> SubgraphsOf(int node) const;

  // The element type of the value `name` as seen from this scope.
  DType ValueType(std::string_view name) const;

 private:
  friend class GraphViewBuilder;
  const onnx::GraphProto* graph_ = nullptr;
  const GraphView* parent_ = nullptr;
  const OpsetMap* opsets_ = nullptr;
  std::string scope_name_;
  std::vector<int> topological_order_;
  std::vector<ValueInfo> values_;
  std::unordered_map<std::string, int, ValueNameHash, std::equal_to<>> value_index_;
  std::vector<std::string> outer_scope_reads_;
  std::vector<Subgraph> subgraphs_;
};

// A model with its graph view (types and shapes: BuildModelView). The ModelView keeps a
// pointer to `model`, which must outlive it and stay unchanged.
class ModelView {
 public:
  const onnx::ModelProto& model() const { return *model_; }
  const GraphView& main_graph() const { return *main_graph_; }
  const OpsetMap& opsets() const { return opsets_; }
  int64_t default_opset() const;  // version of the default ("") domain; 0 when not imported

 private:
  friend class GraphViewBuilder;
  const onnx::ModelProto* model_ = nullptr;
  OpsetMap opsets_;
  std::unique_ptr<GraphView> main_graph_;
};

// Builds the view. Errors (InvalidModel, naming the graph and node): a node reads a
// value defined nowhere in scope, a value is produced twice, the graph has a cycle.
// Element types come from the shared type inference (runtime/onnx/type_inference.h:
// the op schemas' type constraints, Cast's `to`, Constant values, If/Loop/Scan bodies,
// ...), in topological order, with two additions the runtime needs: a model that
// imports no default-domain opset is typed by the newest schemas, and an output no rule
// types (unknown and custom ops) takes the type of the node's first typed input.
// Shapes come from ONNX shape inference (non-strict, with data propagation) on a copy
// of the model, and an initializer's from its dims.
Expected<std::unique_ptr<ModelView>> BuildModelView(const onnx::ModelProto& model);

}  // namespace onnx_amp
