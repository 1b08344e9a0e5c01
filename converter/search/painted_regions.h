// Painted regions: the connected components of the nodes a conversion runs in the low
// dtype, in the main graph, linked by the tensors between them. They are the units the
// accuracy-driven search bisects over (painted regions, not topological prefixes: a
// region denied to float32 removes its Casts together).
#pragma once

#include <string>
#include <vector>

namespace onnx { class ModelProto; }

namespace onnx_amp {

struct ConversionReport;

struct PaintedRegion {
  std::vector<std::string> nodes;  // node names, in the graph's order
};

// `model` is the model that was converted (its node names are those of the report).
// Regions come in the order of their first node.
std::vector<PaintedRegion> PaintedRegions(const onnx::ModelProto& model, const ConversionReport& report);

}  // namespace onnx_amp
