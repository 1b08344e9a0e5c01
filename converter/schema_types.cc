#include "converter/schema_types.h"

#include <algorithm>
#include <string_view>

#include <onnx/defs/schema.h>

namespace onnx_amp {

std::optional<FormalType> FormalTypeOf(const onnx::OpSchema& schema, FormalSide side, int index) {
  const auto& params = side == FormalSide::kInput ? schema.inputs() : schema.outputs();
  if (params.empty()) return std::nullopt;
  // Indices past the last parameter belong to it when it is variadic.
  const int p = std::min(index, static_cast<int>(params.size()) - 1);
  if (p < index && params[p].GetOption() != onnx::OpSchema::Variadic) return std::nullopt;
  const std::string& type_str = params[p].GetTypeStr();
  for (const auto& constraint : schema.typeConstraintParams()) {
    if (constraint.type_param_str != type_str) continue;
    FormalType formal{type_str, &constraint.allowed_type_strs};
    if (params[p].GetOption() == onnx::OpSchema::Variadic && !params[p].GetIsHomogeneous()) {
      formal.variable += std::string(side == FormalSide::kInput ? "#in" : "#out") + std::to_string(index);
    }
    return formal;
  }
  return std::nullopt;
}

bool AdmitsDType(const std::vector<std::string>& allowed, DType dtype) {
  // "tensor(<name>)", compared in place: painting asks this for every node.
  constexpr std::string_view kPrefix = "tensor(";
  const std::string_view name = DTypeName(dtype);
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& type) {
    return type.size() == kPrefix.size() + name.size() + 1 && type.starts_with(kPrefix) &&
           type.compare(kPrefix.size(), name.size(), name) == 0 && type.back() == ')';
  });
}

}  // namespace onnx_amp
