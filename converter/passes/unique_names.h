// UniqueNames: every value and node name of a model (all graphs), so that new Casts
// and initializer copies get names that collide with nothing, on every reconversion.
#pragma once

#include <string>
#include <unordered_set>

namespace onnx { class ModelProto; class GraphProto; }

namespace onnx_amp {

class UniqueNames {
 public:
  explicit UniqueNames(const onnx::ModelProto& model);

  // Returns `base` if unused, else base_1, base_2, ...; the result is then taken.
  std::string Take(const std::string& base);

 private:
  void AddGraph(const onnx::GraphProto& graph);
  std::unordered_set<std::string> used_;
};

}  // namespace onnx_amp
