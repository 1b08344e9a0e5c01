#include "runtime/validate/tolerance_rule.h"

#include <algorithm>

#include <onnx/onnx_pb.h>

#include "runtime/graph/graph_view.h"

namespace onnx_amp {
namespace {

// Lower unit roundoff means higher precision; float16 (2^-11) is more precise than
// bfloat16 (2^-8), so "lowest" is the one with the largest roundoff.
DType LowerPrecision(DType a, DType b) { return UnitRoundoff(a) >= UnitRoundoff(b) ? a : b; }

}  // namespace

std::map<std::string, PathPrecision> AnalyzePathPrecision(const GraphView& mixed_graph) {
  std::map<std::string, PathPrecision> paths;
  for (const ValueInfo& value : mixed_graph.values()) {
    if (value.source != ValueSource::kNodeOutput) {
      PathPrecision start;
      if (IsFloatingPoint(value.dtype)) start.lowest = LowerPrecision(DType::kFloat32, value.dtype);
      paths[value.name] = start;
    }
  }
  for (int node_index : mixed_graph.topological_order()) {
    const onnx::NodeProto& node = mixed_graph.node(node_index);
    PathPrecision merged;
    for (const std::string& input : node.input()) {
      auto it = paths.find(input);
      if (input.empty() || it == paths.end()) continue;
      merged.depth = std::max(merged.depth, it->second.depth);
      merged.float32_depth = std::max(merged.float32_depth, it->second.float32_depth);
      merged.lowest = LowerPrecision(merged.lowest, it->second.lowest);
    }
    // A node runs low when any of its outputs is float16/bfloat16 (Casts to float32 end
    // the low stretch: their output is float32 and adds no rounding).
    DType low = DType::kFloat32;
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      const DType dtype = mixed_graph.ValueType(output);
      if (IsLowPrecision(dtype)) low = LowerPrecision(low, dtype);
    }
    ++merged.float32_depth;
    if (IsLowPrecision(low)) {
      ++merged.depth;
      merged.lowest = LowerPrecision(merged.lowest, low);
    }
    for (const std::string& output : node.output()) {
      if (!output.empty()) paths[output] = merged;
    }
  }
  return paths;
}

Tolerance DefaultTolerance(const PathPrecision& path, double reference_max_abs) {
  Tolerance tolerance;
  if (IsLowPrecision(path.lowest)) {
    tolerance.rtol = 2.0 * UnitRoundoff(path.lowest) * (path.depth + 1);
  } else {
    tolerance.rtol = 2.0 * UnitRoundoff(DType::kFloat32) * (path.float32_depth + 1);
  }
  tolerance.atol = tolerance.rtol * reference_max_abs;
  return tolerance;
}

}  // namespace onnx_amp
