// ConversionPlan: the painted decision for a whole model (every graph, subgraphs
// included) that the passes in converter/passes/ materialize. Value names are unique
// across a model and its subgraphs (ONNX SSA), so one value table serves every graph.
#pragma once

#include <span>
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

// One node's plan. Its inputs and then its outputs have the entries from `slots` on of
// ConversionPlan::slot_types and slot_values (one array for all nodes: a large graph
// would otherwise allocate four vectors per node); the plan's accessors give them.
struct NodePlan {
  int graph = 0;                    // index into ConversionPlan::graphs
  NodeClass node_class;             // class after policy overrides
  int slots = 0;
  int inputs = 0;                   // the node's input count
  int outputs = 0;                  // its output count
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
  // By node input and output (NodePlan::slots): the dtype it is read or written in
  // (kUndefined for an absent input) and its `values` id (-1 for an absent one).
  std::vector<DType> slot_types;
  std::vector<int> slot_values;
  ValueTable values;  // every value with its dtype after conversion; passes keep it current
  std::vector<std::string> unknown_ops;  // "domain:Op" without an ops.def entry, sorted

  // The dtypes node `n` reads its inputs in and writes its outputs in, and their value ids.
  std::span<DType> InputTypes(size_t n) { return {slot_types.data() + nodes[n].slots, InputCount(n)}; }
  std::span<const DType> InputTypes(size_t n) const { return {slot_types.data() + nodes[n].slots, InputCount(n)}; }
  std::span<DType> OutputTypes(size_t n) { return {slot_types.data() + OutputSlots(n), OutputCount(n)}; }
  std::span<const DType> OutputTypes(size_t n) const { return {slot_types.data() + OutputSlots(n), OutputCount(n)}; }
  std::span<int> InputValues(size_t n) { return {slot_values.data() + nodes[n].slots, InputCount(n)}; }
  std::span<const int> InputValues(size_t n) const { return {slot_values.data() + nodes[n].slots, InputCount(n)}; }
  std::span<int> OutputValues(size_t n) { return {slot_values.data() + OutputSlots(n), OutputCount(n)}; }
  std::span<const int> OutputValues(size_t n) const { return {slot_values.data() + OutputSlots(n), OutputCount(n)}; }

 private:
  size_t InputCount(size_t n) const { return static_cast<size_t>(nodes[n].inputs); }
  size_t OutputCount(size_t n) const { return static_cast<size_t>(nodes[n].outputs); }
  size_t OutputSlots(size_t n) const { return static_cast<size_t>(nodes[n].slots + nodes[n].inputs); }
};

}  // namespace onnx_amp
