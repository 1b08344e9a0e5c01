#include "converter/value_table.h"

#include "runtime/core/status.h"

namespace onnx_amp {

void ValueTable::Reserve(size_t count) {
  types_.reserve(count);
  ids_.reserve(count);
}

int ValueTable::Add(std::string_view name, DType type) {
  const int id = static_cast<int>(types_.size());
  const std::string& stored = names_.emplace_back(name);
  types_.push_back(type);
  ids_.emplace(stored, id);
  return id;
}

int ValueTable::Intern(std::string_view name) {
  const int id = Find(name);
  return id >= 0 ? id : Add(name, DType::kUndefined);
}

int ValueTable::Set(std::string_view name, DType type) {
  const int id = Find(name);
  if (id < 0) return Add(name, type);
  types_[id] = type;
  return id;
}

void ValueTable::Rename(int id, std::string_view to) {
  ONNX_AMP_ASSERT(Find(to) < 0, "ValueTable::Rename: the new name is taken");
  ids_.erase(names_[id]);
  names_[id] = std::string(to);  // the deque keeps the string in place; its text changes
  ids_.emplace(names_[id], id);
}

}  // namespace onnx_amp
