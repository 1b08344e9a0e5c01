// GraphView structure: value definitions, uses, subgraphs and topological order.
#include "runtime/graph/graph_view.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <utility>

#include "runtime/graph/graph_view_builder.h"
#include "runtime/graph/topological_sort.h"
#include "runtime/core/limits.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

std::string ValueSourceLabel(const GraphView& view, const ValueInfo& value) {
  switch (value.source) {
    case ValueSource::kGraphInput: return "graph input";
    case ValueSource::kInitializer: return "initializer";
    case ValueSource::kNodeOutput: return NodeLabel(view.node(value.producer), value.producer);
    case ValueSource::kOuterScope: return "enclosing scope";
  }
  return "unknown";
}

Status ScopeError(const GraphView& view, const std::string& message) {
  return InvalidModel("graph '" + view.scope_name() + "': " + message);
}

}  // namespace

std::vector<NodeSubgraph> NodeSubgraphs(const onnx::NodeProto& node) {
  std::vector<NodeSubgraph> subgraphs;
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.has_g()) subgraphs.push_back({&attribute, &attribute.g()});
    for (const onnx::GraphProto& graph : attribute.graphs()) subgraphs.push_back({&attribute, &graph});
  }
  return subgraphs;
}

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return "node " + name + " (" + node.op_type() + ")";
}

int GraphView::num_nodes() const { return graph_->node_size(); }

const onnx::NodeProto& GraphView::node(int index) const {
  ONNX_AMP_ASSERT(index >= 0 && index < graph_->node_size(), "node index out of range");
  return graph_->node(index);
}

const ValueInfo* GraphView::FindValue(std::string_view name) const {
  const auto it = value_index_.find(name);
  return it == value_index_.end() ? nullptr : &values_[it->second];
}

const ValueInfo* GraphView::LookupValue(std::string_view name) const {
  const ValueInfo* outer_entry = nullptr;
  for (const GraphView* scope = this; scope != nullptr; scope = scope->parent_) {
    const ValueInfo* value = scope->FindValue(name);
    if (value == nullptr) continue;
    if (value->source != ValueSource::kOuterScope) return value;
    if (outer_entry == nullptr) outer_entry = value;
  }
  return outer_entry;
}

std::vector<const GraphView::Subgraph*> GraphView::SubgraphsOf(int node) const {
  // subgraphs_ is in node order (the builder walks the nodes in file order).
  const auto first = std::lower_bound(subgraphs_.begin(), subgraphs_.end(), node,
                                      [](const Subgraph& subgraph, int n) { return subgraph.node < n; });
  std::vector<const Subgraph*> owned;
  for (auto it = first; it != subgraphs_.end() && it->node == node; ++it) owned.push_back(&*it);
  return owned;
}

DType GraphView::ValueType(std::string_view name) const {
  const ValueInfo* value = LookupValue(name);
  return value == nullptr ? DType::kUndefined : value->dtype;
}

int64_t ModelView::default_opset() const {
  const auto it = opsets_.find("");
  return it == opsets_.end() ? 0 : it->second;
}

void GraphViewBuilder::AddValue(GraphView& view, ValueInfo value) {
  view.value_index_.emplace(value.name, static_cast<int>(view.values_.size()));
  view.values_.push_back(std::move(value));
}

Status GraphViewBuilder::DefineValues(GraphView& view) {
  const onnx::GraphProto& graph = *view.graph_;
  for (int i = 0; i < graph.input_size(); ++i) {
    const std::string& name = graph.input(i).name();
    if (name.empty()) return ScopeError(view, "graph input #" + std::to_string(i) + " has no name");
    if (view.FindValue(name) != nullptr) {
      return ScopeError(view, "graph input '" + name + "' is declared twice");
    }
    ValueInfo value;
    value.name = name;
    value.source = ValueSource::kGraphInput;
    AddValue(view, std::move(value));
  }

  auto define_initializer = [&view](const std::string& name) -> Status {
    if (name.empty()) return ScopeError(view, "an initializer has no name");
    const auto it = view.value_index_.find(name);
    if (it == view.value_index_.end()) {
      ValueInfo value;
      value.name = name;
      value.source = ValueSource::kInitializer;
      AddValue(view, std::move(value));
      return Status::Ok();
    }
    ValueInfo& existing = view.values_[it->second];
    // An initializer may also be listed as a graph input (its overridable default).
    if (existing.source != ValueSource::kGraphInput) {
      return ScopeError(view, "initializer '" + name + "' is defined twice");
    }
    existing.source = ValueSource::kInitializer;
    return Status::Ok();
  };
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    ONNX_AMP_RETURN_IF_ERROR(define_initializer(initializer.name()));
  }
  for (const onnx::SparseTensorProto& initializer : graph.sparse_initializer()) {
    ONNX_AMP_RETURN_IF_ERROR(define_initializer(initializer.values().name()));
  }

  for (int node_index = 0; node_index < graph.node_size(); ++node_index) {
    const onnx::NodeProto& node = graph.node(node_index);
    for (int slot = 0; slot < node.output_size(); ++slot) {
      const std::string& name = node.output(slot);
      if (name.empty()) continue;  // an omitted optional output
      if (const ValueInfo* existing = view.FindValue(name)) {
        return ScopeError(view, NodeLabel(node, node_index) + " produces '" + name +
                                    "', which is already produced by " + ValueSourceLabel(view, *existing) +
                                    " (each value must have one producer)");
      }
      ValueInfo value;
      value.name = name;
      value.source = ValueSource::kNodeOutput;
      value.producer = node_index;
      value.producer_output = slot;
      AddValue(view, std::move(value));
    }
  }
  return Status::Ok();
}

int GraphViewBuilder::ResolveRead(GraphView& view, const std::string& name) {
  const auto it = view.value_index_.find(name);
  if (it != view.value_index_.end()) return it->second;
  for (const GraphView* scope = view.parent_; scope != nullptr; scope = scope->parent_) {
    const ValueInfo* value = scope->FindValue(name);
    if (value == nullptr || value->source == ValueSource::kOuterScope) continue;
    ValueInfo outer;
    outer.name = name;
    outer.source = ValueSource::kOuterScope;
    AddValue(view, std::move(outer));
    view.outer_scope_reads_.push_back(name);
    return static_cast<int>(view.values_.size()) - 1;
  }
  return -1;
}

Status GraphViewBuilder::IndexUses(GraphView& view) {
  const onnx::GraphProto& graph = *view.graph_;
  for (int node_index = 0; node_index < graph.node_size(); ++node_index) {
    const onnx::NodeProto& node = graph.node(node_index);
    for (int slot = 0; slot < node.input_size(); ++slot) {
      const std::string& name = node.input(slot);
      if (name.empty()) continue;  // an omitted optional input
      const int value_index = ResolveRead(view, name);
      if (value_index < 0) {
        return ScopeError(view, NodeLabel(node, node_index) + " reads '" + name +
                                    "', which is not defined in this graph or an enclosing one");
      }
      view.values_[value_index].uses.push_back({node_index, slot});
    }

    for (const NodeSubgraph& entry : NodeSubgraphs(node)) {
      const std::string scope_name = view.scope_name_ + "/" +
                                     (node.name().empty() ? "#" + std::to_string(node_index) : node.name()) +
                                     "." + entry.attribute->name();
      ONNX_AMP_ASSIGN_OR_RETURN(std::unique_ptr<GraphView> subgraph,
                                BuildGraph(*entry.graph, &view, view.opsets_, scope_name));
      // What the subgraph reads from outside counts as a use by the owning node.
      for (const std::string& name : subgraph->outer_scope_reads_) {
        const int value_index = ResolveRead(view, name);
        ONNX_AMP_ASSERT(value_index >= 0, "a subgraph read that resolved below must resolve here");
        std::vector<ValueUse>& uses = view.values_[value_index].uses;
        if (!uses.empty() && uses.back().node == node_index && uses.back().input_index == -1) continue;
        uses.push_back({node_index, -1});
      }
      view.subgraphs_.push_back({node_index, entry.attribute->name(), std::move(subgraph)});
    }
  }
  return Status::Ok();
}

Status GraphViewBuilder::IndexGraphOutputs(GraphView& view) {
  const onnx::GraphProto& graph = *view.graph_;
  for (int i = 0; i < graph.output_size(); ++i) {
    const std::string& name = graph.output(i).name();
    if (name.empty()) return ScopeError(view, "graph output #" + std::to_string(i) + " has no name");
    const int value_index = ResolveRead(view, name);
    if (value_index < 0) {
      return ScopeError(view, "graph output '" + name + "' is not produced by any node, input or initializer");
    }
    view.values_[value_index].is_graph_output = true;
  }
  return Status::Ok();
}

Status GraphViewBuilder::SortNodes(GraphView& view) {
  std::vector<std::vector<int>> predecessors(view.num_nodes());
  for (const ValueInfo& value : view.values_) {
    if (value.source != ValueSource::kNodeOutput) continue;
    for (const ValueUse& use : value.uses) predecessors[use.node].push_back(value.producer);
  }
  TopologicalSortResult sorted = StableTopologicalSort(predecessors);
  if (sorted.cycle.empty()) {
    ONNX_AMP_ASSERT(static_cast<int>(sorted.order.size()) == view.num_nodes(),
                    "an incomplete order always comes with a cycle");
    view.topological_order_ = std::move(sorted.order);
    return Status::Ok();
  }
  std::string path;
  for (int node_index : sorted.cycle) path += NodeLabel(view.node(node_index), node_index) + " -> ";
  path += NodeLabel(view.node(sorted.cycle.front()), sorted.cycle.front());
  return ScopeError(view, "the graph has a cycle: " + path);
}

Expected<std::unique_ptr<GraphView>> GraphViewBuilder::BuildGraph(const onnx::GraphProto& graph,
                                                                  const GraphView* parent,
                                                                  const OpsetMap* opsets,
                                                                  std::string scope_name) {
  int depth = 0;
  for (const GraphView* outer = parent; outer != nullptr; outer = outer->parent_) ++depth;
  if (depth > kMaxSubgraphDepth) {
    return InvalidModel(scope_name + ": subgraphs nested more than " + std::to_string(kMaxSubgraphDepth) + " deep");
  }
  auto view = std::make_unique<GraphView>();
  view->graph_ = &graph;
  view->parent_ = parent;
  view->opsets_ = opsets;
  view->scope_name_ = std::move(scope_name);
  view->values_.reserve(graph.input_size() + graph.initializer_size() + graph.node_size());
  // Definitions first: nodes may read values produced later in file order.
  ONNX_AMP_RETURN_IF_ERROR(DefineValues(*view));
  ONNX_AMP_RETURN_IF_ERROR(IndexUses(*view));
  ONNX_AMP_RETURN_IF_ERROR(IndexGraphOutputs(*view));
  ONNX_AMP_RETURN_IF_ERROR(SortNodes(*view));
  return view;
}

Expected<std::unique_ptr<ModelView>> GraphViewBuilder::Build(const onnx::ModelProto& model) {
  auto view = std::make_unique<ModelView>();
  view->model_ = &model;
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    const std::string domain(CanonicalDomain(opset.domain()));
    view->opsets_[domain] = opset.version();
  }
  const std::string main_name = model.graph().name().empty() ? "main" : model.graph().name();
  ONNX_AMP_ASSIGN_OR_RETURN(view->main_graph_, BuildGraph(model.graph(), nullptr, &view->opsets_, main_name));
  AssignTypes(model, *view);
  return view;
}

Expected<std::unique_ptr<ModelView>> BuildModelView(const onnx::ModelProto& model) {
  return GraphViewBuilder::Build(model);
}

}  // namespace onnx_amp
