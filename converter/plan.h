// ConversionPlan: the painted decision for a whole model (every graph, subgraphs
// included) that the passes in converter/passes/ materialize. Value names are unique
// across a model and its subgraphs (ONNX SSA), so one value table serves every graph.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "converter/precision_policy.h"
#include "converter/value_table.h"
#include "runtime/core/dtype.h"

namespace onnx { class GraphProto; class NodeProto; class TensorProto; }

namespace onnx_amp {

// Which dtypes an op may take in the output model.
enum class ConvertTarget {
  kPortable,  // only what the ONNX schema admits at the output opset (any ONNX runtime)
  kOnnxAmp,   // any float dtype for any op (our runtime computes every op in float32)
};

struct GraphScope {
  onnx::GraphProto* graph = nullptr;
  int parent = -1;                 // index into ConversionPlan::graphs; -1 for the main graph
  std::string path;                // "main", "main/loop1.body", ...
  std::vector<DType> output_types;  // dtype each graph output must have after conversion
};

struct NodePlan {
  int graph = 0;                    // index into ConversionPlan::graphs
  NodeClass node_class;             // class after policy overrides
  std::vector<DType> input_types;   // dtype each input is read in; kUndefined for absent inputs
  std::vector<DType> output_types;  // dtype each output is written in
  std::vector<int> input_values;    // ConversionPlan::values id of each input; -1 for absent inputs
  std::vector<int> output_values;   // id of each output; -1 for absent outputs
  DType compute_type = DType::kUndefined;  // low dtype, float32, or kUndefined (no float32 tensors)
  std::string reason;               // the class, rule or neighbour that decided
};

// The two magnitudes of a float32 constant (initializer or Constant value) that Paint's
// value rules read: init_max the largest finite one, the tiny-epsilon guard the
// smallest non-zero one.
struct ValueSummary {
  float largest_finite = 0.0f;    // 0 when no value is finite
  float smallest_nonzero = 0.0f;  // 0 when all are zero; NaN when the first non-zero value is NaN
};

// Summaries of tensors whose data is not in memory (left in their external files),
// keyed by the TensorProto that refers to the file.
using ValueSummaries = std::unordered_map<const onnx::TensorProto*, ValueSummary>;

struct ConversionPlan {
  DType low_type = DType::kFloat16;
  std::vector<GraphScope> graphs;   // main graph first, parents before children
  std::vector<const onnx::NodeProto*> node_order;  // graphs in order, nodes in file order
  std::vector<NodePlan> nodes;                     // nodes[n] is the plan of node_order[n]
  ValueTable values;  // every value with its dtype after conversion; passes keep it current
  std::vector<std::string> unknown_ops;  // "domain:Op" without an ops.def entry, sorted
};

}  // namespace onnx_amp
