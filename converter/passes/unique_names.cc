#include "converter/passes/unique_names.h"

#include <onnx/onnx_pb.h>

namespace onnx_amp {

UniqueNames::UniqueNames(const onnx::ModelProto& model, const ValueTable& values) : values_(values) {
  // About one name per node, and room for the names passes add.
  used_.reserve(static_cast<size_t>(model.graph().node_size()) + 64);
  AddGraph(model.graph());
}

// Node names and declared values; node outputs, inputs and initializers are values.
void UniqueNames::AddGraph(const onnx::GraphProto& graph) {
  for (const auto& v : graph.input()) used_.insert(v.name());
  for (const auto& v : graph.output()) used_.insert(v.name());
  for (const auto& v : graph.value_info()) used_.insert(v.name());
  for (const auto& node : graph.node()) {
    used_.insert(node.name());
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) AddGraph(attr.g());
      for (const auto& sub : attr.graphs()) AddGraph(sub);
    }
  }
}

std::string UniqueNames::Take(const std::string& base) {
  std::string name = base;
  for (int suffix = 1; Used(name); ++suffix) name = base + "_" + std::to_string(suffix);
  used_.insert(name);
  return name;
}

}  // namespace onnx_amp
