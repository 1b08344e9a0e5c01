// The dtype an ai.onnx Cast node casts to, read in one place for the passes that look for
// Casts (runtime/executor/plan_fusion.cc, runtime/train/weight_copies.cc).
#pragma once

#include <cstdint>
#include <optional>

#include <onnx/onnx_pb.h>

#include "runtime/core/dtype.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {

// The first `to` of an ai.onnx Cast of one input and one output; nullopt for any other
// node, a Cast without `to`, or a code this build does not know.
inline std::optional<DType> CastTarget(const onnx::NodeProto& node) {
  if (node.op_type() != "Cast" || !IsOnnxDomain(node.domain()) || node.input_size() != 1 || node.output_size() != 1) {
    return std::nullopt;
  }
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() != "to") continue;
    const int64_t code = attribute.i();
    if (code != static_cast<int32_t>(code)) return std::nullopt;
    return DTypeFromOnnx(static_cast<int32_t>(code));
  }
  return std::nullopt;
}

}  // namespace onnx_amp
