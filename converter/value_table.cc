#include "converter/value_table.h"

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {

ValueTable::ValueTable(ModelTypes&& types)
    : names_(types.value_count), types_(types.value_count, DType::kUndefined), nodes_(std::move(types.nodes)),
      node_value_ids_(std::move(types.node_value_ids)) {
  scopes_.reserve(types.graphs.size());
  initializers_.reserve(types.graphs.size());
  for (GraphTypes& graph : types.graphs) {
    for (const auto& [name, value] : graph.values) {
      names_[value.id] = name;
      types_[value.id] = value.type.TensorDType();
    }
    scopes_.push_back(std::move(graph.values));
    initializers_.emplace_back(graph.graph, std::move(graph.initializers));
  }
}

int ValueTable::Find(std::string_view name) const {
  for (const auto& scope : scopes_) {
    auto it = scope.find(name);
    if (it != scope.end()) return it->second.id;
  }
  auto it = added_.find(name);
  return it == added_.end() ? -1 : it->second;
}

int ValueTable::Add(std::string_view name, DType type) {
  const int id = static_cast<int>(types_.size());
  const std::string& stored = owned_.emplace_back(name);
  names_.push_back(stored);
  types_.push_back(type);
  added_.emplace(stored, id);
  return id;
}

int ValueTable::Set(std::string_view name, DType type) {
  const int id = Find(name);
  if (id < 0) return Add(name, type);
  types_[id] = type;
  return id;
}

void ValueTable::Rename(int id, std::string_view to) {
  ONNX_AMP_ASSERT(Find(to) < 0, "ValueTable::Rename: the new name is taken");
  const std::string_view from = names_[id];
  for (auto& scope : scopes_) {
    auto it = scope.find(from);
    if (it != scope.end() && it->second.id == id) scope.erase(it);
  }
  added_.erase(from);
  names_[id] = owned_.emplace_back(to);
  added_.emplace(names_[id], id);
}

void ValueTable::AppendNodeValueIds(int n, const onnx::NodeProto& node, std::vector<int>& ids) const {
  const int count = node.input_size() + node.output_size();
  if (n < static_cast<int>(nodes_.size()) && nodes_[n].node == &node) {
    const int* recorded = node_value_ids_.data() + nodes_[n].offset;
    ids.insert(ids.end(), recorded, recorded + count);
    return;
  }
  for (const std::string& name : node.input()) ids.push_back(name.empty() ? -1 : Find(name));
  for (const std::string& name : node.output()) ids.push_back(name.empty() ? -1 : Find(name));
}

std::span<const int> ValueTable::InitializerIds(const onnx::GraphProto& graph) const {
  for (const auto& [known, ids] : initializers_) {
    if (known == &graph) return ids;
  }
  return {};
}

void ValueTable::DropNodeRecords() {
  nodes_ = {};
  node_value_ids_ = {};
}

}  // namespace onnx_amp
