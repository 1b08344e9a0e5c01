#include "converter/passes/unique_names.h"

#include <string_view>

#include <onnx/onnx_pb.h>

#include "runtime/core/status.h"

namespace onnx_amp {
namespace {

constexpr std::string_view kMark = "amp_";  // in every name a pass asks for

}  // namespace

UniqueNames::UniqueNames(const onnx::ModelProto& model, const ValueTable& values) : values_(values) {
  AddGraph(model.graph());
}

// Node names and declared values; node outputs, inputs and initializers are values.
void UniqueNames::AddGraph(const onnx::GraphProto& graph) {
  auto add = [&](const std::string& name) {
    if (name.find(kMark) != std::string::npos) used_.insert(name);
  };
  for (const auto& v : graph.input()) add(v.name());
  for (const auto& v : graph.output()) add(v.name());
  for (const auto& v : graph.value_info()) add(v.name());
  for (const auto& node : graph.node()) {
    add(node.name());
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) AddGraph(attr.g());
      for (const auto& sub : attr.graphs()) AddGraph(sub);
    }
  }
}

std::string UniqueNames::Take(const std::string& base) {
  ONNX_AMP_ASSERT(base.find(kMark) != std::string::npos, "UniqueNames::Take: the base lacks \"amp_\"");
  std::string name = base;
  for (int suffix = 1; Used(name); ++suffix) name = base + "_" + std::to_string(suffix);
  used_.insert(name);
  return name;
}

}  // namespace onnx_amp
