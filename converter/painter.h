// Internal to Paint (paint.h): the painter's state, shared by its stages, one file each:
//   paint.cc            the stages in order (Painter::Run) and small helpers
//   paint_units.cc      the nodes as units (one per node and type variable), control-flow
//                       clusters, and the dataflow edges between units (steps 2, 9)
//   paint_deny.cc       the seeds that keep units float32 before painting (steps 3/4)
//   paint_propagate.cc  painting to the fixpoint (steps 5-10)
//   paint_plan.cc       the ConversionPlan the passes read, with the reasons of the report
//
// A large graph has about one unit per node: units and node records keep their lists
// (inputs, outputs, edges) in shared flat arrays and look values up by id, so that
// painting allocates per stage rather than per node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "converter/paint.h"
#include "converter/paint_seeds.h"
#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/schema_types.h"

namespace onnx { class OpSchema; }

namespace onnx_amp::paint_internal {

// "name", or "Op(first output)" for an unnamed node.
std::string NodeLabel(const onnx::NodeProto& node);
const onnx::GraphProto* Subgraph(const onnx::NodeProto& node, const std::string& name);
int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
std::vector<int64_t> Int64Values(const onnx::TensorProto& t);
std::string FormatNumber(double value);
// Known dims of every value with a tensor shape (-1 for an unknown dim).
void CollectShapes(const onnx::GraphProto& graph, std::unordered_map<std::string, std::vector<int64_t>>& shapes);

// Why a unit has its colour. The common reasons keep only what their text needs and
// are spelled out (Painter::ReasonText) for the plan alone: painting a large graph
// would otherwise build and drop a string per unit and step.
enum class ReasonKind {
  kText,              // Painter::reason_texts_[text]
  kClass,             // "<precision_class>: <the reason of the node's class>"
  kCastKept,          // Cast(to=float) kept float32
  kDownstreamOfDeny,  // deny seed `from`
  kBetweenAllows,     // allow units `from` and `to`
  kInferAfterAllow,   // allow unit `from`
  kNextToLow,         // low unit `from`
  kCastRetargeted,
};

struct UnitReason {
  ReasonKind kind = ReasonKind::kText;
  PrecisionClass precision_class = PrecisionClass::kFixedFp32;
  int from = -1, to = -1;
  int text = -1;  // kText: index into Painter::reason_texts_

  UnitReason() = default;
  UnitReason(ReasonKind k, int from_unit = -1, int to_unit = -1) : kind(k), from(from_unit), to(to_unit) {}
};

// The inputs and outputs of one node bound to one type variable. Its input and output
// indices are Painter::ports_[ports, ports + input_count + output_count), inputs first;
// its dataflow edges are in Painter's fanin/fanout arrays.
struct Unit {
  const onnx::NodeProto* node = nullptr;
  int node_ref = -1;
  int ports = 0;
  int input_count = 0;
  int output_count = 0;
  PrecisionClass precision_class = PrecisionClass::kFixedFp32;
  bool eligible = false;
  bool cast_output = false;  // output of Cast(to=float): decided by step 10
  bool deny = false;
  bool allow = false;
  UnitReason reason;
  // Control-flow members: the cluster and the member's entry in Painter::members_.
  int cluster = -1;
  int member = -1;
};

// What a cluster member stands for, and the body output a body-side member reads (it
// has no node inputs of its own; empty for the other members).
struct Member {
  std::string what;
  std::string reads;
};

// Members that must share one dtype: a carried value (the outer tensor the node reads,
// the body's input and output, the node's output), a scan slice, or an If output and
// the branch outputs that feed it.
struct Cluster {
  std::string label;
  std::vector<int> members;
  bool forced = false;  // matched to float32 by step 9
};

// A graph input or output of a control-flow body.
struct BodyPort {
  const onnx::GraphProto* graph = nullptr;
  int index = -1;
};

struct Slot {
  int node_ref = -1;
  int index = -1;
};

// What painting needs of an op, looked up once per domain and op type.
struct OpInfo {
  const onnx::OpSchema* schema = nullptr;  // at the model opset; nullptr when there is none
  const OpPrecisionDef* def = nullptr;     // its ops.def row
  std::optional<NodeClass> node_class;     // the policy's class, when no node regex applies
  bool control_flow = false;  // If, Loop or Scan
  bool cast = false;          // Cast
  bool softmax = false;       // Softmax or LogSoftmax, in any domain
  bool constant = false;      // Constant, in any domain
  bool sum_reduction = false;  // ops.def: adds up the elements it reduces
};

// One node. Its inputs and then its outputs have the entries from `slots` on of the
// painter's per-slot arrays (value ids, units), laid out as ConversionPlan's.
struct NodeRef {
  onnx::NodeProto* node = nullptr;
  const OpInfo* op = nullptr;
  int graph = 0;
  NodeClass node_class;
  int slots = 0;
  int inputs = 0;   // the node's input count
  int outputs = 0;  // its output count

  int InputSlot(int i) const { return slots + i; }
  int OutputSlot(int o) const { return slots + inputs + o; }
};

// The inputs and outputs of one node bound to one type variable, before they become a unit.
struct VariableGroup {
  std::string variable;
  std::vector<int> inputs, outputs;
  const std::vector<std::string>* allowed = nullptr;
};

// Nodes of one schema with the same inputs and outputs present group them alike.
struct GroupingKey {
  const onnx::OpSchema* schema = nullptr;
  int inputs = 0;
  int outputs = 0;
  uint64_t present = 0;  // bit k: input k (then output k - inputs) has a name
  auto operator<=>(const GroupingKey&) const = default;
};

class Painter {
 public:
  Painter(onnx::ModelProto& model, ValueTable values, const PrecisionPolicy& policy, ConvertTarget target,
          const ValueSummaries& external, bool with_reasons)
      : model_(model), policy_(policy), target_(target), external_(external), with_reasons_(with_reasons),
        values_(std::move(values)) {}

  Expected<ConversionPlan> Run();

 private:
  // paint_units.cc
  void AddGraph(onnx::GraphProto& graph, int parent, const std::string& path);
  void AddConstant(int id, const onnx::TensorProto& tensor);
  bool FeedsKeptOutput(const NodeRef& ref) const;
  const OpInfo& InfoOf(const onnx::NodeProto& node);
  std::span<const VariableGroup> GroupsOf(const onnx::NodeProto& node, const onnx::OpSchema* schema,
                                          std::vector<VariableGroup>& uncached);
  void BuildUnits(int ref);
  void AddUnit(int ref, const OpInfo& op, const VariableGroup& group);
  void BuildControlFlowUnits(int ref, const onnx::OpSchema* schema);
  void AddCluster(int ref, const onnx::OpSchema* schema, const std::string& what, int node_input,
                  std::optional<BodyPort> body_input, std::vector<BodyPort> body_outputs, int node_output);
  bool SchemaAdmitsLow(const onnx::OpSchema* schema) const;
  bool KeptMainOutput(const std::string& name) const;
  void ResolveInputs(int ref);
  int ProducerUnit(const std::string& name) const;
  int InputProducerUnit(const NodeRef& ref, int input) const;
  void LinkUnits();

  // paint_deny.cc
  void KeepShapeArithmetic();
  bool HoldsTinyConstant(int value, float limit) const;
  void DenyTinyEpsilonGuards();
  void SeedDeny(int u, const std::string& reason);
  void SeedDenyNode(int ref, const std::string& reason);
  void DenyOutOfRangeValues();
  void DenyExpReductions();
  const onnx::NodeProto* ProducerOp(const std::string& name, const char* op, int* ref = nullptr) const;
  void DenyDecomposedLayerNorm();
  Status DenyLongReductions();
  std::optional<int64_t> ReducedCount(const NodeRef& ref,
                                      const std::unordered_map<std::string, std::vector<int64_t>>& shapes) const;

  // paint_propagate.cc
  void PaintToFixpoint();
  bool MatchClusters();
  void PropagateDenyForward();
  void PaintBetweenAllows();
  void PaintInferAfterAllow();
  void PaintThroughClear();
  void RetargetCasts();

  // paint_plan.cc
  std::string ReasonText(const Unit& unit) const;
  std::string FinalReason(const Unit& unit) const;
  void ApplyTypeChanges(const std::vector<std::pair<int, DType>>& changed);
  void FillPlan();

  // Small queries of every stage. TypeOf and TypeOfValue read the input's types (until
  // FillPlan's ApplyTypeChanges moves them into the plan).
  DType TypeOf(const std::string& name) const { return values_.TypeOf(name); }
  DType TypeOfValue(int id) const { return id < 0 ? DType::kUndefined : values_.type(id); }
  // The node output writing value `id`; node_ref -1 for a graph input, an initializer or
  // an unknown value.
  Slot ProducerOf(int id) const {
    return id >= 0 && id < static_cast<int>(producers_.size()) ? producers_[id] : Slot{};
  }
  int InputValue(const NodeRef& ref, int i) const { return slot_values_[ref.InputSlot(i)]; }
  int OutputValue(const NodeRef& ref, int o) const { return slot_values_[ref.OutputSlot(o)]; }
  std::span<const int> Inputs(int u) const {
    return {ports_.data() + units_[u].ports, static_cast<size_t>(units_[u].input_count)};
  }
  std::span<const int> Outputs(int u) const {
    return {ports_.data() + units_[u].ports + units_[u].input_count, static_cast<size_t>(units_[u].output_count)};
  }
  std::span<const int> Fanin(int u) const { return Edges(fanin_begin_, fanin_, u); }
  std::span<const int> Fanout(int u) const { return Edges(fanout_begin_, fanout_, u); }
  static std::span<const int> Edges(const std::vector<int>& begin, const std::vector<int>& edges, int u) {
    return {edges.data() + begin[u], static_cast<size_t>(begin[u + 1] - begin[u])};
  }
  // Constants and their summaries are collected for the mixed policies' value rules only.
  const onnx::TensorProto* ConstantOf(int id) const {
    auto it = constants_.find(id);
    return it == constants_.end() ? nullptr : it->second;
  }
  bool IsConstant(const std::string& name) const {
    const int id = values_.Find(name);
    return constants_.count(id) || summaries_.count(id);
  }
  bool Paintable(int u) const { return units_[u].eligible && !units_[u].cast_output; }
  bool Is(int u, PrecisionClass c) const { return Paintable(u) && units_[u].precision_class == c; }
  std::string Label(int u) const { return NodeLabel(*units_[u].node); }
  bool IsOp(int u, const char* op) const {
    return units_[u].node->op_type() == op && IsOnnxDomain(units_[u].node->domain());
  }
  bool Passable(int u) const {
    return (Is(u, PrecisionClass::kInfer) || Is(u, PrecisionClass::kClear)) && !units_[u].deny;
  }
  // A kText reason; the text is kept once, for the plan.
  UnitReason Text(std::string text) {
    UnitReason reason;
    reason.text = static_cast<int>(reason_texts_.size());
    reason_texts_.push_back(std::move(text));
    return reason;
  }
  std::string SlowHardwareReason() const {
    return "hardware " + std::string(TargetHardwareName(policy_.hardware)) + " has no fast " +
           std::string(DTypeName(plan_.low_type)) + " arithmetic: a low op would only add Cast round trips";
  }

  onnx::ModelProto& model_;
  const PrecisionPolicy& policy_;
  ConvertTarget target_;
  const ValueSummaries& external_;
  const bool with_reasons_;  // fill NodePlan::reason
  ValueTable values_;        // every value of the input, with its type
  std::map<std::string, int64_t> opsets_;
  ConversionPlan plan_;
  std::vector<NodeRef> refs_;
  std::vector<int> slot_values_;  // by node slot (NodeRef::slots): value id, -1 for an absent one
  std::vector<int> slot_units_;   // by node slot: the unit it belongs to, -1 for none
  std::vector<Unit> units_;
  std::vector<int> ports_;        // the units' input and output indices (Unit::ports)
  std::vector<int> fanin_begin_, fanin_;    // units producing unit u's inputs: fanin_[fanin_begin_[u]...]
  std::vector<int> fanout_begin_, fanout_;  // units reading unit u's outputs
  std::vector<std::string> reason_texts_;   // of kText reasons
  std::vector<Member> members_;
  std::vector<Slot> producers_;  // by value id
  std::vector<char> main_inputs_;  // by value id: a main-graph input
  // Readers of the values RetargetCasts and FillPlan ask about (Cast outputs and main
  // inputs), by value id.
  std::unordered_map<int, std::vector<Slot>> consumers_;
  // Keyed by views of the model's names, which Paint leaves unchanged.
  std::unordered_map<std::string_view, std::vector<std::pair<int, int>>> graph_output_uses_;  // (graph, output index)
  // By domain and op type; NodeRef::op points into it.
  std::unordered_map<std::string_view, std::unordered_map<std::string_view, OpInfo>> ops_;
  std::map<GroupingKey, std::vector<VariableGroup>> groupings_;
  std::set<std::string> unknown_ops_;
  std::unordered_map<int, const onnx::TensorProto*> constants_;  // initializers and Constant values, by value id
  std::unordered_map<int, ValueSummary> summaries_;  // float32 constants, value_float(s) included
  std::unordered_map<const onnx::GraphProto*, int> graph_index_;
  std::vector<Cluster> clusters_;
  std::unordered_map<std::string_view, int> value_units_;           // body input -> its cluster member
  std::map<std::pair<int, int>, int> body_output_units_;        // (graph, output index) -> cluster member
  std::vector<std::pair<int, int>> member_edges_;               // recurrent edges between cluster members
};

}  // namespace onnx_amp::paint_internal
