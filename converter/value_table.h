// ValueTable: every value of a model (all graphs; names are unique across a model and
// its subgraphs, ONNX SSA) under an integer id, with its element type. Type inference
// numbers the values and records the ids each node reads and writes while it looks
// their names up anyway; Paint and the passes then index vectors by id instead of
// looking names up in a map per stage, and the plan carries the table to the passes.
//
// The names of the values inference found are views of the model's names: the table
// is valid while that model is alive (moving the model is fine, copying it is not) and
// renames values only through Rename, before the model's name changes. Names the table
// adds (Set of a new name, Rename) are its own copies.
#pragma once

#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/onnx/type_inference.h"

namespace onnx { class GraphProto; class NodeProto; }

namespace onnx_amp {

class ValueTable {
 public:
  ValueTable() = default;
  // The values of every graph of `types`, with its node records when it has them.
  explicit ValueTable(ModelTypes&& types);
  // Moving keeps every name in place; a copy would leave views of the source's names.
  ValueTable(ValueTable&&) = default;
  ValueTable& operator=(ValueTable&&) = default;
  ValueTable(const ValueTable&) = delete;
  ValueTable& operator=(const ValueTable&) = delete;

  // The id of `name`; -1 when the table has no such value.
  int Find(std::string_view name) const;
  // Sets the type of `name`, adding it when new; returns its id.
  int Set(std::string_view name, DType type);
  // The value `id` is called `to` from now on (`to` must be a new name). Call it before
  // renaming the value in the model.
  void Rename(int id, std::string_view to);

  DType TypeOf(std::string_view name) const {
    const int id = Find(name);
    return id < 0 ? DType::kUndefined : types_[id];
  }
  DType type(int id) const { return types_[id]; }
  void set_type(int id, DType type) { types_[id] = type; }
  std::string_view name(int id) const { return names_[id]; }
  int size() const { return static_cast<int>(types_.size()); }

  // Appends to `ids` the ids of the values `node` reads and then of those it writes (-1
  // for absent ones and names the table lacks): from inference's record `n` (its visit
  // order) when that is `node`, else by name.
  void AppendNodeValueIds(int n, const onnx::NodeProto& node, std::vector<int>& ids) const;
  // Frees the node records once nobody asks AppendNodeValueIds any more.
  void DropNodeRecords();
  // The ids of `graph`'s initializers in order, as inference numbered them; empty for a
  // graph the table does not know (then look them up by name).
  std::span<const int> InitializerIds(const onnx::GraphProto& graph) const;

 private:
  int Add(std::string_view name, DType type);

  // Per graph, as inference found them; keys view the model's names.
  std::vector<NameMap<GraphValue>> scopes_;
  std::deque<std::string> owned_;  // a deque: views of these strings must not move
  std::unordered_map<std::string_view, int> added_;  // names in owned_
  std::vector<std::string_view> names_;
  std::vector<DType> types_;
  std::vector<NodeValues> nodes_;
  std::vector<int> node_value_ids_;
  std::vector<std::pair<const onnx::GraphProto*, std::vector<int>>> initializers_;  // by graph
};

}  // namespace onnx_amp
