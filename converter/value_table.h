// ValueTable: every value of a model (all graphs; names are unique across a model and
// its subgraphs, ONNX SSA) under an integer id, with its element type. Built once from
// type inference; Paint and the passes then index vectors by id instead of looking names
// up in a map per stage, and the plan carries it to the passes.
//
// The table keeps its own copy of every name, so renaming a value in the model cannot
// invalidate it; a pass that renames a value says so (Rename) and the id stays the same.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/core/dtype.h"

namespace onnx_amp {

class ValueTable {
 public:
  ValueTable() = default;
  // Moving keeps the names in place (the deque's blocks change owner); a copy would
  // leave the keys viewing the source's names.
  ValueTable(ValueTable&&) = default;
  ValueTable& operator=(ValueTable&&) = default;
  ValueTable(const ValueTable&) = delete;
  ValueTable& operator=(const ValueTable&) = delete;

  // Room for `count` values without rehashing.
  void Reserve(size_t count);

  // The id of `name`; -1 when the table has no such value.
  int Find(std::string_view name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : it->second;
  }
  // The id of `name`, added with an undefined type when new.
  int Intern(std::string_view name);
  // Sets the type of `name`, adding it when new; returns its id.
  int Set(std::string_view name, DType type);
  // The value `id` is called `to` from now on; `to` must be a new name.
  void Rename(int id, std::string_view to);

  DType TypeOf(std::string_view name) const {
    const int id = Find(name);
    return id < 0 ? DType::kUndefined : types_[id];
  }
  DType type(int id) const { return types_[id]; }
  void set_type(int id, DType type) { types_[id] = type; }
  std::string_view name(int id) const { return names_[id]; }
  int size() const { return static_cast<int>(types_.size()); }

 private:
  int Add(std::string_view name, DType type);

  std::deque<std::string> names_;  // a deque: the map's keys view these strings, which must not move
  std::vector<DType> types_;
  std::unordered_map<std::string_view, int> ids_;
};

}  // namespace onnx_amp
