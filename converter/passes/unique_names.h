// UniqueNames: every value and node name of a model (all graphs), so that new Casts
// and initializer copies get names that collide with nothing, on every reconversion.
// The values' names come from the plan's value table, which the passes keep current;
// only the names it lacks (nodes, declarations) are collected here, and of those only
// the ones that contain "amp_": every name a pass asks for does ("amp_cast/...",
// "..._amp_float16", with any "_N" suffix), so no other name can collide with it.
#pragma once

#include <string>
#include <unordered_set>

#include "converter/value_table.h"

namespace onnx { class ModelProto; class GraphProto; }

namespace onnx_amp {

class UniqueNames {
 public:
  // `values` holds the values of `model` and must outlive this.
  UniqueNames(const onnx::ModelProto& model, const ValueTable& values);

  // Returns `base` if unused, else base_1, base_2, ...; the result is then taken.
  // `base` must contain "amp_".
  std::string Take(const std::string& base);

 private:
  void AddGraph(const onnx::GraphProto& graph);
  bool Used(const std::string& name) const { return used_.count(name) || values_.Find(name) >= 0; }

  const ValueTable& values_;
  std::unordered_set<std::string> used_;
};

}  // namespace onnx_amp
