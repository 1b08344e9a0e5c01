#include "converter/paint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "converter/paint_seeds.h"
#include "converter/schema_types.h"
#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"
#include "runtime/onnx/onnx_checks.h"

namespace onnx_amp {
namespace {

std::string NodeLabel(const onnx::NodeProto& node) {
  return node.name().empty() ? node.op_type() + "(" + (node.output_size() ? node.output(0) : "") + ")" : node.name();
}

void CollectTypes(const onnx::GraphProto& graph, ValueTypeMap& types) {
  auto add_value_info = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type()) return;
    auto dtype = DTypeFromOnnx(info.type().tensor_type().elem_type());
    if (dtype && *dtype != DType::kUndefined) types[info.name()] = *dtype;
  };
  for (const auto& info : graph.input()) add_value_info(info);
  for (const auto& info : graph.output()) add_value_info(info);
  for (const auto& info : graph.value_info()) add_value_info(info);
  for (const auto& init : graph.initializer()) {
    if (auto dtype = DTypeFromOnnx(init.data_type())) types[init.name()] = *dtype;
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectTypes(attr.g(), types);
      for (const auto& sub : attr.graphs()) CollectTypes(sub, types);
    }
  }
}

// `graph` and every subgraph in it, at any depth.
void CollectGraphs(onnx::GraphProto& graph, std::vector<onnx::GraphProto*>& graphs) {
  graphs.push_back(&graph);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) CollectGraphs(*attr.mutable_g(), graphs);
      for (auto& sub : *attr.mutable_graphs()) CollectGraphs(sub, graphs);
    }
  }
}

// The inputs and outputs of one node bound to one type variable.
struct Unit {
  const onnx::NodeProto* node = nullptr;
  int node_ref = -1;
  std::string type_var;
  std::vector<int> inputs;
  std::vector<int> outputs;
  PrecisionClass precision_class = PrecisionClass::kFixedFp32;
  bool eligible = false;
  bool cast_output = false;  // output of Cast(to=float): decided by step 10
  bool deny = false;
  bool allow = false;
  std::string reason;
  std::vector<int> fanin;   // units producing this unit's inputs
  std::vector<int> fanout;  // units reading this unit's outputs
  // Control-flow members: the cluster, what the member stands for, and the body
  // outputs a body-side member reads (it has no node inputs of its own).
  int cluster = -1;
  std::string member;
  std::vector<std::string> reads;
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

const onnx::GraphProto* Subgraph(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name && attr.has_g()) return &attr.g();
  }
  return nullptr;
}

int64_t IntAttr(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  for (const auto& attr : node.attribute()) {
    if (attr.name() == name) return attr.i();
  }
  return fallback;
}

std::vector<int64_t> Int64Values(const onnx::TensorProto& t) {
  std::vector<int64_t> values(t.int64_data().begin(), t.int64_data().end());
  if (!t.raw_data().empty() && t.raw_data().size() % sizeof(int64_t) == 0) {
    values.resize(t.raw_data().size() / sizeof(int64_t));
    std::memcpy(values.data(), t.raw_data().data(), t.raw_data().size());
  }
  return values;
}

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Known dims of every value with a tensor shape (-1 for an unknown dim).
void CollectShapes(const onnx::GraphProto& graph, std::unordered_map<std::string, std::vector<int64_t>>& shapes) {
  auto add = [&](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    std::vector<int64_t> dims;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
      dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    }
    shapes[info.name()] = std::move(dims);
  };
  for (const auto& info : graph.input()) add(info);
  for (const auto& info : graph.output()) add(info);
  for (const auto& info : graph.value_info()) add(info);
  for (const auto& init : graph.initializer()) {
    shapes[init.name()] = std::vector<int64_t>(init.dims().begin(), init.dims().end());
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) CollectShapes(attr.g(), shapes);
      for (const auto& sub : attr.graphs()) CollectShapes(sub, shapes);
    }
  }
}

struct NodeRef {
  onnx::NodeProto* node = nullptr;
  int graph = 0;
  NodeClass node_class;
  std::vector<int> input_unit;   // unit of each input, -1 if none
  std::vector<int> output_unit;  // unit of each output, -1 if none
};

struct Slot {
  int node_ref = -1;
  int index = -1;
};

class Painter {
 public:
  Painter(onnx::ModelProto& model, ValueTypeMap types, const PrecisionPolicy& policy, ConvertTarget target,
          const ValueSummaries& external)
      : model_(model), policy_(policy), target_(target), external_(external) {
    plan_.original_types = std::move(types);
  }

  Expected<ConversionPlan> Run() {
    plan_.low_type = policy_.LowType();
    for (const auto& opset : model_.opset_import()) opsets_[std::string(CanonicalDomain(opset.domain()))] = opset.version();
    AddGraph(*model_.mutable_graph(), -1, "main");
    for (const auto& input : model_.graph().input()) main_inputs_.insert(input.name());
    for (int r = 0; r < static_cast<int>(refs_.size()); ++r) BuildUnits(r);
    LinkUnits();
    KeepShapeArithmetic();
    if (policy_.kind == PolicyKind::kMixedFloat16) DenyTinyEpsilonGuards();
    if (policy_.IsMixed()) {
      DenyOutOfRangeValues();
      DenyExpReductions();
      DenyDecomposedLayerNorm();
      ONNX_AMP_RETURN_IF_ERROR(DenyLongReductions());
    }
    if (policy_.kind != PolicyKind::kFloat32) {
      PaintToFixpoint();
      RetargetCasts();
    }
    FillPlan();
    return std::move(plan_);
  }

 private:
  DType TypeOf(const std::string& name) const {
    auto it = plan_.original_types.find(name);
    return it == plan_.original_types.end() ? DType::kUndefined : it->second;
  }

  void AddGraph(onnx::GraphProto& graph, int parent, const std::string& path) {
    const int index = static_cast<int>(plan_.graphs.size());
    plan_.graphs.push_back({&graph, parent, path, {}});
    graph_index_[&graph] = index;
    for (int o = 0; o < graph.output_size(); ++o) graph_output_uses_[graph.output(o).name()].push_back({index, o});
    for (const auto& init : graph.initializer()) AddConstant(init.name(), init);
    for (auto& node : *graph.mutable_node()) {
      const int ref = static_cast<int>(refs_.size());
      NodeRef node_ref;
      node_ref.node = &node;
      node_ref.graph = index;
      node_ref.node_class = policy_.ClassOf(node.domain(), node.op_type(), node.name());
      refs_.push_back(std::move(node_ref));
      for (int o = 0; o < node.output_size(); ++o) {
        if (!node.output(o).empty()) producers_[node.output(o)] = {ref, o};
      }
      if (node.op_type() == "Constant" && node.output_size() == 1) {
        for (const auto& attr : node.attribute()) {
          if (attr.name() == "value") AddConstant(node.output(0), attr.t());
          if (attr.name() == "value_float" || attr.name() == "value_floats") {
            summaries_[node.output(0)] = SummarizeFloatAttribute(attr);
          }
        }
      }
      for (int i = 0; i < node.input_size(); ++i) {
        if (!node.input(i).empty()) consumers_[node.input(i)].push_back({ref, i});
      }
      for (auto& attr : *node.mutable_attribute()) {
        if (!attr.has_g() && attr.graphs_size() == 0) continue;
        const std::string sub_path = path + "/" + NodeLabel(node) + "." + attr.name();
        if (attr.has_g()) AddGraph(*attr.mutable_g(), index, sub_path);
        for (int g = 0; g < attr.graphs_size(); ++g) {
          AddGraph(*attr.mutable_graphs(g), index, sub_path + "[" + std::to_string(g) + "]");
        }
      }
    }
  }

  // Records an initializer or Constant value; a float32 one is summarized once for the
  // value rules, from memory or, left in its external file, from `external_`.
  void AddConstant(const std::string& name, const onnx::TensorProto& tensor) {
    constants_[name] = &tensor;
    if (tensor.data_type() != onnx::TensorProto::FLOAT) return;
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) {
      summaries_[name] = SummarizeFloatTensor(tensor);
      return;
    }
    auto it = external_.find(&tensor);
    if (it != external_.end()) summaries_[name] = it->second;
  }

  bool IsConstant(const std::string& name) const { return constants_.count(name) || summaries_.count(name); }

  // Softmax/LogSoftmax writing a kept graph output stays float32, as Keras keeps the
  // model's final activation.
  bool FeedsKeptOutput(const onnx::NodeProto& node) const {
    if (node.op_type() != "Softmax" && node.op_type() != "LogSoftmax") return false;
    for (const auto& out : node.output()) {
      auto it = graph_output_uses_.find(out);
      if (it == graph_output_uses_.end()) continue;
      for (const auto& [graph, index] : it->second) {
        if (graph != 0 || policy_.keep_io_types.Keeps(out)) return true;
      }
    }
    return false;
  }

  void BuildUnits(int ref) {
    NodeRef& node_ref = refs_[ref];
    const onnx::NodeProto& node = *node_ref.node;
    node_ref.input_unit.assign(node.input_size(), -1);
    node_ref.output_unit.assign(node.output_size(), -1);
    if (node_ref.node_class.reason == "unknown op") {
      unknown_ops_.insert(std::string(DisplayDomain(node.domain())) + ":" + node.op_type());
    }
    if (FeedsKeptOutput(node)) {
      node_ref.node_class = {PrecisionClass::kDeny, "feeds a float32 graph output (keep-io-types)", false};
    }

    const std::string domain = std::string(CanonicalDomain(node.domain()));
    auto opset = opsets_.find(domain);
    const onnx::OpSchema* schema =
        opset == opsets_.end() ? nullptr
                               : onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), domain);
    if (domain.empty() && (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan")) {
      BuildControlFlowUnits(ref, schema);
      return;
    }

    // Group the inputs and outputs by type variable.
    struct Draft {
      std::vector<int> inputs, outputs;
      const std::vector<std::string>* allowed = nullptr;
    };
    std::map<std::string, Draft> drafts;
    // Without a schema every value shares one variable; a fixed-type parameter
    // (tensor(float), ...) has none and is not paintable.
    auto variable_of = [&](FormalSide side, int index) -> std::optional<FormalType> {
      if (schema == nullptr) return FormalType{"*", nullptr};
      return FormalTypeOf(*schema, side, index);
    };
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;  // absent optional input: nothing to type
      auto var = variable_of(FormalSide::kInput, i);
      if (!var) continue;
      Draft& draft = drafts[var->variable];
      draft.inputs.push_back(i);
      draft.allowed = var->allowed;
    }
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty()) continue;
      auto var = variable_of(FormalSide::kOutput, o);
      if (!var) continue;
      Draft& draft = drafts[var->variable];
      draft.outputs.push_back(o);
      draft.allowed = var->allowed;
    }

    const OpPrecisionDef* def = FindOpPrecision(node.domain(), node.op_type());
    const uint32_t fixed_inputs = def ? def->fixed_fp32_inputs : 0;
    for (auto& [type_var, draft] : drafts) {
      bool all_float32 = true;
      bool any_float32 = false;
      for (int i : draft.inputs) {
        const DType t = TypeOf(node.input(i));
        any_float32 |= t == DType::kFloat32;
        all_float32 &= t == DType::kFloat32;
      }
      for (int o : draft.outputs) {
        const DType t = TypeOf(node.output(o));
        any_float32 |= t == DType::kFloat32;
        all_float32 &= t == DType::kFloat32;
      }
      if (!any_float32) continue;

      Unit unit;
      unit.node = &node;
      unit.node_ref = ref;
      unit.type_var = type_var;
      unit.precision_class = node_ref.node_class.precision_class;
      unit.eligible = true;
      for (int i : draft.inputs) {
        if (i < 32 && (fixed_inputs & InputBit(i))) {
          if (draft.inputs.size() + draft.outputs.size() > 1) {
            unit.eligible = false;
            unit.reason = "input " + std::to_string(i) + " stays float32 (ops.def) and shares type " + type_var;
          }
          continue;
        }
        unit.inputs.push_back(i);
      }
      unit.outputs = draft.outputs;
      if (unit.inputs.empty() && unit.outputs.empty()) continue;

      const bool is_cast = node.op_type() == "Cast" && domain.empty();
      if (is_cast && !unit.outputs.empty()) unit.cast_output = true;
      if (is_cast && unit.outputs.empty()) unit.precision_class = PrecisionClass::kClear;

      if (!unit.eligible) {
        // reason already set
      } else if (!all_float32) {
        unit.eligible = false;
        unit.reason = "mixes float32 with other or unknown types";
      } else if (unit.precision_class == PrecisionClass::kFixedFp32) {
        unit.eligible = false;
        unit.reason = node_ref.node_class.reason == "unknown op" ? "unknown op" : "fixed float32: " + node_ref.node_class.reason;
      } else if (!HasFastArithmetic(policy_.hardware, plan_.low_type)) {
        unit.eligible = false;
        unit.reason = SlowHardwareReason();
      } else if (schema == nullptr && target_ == ConvertTarget::kPortable) {
        unit.eligible = false;
        unit.reason = "no ONNX schema for " + node.op_type() + " at the model opset (target portable)";
      } else if (target_ == ConvertTarget::kPortable && draft.allowed != nullptr) {
        if (!AdmitsDType(*draft.allowed, plan_.low_type)) {
          unit.eligible = false;
          unit.reason = "schema " + node.op_type() + "-" + std::to_string(schema->SinceVersion()) + " does not admit " +
                        std::string(DTypeName(plan_.low_type)) + " for " + type_var + " (target portable)";
        }
      }
      if (unit.eligible && unit.cast_output) {
        int64_t to = 0;
        for (const auto& attr : node.attribute()) {
          if (attr.name() == "to") to = attr.i();
        }
        if (to != ToOnnx(DType::kFloat32)) {
          unit.eligible = false;
          unit.reason = "Cast to a non-float32 type";
        }
      }
      if (unit.eligible) {
        unit.reason = std::string(PrecisionClassName(unit.precision_class)) + ": " + node_ref.node_class.reason;
        if (unit.cast_output) unit.reason = "Cast(to=float): kept float32, not every consumer is low";
      }
      const int u = static_cast<int>(units_.size());
      for (int i : unit.inputs) node_ref.input_unit[i] = u;
      for (int o : unit.outputs) node_ref.output_unit[o] = u;
      units_.push_back(std::move(unit));
    }
  }

  std::string SlowHardwareReason() const {
    return "hardware " + std::string(TargetHardwareName(policy_.hardware)) + " has no fast " +
           std::string(DTypeName(plan_.low_type)) + " arithmetic: a low op would only add Cast round trips";
  }

  // If, Loop and Scan move values between scopes: each output of If, each carried
  // value, scan slice and scan output of Loop/Scan becomes one cluster of member units.
  void BuildControlFlowUnits(int ref, const onnx::OpSchema* schema) {
    const onnx::NodeProto& node = *refs_[ref].node;
    if (node.op_type() == "If") {
      const onnx::GraphProto* then_branch = Subgraph(node, "then_branch");
      const onnx::GraphProto* else_branch = Subgraph(node, "else_branch");
      if (then_branch == nullptr || else_branch == nullptr) return;
      for (int k = 0; k < node.output_size(); ++k) {
        AddCluster(ref, schema, "output " + std::to_string(k), -1, {}, {{then_branch, k}, {else_branch, k}}, k);
      }
      return;
    }
    const onnx::GraphProto* body = Subgraph(node, "body");
    if (body == nullptr) return;
    if (node.op_type() == "Loop") {
      // Loop(M, cond, v...) -> (v..., scans...); body(iter, cond, v...) -> (cond, v..., scans...).
      const int carried = node.input_size() - 2;
      for (int k = 0; k < carried; ++k) {
        AddCluster(ref, schema, "carried value " + std::to_string(k), 2 + k, BodyPort{body, 2 + k}, {{body, 1 + k}}, k);
      }
      for (int j = std::max(carried, 0); j < node.output_size(); ++j) {
        AddCluster(ref, schema, "scan output " + std::to_string(j - carried), -1, {}, {{body, 1 + j}}, j);
      }
      return;
    }
    // Scan([sequence_lens,] states..., scan inputs...) -> (states..., scan outputs...);
    // body(states..., scan slices...) -> (states..., scan output slices...).
    const int scan_inputs = static_cast<int>(IntAttr(node, "num_scan_inputs", 0));
    const int offset = node.input_size() - body->input_size();
    const int states = body->input_size() - scan_inputs;
    if (offset < 0 || states < 0) return;
    for (int k = 0; k < states; ++k) {
      AddCluster(ref, schema, "state " + std::to_string(k), offset + k, BodyPort{body, k}, {{body, k}}, k);
    }
    for (int j = 0; j < scan_inputs; ++j) {
      AddCluster(ref, schema, "scan input " + std::to_string(j), offset + states + j, BodyPort{body, states + j}, {},
                 -1);
    }
    for (int j = states; j < node.output_size(); ++j) {
      AddCluster(ref, schema, "scan output " + std::to_string(j - states), -1, {}, {{body, j}}, j);
    }
  }

  // One cluster: members for the node input read, the body input, each body output and
  // the node output that exist (-1 / empty for none). The recurrent edges link them as
  // dataflow does: input -> body input, body output -> body input (next iteration),
  // body output -> node output, input -> node output (zero iterations).
  void AddCluster(int ref, const onnx::OpSchema* schema, const std::string& what, int node_input,
                  std::optional<BodyPort> body_input, std::vector<BodyPort> body_outputs, int node_output) {
    NodeRef& node_ref = refs_[ref];
    const onnx::NodeProto& node = *node_ref.node;
    if (node_input >= node.input_size() || (node_input >= 0 && node.input(node_input).empty())) node_input = -1;
    if (node_output >= node.output_size() || (node_output >= 0 && node.output(node_output).empty())) node_output = -1;
    if (body_input && body_input->index >= body_input->graph->input_size()) body_input.reset();
    std::erase_if(body_outputs, [](const BodyPort& port) { return port.index >= port.graph->output_size(); });

    std::vector<std::string> names;
    if (node_input >= 0) names.push_back(node.input(node_input));
    if (body_input) names.push_back(body_input->graph->input(body_input->index).name());
    for (const BodyPort& port : body_outputs) names.push_back(port.graph->output(port.index).name());
    if (node_output >= 0) names.push_back(node.output(node_output));
    bool any_float32 = false;
    bool all_float32 = true;
    for (const std::string& name : names) {
      any_float32 |= TypeOf(name) == DType::kFloat32;
      all_float32 &= TypeOf(name) == DType::kFloat32;
    }
    if (!any_float32) return;

    Unit proto;
    proto.node = &node;
    proto.node_ref = ref;
    proto.type_var = "V";
    proto.precision_class = node_ref.node_class.precision_class;
    proto.eligible = false;
    proto.cluster = static_cast<int>(clusters_.size());
    if (!all_float32) {
      proto.reason = "mixes float32 with other or unknown types";
    } else if (proto.precision_class == PrecisionClass::kFixedFp32) {
      proto.reason = "fixed float32: " + node_ref.node_class.reason;
    } else if (!HasFastArithmetic(policy_.hardware, plan_.low_type)) {
      proto.reason = SlowHardwareReason();
    } else if (target_ == ConvertTarget::kPortable && !SchemaAdmitsLow(schema)) {
      proto.reason = "schema " + node.op_type() + " at the model opset does not admit " +
                     std::string(DTypeName(plan_.low_type)) + " (target portable)";
    } else {
      proto.eligible = true;
      proto.reason = std::string(PrecisionClassName(proto.precision_class)) + ": " + node_ref.node_class.reason;
    }

    Cluster cluster;
    cluster.label = NodeLabel(node) + " " + what;
    auto add = [&](const std::string& member) {
      const int u = static_cast<int>(units_.size());
      units_.push_back(proto);
      units_[u].member = member;
      cluster.members.push_back(u);
      return u;
    };
    auto keep_float32 = [&](int u, const std::string& reason) {
      if (!units_[u].eligible) return;
      units_[u].eligible = false;
      units_[u].reason = reason;
    };
    int in = -1, body_in = -1, out = -1;
    std::vector<int> body_outs;
    if (node_input >= 0) {
      const std::string& name = node.input(node_input);
      in = add("input '" + name + "'");
      units_[in].inputs = {node_input};
      node_ref.input_unit[node_input] = in;
      if (main_inputs_.count(name) && policy_.keep_io_types.Keeps(name)) {
        keep_float32(in, "float32: reads the graph input '" + name + "', kept float32 (keep-io-types)");
      }
    }
    if (body_input) {
      const std::string& name = body_input->graph->input(body_input->index).name();
      body_in = add("body input '" + name + "'");
      value_units_[name] = body_in;
    }
    for (const BodyPort& port : body_outputs) {
      const std::string& name = port.graph->output(port.index).name();
      const int u = add("body output '" + name + "'");
      units_[u].reads = {name};
      body_output_units_[{graph_index_.at(port.graph), port.index}] = u;
      body_outs.push_back(u);
    }
    if (node_output >= 0) {
      const std::string& name = node.output(node_output);
      out = add("output '" + name + "'");
      units_[out].outputs = {node_output};
      node_ref.output_unit[node_output] = out;
      if (KeptMainOutput(name)) {
        keep_float32(out, "float32: writes the graph output '" + name + "', kept float32 (keep-io-types)");
      }
    }
    auto edge = [&](int from, int to) {
      if (from >= 0 && to >= 0) member_edges_.push_back({from, to});
    };
    edge(in, body_in);
    edge(in, out);
    for (int u : body_outs) {
      edge(u, body_in);
      edge(u, out);
    }
    clusters_.push_back(std::move(cluster));
  }

  // Whether the schema's "V" (the values If/Loop/Scan pass through) admits the low dtype.
  bool SchemaAdmitsLow(const onnx::OpSchema* schema) const {
    if (schema == nullptr) return false;
    const std::optional<FormalType> values = FormalTypeOf(*schema, FormalSide::kOutput, 0);
    return values && AdmitsDType(*values->allowed, plan_.low_type);
  }

  bool KeptMainOutput(const std::string& name) const {
    auto it = graph_output_uses_.find(name);
    if (it == graph_output_uses_.end()) return false;
    for (const auto& [graph, index] : it->second) {
      if (graph == 0 && policy_.keep_io_types.Keeps(name)) return true;
    }
    return false;
  }

  // Shape math done in float (Shape -> Cast(float) -> Div -> Floor -> Cast(int64)):
  // units both downstream of a Cast from an integer and upstream of a Cast to an
  // integer stay float32, since float16 holds integers exactly only up to 2048 (pain 12).
  void KeepShapeArithmetic() {
    const int n = static_cast<int>(units_.size());
    std::vector<char> from_int(n, 0), to_int(n, 0);
    std::vector<int> forward, backward;
    for (int u = 0; u < n; ++u) {
      const onnx::NodeProto& node = *units_[u].node;
      if (node.op_type() != "Cast" || !IsOnnxDomain(node.domain())) continue;
      const DType input_type = TypeOf(node.input(0));
      const DType output_type = TypeOf(node.output(0));
      if (units_[u].cast_output && (IsInteger(input_type) || input_type == DType::kBool)) {
        from_int[u] = 1;
        forward.push_back(u);
      }
      if (!units_[u].cast_output && (IsInteger(output_type) || output_type == DType::kBool)) {
        to_int[u] = 1;
        backward.push_back(u);
      }
    }
    auto walk = [&](std::vector<int>& stack, std::vector<char>& reached, bool down) {
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int v : down ? units_[u].fanout : units_[u].fanin) {
          if (reached[v]) continue;
          reached[v] = 1;
          stack.push_back(v);
        }
      }
    };
    walk(forward, from_int, true);
    walk(backward, to_int, false);
    for (int u = 0; u < n; ++u) {
      if (!from_int[u] || !to_int[u] || !units_[u].eligible) continue;
      units_[u].eligible = false;
      units_[u].reason = "shape arithmetic between integer Casts: float16 is exact for integers only up to 2048";
    }
  }

  // Whether a float32 initializer or Constant holds a non-zero magnitude below `limit`.
  bool HoldsTinyConstant(const std::string& name, float limit) const {
    auto it = summaries_.find(name);
    return it != summaries_.end() && it->second.smallest_nonzero > 0.0f && it->second.smallest_nonzero < limit;
  }

  // x / (y + eps) and friends with eps below float16's smallest normal (6.1e-5): the
  // eps vanishes in float16 and the guard divides by zero (pain 10; OpenVINO keeps
  // these float32). The guard and its reader are denied.
  void DenyTinyEpsilonGuards() {
    constexpr float kHalfSmallestNormal = 6.103515625e-05f;
    for (Unit& unit : units_) {
      const onnx::NodeProto& node = *unit.node;
      if (node.op_type() != "Add" && node.op_type() != "Max") continue;
      bool tiny = false;
      for (int i : unit.inputs) tiny |= HoldsTinyConstant(node.input(i), kHalfSmallestNormal);
      if (!tiny) continue;
      for (int reader : unit.fanout) {
        const std::string& op = units_[reader].node->op_type();
        if (op != "Div" && op != "Reciprocal" && op != "Pow" && op != "Sqrt" && op != "Log") continue;
        for (Unit* guarded : {&unit, &units_[reader]}) {
          if (!guarded->eligible || guarded->precision_class == PrecisionClass::kDeny) continue;
          if (refs_[guarded->node_ref].node_class.user_pinned) continue;
          guarded->precision_class = PrecisionClass::kDeny;
          guarded->reason = "deny: epsilon guard '" + NodeLabel(node) + "' adds a constant below float16's smallest normal";
        }
      }
    }
  }

  // The unit whose colour a value has: its producer's, or the cluster member of a body input.
  int ProducerUnit(const std::string& name) const {
    auto member = value_units_.find(name);
    if (member != value_units_.end()) return member->second;
    auto it = producers_.find(name);
    if (it == producers_.end()) return -1;
    return refs_[it->second.node_ref].output_unit[it->second.index];
  }

  void LinkUnits() {
    auto link = [&](int from, int to) {
      units_[from].fanout.push_back(to);
      units_[to].fanin.push_back(from);
    };
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      std::vector<std::string> reads = units_[u].reads;
      for (int i : units_[u].inputs) reads.push_back(units_[u].node->input(i));
      for (const std::string& name : reads) {
        const int p = ProducerUnit(name);
        if (p >= 0) link(p, u);
      }
    }
    for (const auto& [from, to] : member_edges_) link(from, to);
  }

  // Units that take part in steps 5-8.
  bool Paintable(int u) const { return units_[u].eligible && !units_[u].cast_output; }
  bool Is(int u, PrecisionClass c) const { return Paintable(u) && units_[u].precision_class == c; }
  std::string Label(int u) const { return NodeLabel(*units_[u].node); }

  // Steps 5-9 repeated until the colour matches of step 9 force no more clusters.
  void PaintToFixpoint() {
    std::vector<std::string> seeded(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) seeded[u] = units_[u].reason;
    do {
      for (size_t u = 0; u < units_.size(); ++u) {
        units_[u].deny = false;
        units_[u].allow = false;
        if (units_[u].eligible) units_[u].reason = seeded[u];
      }
      PropagateDenyForward();
      PaintBetweenAllows();
      if (policy_.kind == PolicyKind::kMixedBFloat16) PaintInferAfterAllow();
      PaintThroughClear();
    } while (MatchClusters());
  }

  // Step 9 (TF ForceColorMatchOnRecurrentEdges): a cluster is low only when every
  // member is; otherwise every member keeps float32 and takes no part in painting.
  bool MatchClusters() {
    bool forced = false;
    for (Cluster& cluster : clusters_) {
      if (cluster.forced) continue;
      int blocker = -1;
      bool any_low = false;
      for (int u : cluster.members) {
        if (units_[u].allow) {
          any_low = true;
        } else if (blocker < 0) {
          blocker = u;
        }
      }
      if (blocker < 0 || !any_low) continue;
      cluster.forced = true;
      forced = true;
      const std::string reason = "float32: " + cluster.label + " must match, and its " + units_[blocker].member +
                                 " is not low (" + FinalReason(units_[blocker]) + ")";
      for (int u : cluster.members) {
        units_[u].eligible = false;
        units_[u].reason = reason;
      }
    }
    return forced;
  }

  // Step 3 seeds: the unit turns deny unless the user pinned its node.
  void SeedDeny(int u, const std::string& reason) {
    Unit& unit = units_[u];
    if (!Paintable(u) || refs_[unit.node_ref].node_class.user_pinned) return;
    unit.precision_class = PrecisionClass::kDeny;
    unit.reason = "deny: " + reason;
  }

  void SeedDenyNode(int ref, const std::string& reason) {
    std::set<int> units(refs_[ref].input_unit.begin(), refs_[ref].input_unit.end());
    units.insert(refs_[ref].output_unit.begin(), refs_[ref].output_unit.end());
    for (int u : units) {
      if (u >= 0) SeedDeny(u, reason);
    }
  }

  // init_max / data_max (MO AutoCast): a constant, or a value recorded on sample data,
  // beyond the low dtype's largest finite number would be clamped or turn into inf;
  // the units that hold or read it stay float32 (pain 9, pain 11).
  void DenyOutOfRangeValues() {
    const double largest = LargestFinite(plan_.low_type);
    const std::string low_name(DTypeName(plan_.low_type));
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const Unit& unit = units_[u];
      std::vector<const std::string*> names;
      for (int i : unit.inputs) names.push_back(&unit.node->input(i));
      for (int o : unit.outputs) names.push_back(&unit.node->output(o));
      for (const std::string* name_ptr : names) {
        const std::string& name = *name_ptr;
        auto summary = summaries_.find(name);
        if (summary != summaries_.end()) {
          const double worst = summary->second.largest_finite;
          if (worst > largest) {
            SeedDeny(u, "constant '" + name + "' holds |x| = " + FormatNumber(worst) + ", beyond " + low_name +
                            "'s largest finite " + FormatNumber(largest) + " (init_max)");
          }
        }
        auto recorded = policy_.data_ranges.find(name);
        if (recorded != policy_.data_ranges.end() && recorded->second > largest) {
          SeedDeny(u, "value '" + name + "' reached |x| = " + FormatNumber(recorded->second) + " on sample data, beyond " +
                          low_name + "'s largest finite " + FormatNumber(largest) + " (data_max)");
        }
      }
    }
  }

  bool IsOp(int u, const char* op) const {
    return units_[u].node->op_type() == op && IsOnnxDomain(units_[u].node->domain());
  }

  // Exp -> ReduceSum/ReduceMean, directly or through element-wise and data-movement
  // ops: a sum of exponentials overflows float16 long after each term fits (OpenVINO
  // MarkExpReduceOpPath). The Exp, the path and the reduction stay float32.
  void DenyExpReductions() {
    const int n = static_cast<int>(units_.size());
    // -2: not reached. Each search resets only what it reached, so the cost is what the
    // searches visit, not n per Exp.
    std::vector<int> parent(n, -2);
    std::vector<int> reached, queue;
    for (int e = 0; e < n; ++e) {
      if (!IsOp(e, "Exp") || units_[e].cluster >= 0) continue;
      for (int u : reached) parent[u] = -2;
      parent[e] = -1;
      reached.assign(1, e);
      queue.assign(1, e);
      for (size_t q = 0; q < queue.size(); ++q) {
        const int u = queue[q];
        for (int v : units_[u].fanout) {
          if (parent[v] != -2 || units_[v].cluster >= 0) continue;
          parent[v] = u;
          reached.push_back(v);
          if (IsOp(v, "ReduceSum") || IsOp(v, "ReduceMean")) {
            const std::string reason = "Exp '" + Label(e) + "' feeds reduction '" + Label(v) +
                                       "': the sum outgrows the terms, past float16's range and bfloat16's precision (Exp->ReduceSum pattern)";
            for (int w = v; w >= 0; w = parent[w]) SeedDeny(w, reason);
            continue;
          }
          const PrecisionClass c = units_[v].precision_class;
          if (c == PrecisionClass::kInfer || c == PrecisionClass::kClear) queue.push_back(v);
        }
      }
    }
  }

  // The node producing `name` if it is the default-domain op `op`, else nullptr.
  const onnx::NodeProto* ProducerOp(const std::string& name, const char* op, int* ref = nullptr) const {
    auto it = producers_.find(name);
    if (it == producers_.end()) return nullptr;
    const onnx::NodeProto& node = *refs_[it->second.node_ref].node;
    if (node.op_type() != op || !IsOnnxDomain(node.domain())) return nullptr;
    if (ref != nullptr) *ref = it->second.node_ref;
    return &node;
  }

  // Unfused LayerNorm: d = x - ReduceMean(x); v = ReduceMean(d^2 or d*d);
  // y = d / Sqrt(v + eps). The statistics and the normalisation stay float32: d^2
  // overflows float16 once |x - mu| > 255 (pain 9; OpenVINO keeps it float32).
  void DenyDecomposedLayerNorm() {
    for (int div_ref = 0; div_ref < static_cast<int>(refs_.size()); ++div_ref) {
      const onnx::NodeProto& div = *refs_[div_ref].node;
      if (div.op_type() != "Div" || !IsOnnxDomain(div.domain()) || div.input_size() != 2) continue;
      std::vector<int> refs = {div_ref};
      int ref = -1;
      const onnx::NodeProto* sqrt = ProducerOp(div.input(1), "Sqrt", &ref);
      if (sqrt == nullptr) continue;
      refs.push_back(ref);
      const onnx::NodeProto* add = ProducerOp(sqrt->input(0), "Add", &ref);
      if (add == nullptr || add->input_size() != 2) continue;
      refs.push_back(ref);
      const onnx::NodeProto* var = nullptr;
      for (int side = 0; side < 2 && var == nullptr; ++side) {
        if (IsConstant(add->input(1 - side))) var = ProducerOp(add->input(side), "ReduceMean", &ref);
      }
      if (var == nullptr) continue;
      refs.push_back(ref);
      const std::string& d = div.input(0);
      const onnx::NodeProto* square = ProducerOp(var->input(0), "Pow", &ref);
      if (square == nullptr || square->input(0) != d) {
        square = ProducerOp(var->input(0), "Mul", &ref);
        if (square == nullptr || square->input_size() != 2 || square->input(0) != d || square->input(1) != d) continue;
      }
      refs.push_back(ref);
      const onnx::NodeProto* sub = ProducerOp(d, "Sub", &ref);
      if (sub == nullptr || sub->input_size() != 2) continue;
      refs.push_back(ref);
      const onnx::NodeProto* mean = ProducerOp(sub->input(1), "ReduceMean", &ref);
      if (mean == nullptr || mean->input(0) != sub->input(0)) continue;
      refs.push_back(ref);
      const std::string reason = "decomposed LayerNorm ending in '" + NodeLabel(div) +
                                 "': its statistics stay float32 ((x - mean)^2 overflows float16 above |x - mean| = 255, and x - mean "
                                 "cancels the leading bits of bfloat16)";
      for (int r : refs) SeedDenyNode(r, reason);
    }
  }

  // Sums over many elements (MO max_depth_of_reduction; anchors (b): long-axis
  // reductions): a running sum of n similar terms held in a dtype with p significand
  // bits stops growing once n reaches 2^p, so runtimes that accumulate in the low dtype
  // return finite but wrong sums; float16 also overflows at 65504.
  Status DenyLongReductions() {
    std::vector<int> candidates;
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const Unit& unit = units_[u];
      if (Paintable(u) && unit.precision_class != PrecisionClass::kDeny && !unit.inputs.empty() &&
          unit.inputs.front() == 0 && IsSumReduction(unit.node->domain(), unit.node->op_type())) {
        candidates.push_back(u);
      }
    }
    if (candidates.empty()) return Status::Ok();
    onnx::ModelProto copy = model_;
    ONNX_AMP_RETURN_IF_ERROR(InferShapes(copy, /*strict=*/false));
    std::unordered_map<std::string, std::vector<int64_t>> shapes;
    CollectShapes(copy.graph(), shapes);
    const double limit = 1.0 / UnitRoundoff(plan_.low_type);
    for (int u : candidates) {
      const onnx::NodeProto& node = *units_[u].node;
      auto count = ReducedCount(node, shapes);
      if (!count || static_cast<double>(*count) < limit) continue;
      SeedDeny(u, "reduces " + std::to_string(*count) + " elements, at least 2^p = " + FormatNumber(limit) +
                      " for " + std::string(DTypeName(plan_.low_type)) + " (long-axis reduction)");
    }
    return Status::Ok();
  }

  // Elements summed into each output of a Reduce* node, when the shape is known.
  std::optional<int64_t> ReducedCount(const onnx::NodeProto& node,
                                      const std::unordered_map<std::string, std::vector<int64_t>>& shapes) const {
    auto shape = shapes.find(node.input(0));
    if (shape == shapes.end()) return std::nullopt;
    const std::vector<int64_t>& dims = shape->second;
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> axes;
    bool have_axes = false;
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "axes") {
        axes.assign(attr.ints().begin(), attr.ints().end());
        have_axes = true;
      }
    }
    if (!have_axes && node.input_size() > 1 && !node.input(1).empty()) {
      auto constant = constants_.find(node.input(1));
      if (constant == constants_.end() || constant->second->data_type() != onnx::TensorProto::INT64) return std::nullopt;
      axes = Int64Values(*constant->second);
    }
    if (axes.empty()) {
      if (IntAttr(node, "noop_with_empty_axes", 0) != 0) return 1;
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    }
    int64_t count = 1;
    for (int64_t axis : axes) {
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank || dims[axis] < 0) return std::nullopt;
      count *= dims[axis];
    }
    return count;
  }

  void PropagateDenyForward() {
    const int n = static_cast<int>(units_.size());
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kDeny)) units_[u].deny = true;
    }
    // Clear units upstream of deny or infer units (through clear units only).
    std::vector<char> upstream(n, 0);
    std::vector<int> stack;
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kDeny) || Is(u, PrecisionClass::kInfer)) stack.push_back(u);
    }
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int p : units_[u].fanin) {
        if (Is(p, PrecisionClass::kClear) && !upstream[p]) {
          upstream[p] = 1;
          stack.push_back(p);
        }
      }
    }
    for (int seed = 0; seed < n; ++seed) {
      if (!Is(seed, PrecisionClass::kDeny)) continue;
      stack.assign(1, seed);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (int v : units_[u].fanout) {
          if (units_[v].deny) continue;
          if (!(Is(v, PrecisionClass::kInfer) || (Is(v, PrecisionClass::kClear) && upstream[v]))) continue;
          units_[v].deny = true;
          units_[v].reason = "float32: downstream of deny node '" + Label(seed) + "'";
          stack.push_back(v);
        }
      }
    }
  }

  bool Passable(int u) const {
    return (Is(u, PrecisionClass::kInfer) || Is(u, PrecisionClass::kClear)) && !units_[u].deny;
  }

  void PaintBetweenAllows() {
    const int n = static_cast<int>(units_.size());
    for (int u = 0; u < n; ++u) {
      if (Is(u, PrecisionClass::kAllow)) units_[u].allow = true;
    }
    // from[u]: an allow unit upstream of u (forward walk); to[u]: one downstream.
    std::vector<int> from(n, -1), to(n, -1);
    auto walk = [&](std::vector<int>& reached, bool forward) {
      std::vector<int> stack;
      for (int a = 0; a < n; ++a) {
        if (!Is(a, PrecisionClass::kAllow)) continue;
        stack.assign(1, a);
        while (!stack.empty()) {
          const int u = stack.back();
          stack.pop_back();
          for (int v : forward ? units_[u].fanout : units_[u].fanin) {
            if (!Passable(v) || reached[v] >= 0) continue;
            reached[v] = a;
            stack.push_back(v);
          }
        }
      }
    };
    walk(from, true);
    walk(to, false);
    for (int u = 0; u < n; ++u) {
      if (from[u] < 0 || to[u] < 0) continue;
      units_[u].allow = true;
      units_[u].reason = "low: between allow nodes '" + Label(from[u]) + "' and '" + Label(to[u]) + "'";
    }
  }

  void PaintInferAfterAllow() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
        if (!Is(u, PrecisionClass::kInfer) || units_[u].deny || units_[u].allow) continue;
        int allow_fanin = -1;
        bool deny_fanin = false;
        for (int p : units_[u].fanin) {
          if (units_[p].allow) allow_fanin = p;
          if (units_[p].deny) deny_fanin = true;
        }
        if (allow_fanin < 0 || deny_fanin) continue;
        units_[u].allow = true;
        units_[u].reason = "low: bfloat16 infer op fed by allow node '" + Label(allow_fanin) + "'";
        changed = true;
      }
    }
  }

  void PaintThroughClear() {
    std::vector<int> stack;
    for (int a = 0; a < static_cast<int>(units_.size()); ++a) {
      if (!units_[a].allow) continue;
      stack.assign(1, a);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        for (const std::vector<int>* next : {&units_[u].fanout, &units_[u].fanin}) {
          for (int v : *next) {
            if (!Is(v, PrecisionClass::kClear) || units_[v].deny || units_[v].allow) continue;
            units_[v].allow = true;
            units_[v].reason = "low: clear op next to low node '" + Label(a) + "'";
            stack.push_back(v);
          }
        }
      }
    }
  }

  void RetargetCasts() {
    for (Unit& unit : units_) {
      if (!unit.cast_output || !unit.eligible) continue;
      const std::string& out = unit.node->output(unit.outputs.front());
      if (graph_output_uses_.count(out)) continue;
      auto it = consumers_.find(out);
      if (it == consumers_.end() || it->second.empty()) continue;
      bool all_low = true;
      for (const Slot& slot : it->second) {
        const int c = refs_[slot.node_ref].input_unit[slot.index];
        all_low &= c >= 0 && units_[c].allow;
      }
      if (!all_low) continue;
      unit.allow = true;
      unit.reason = "low: Cast(to=float) retargeted, every consumer is low";
    }
  }

  // A unit that is still neither deny nor allow keeps float32; say why.
  std::string FinalReason(const Unit& unit) const {
    if (!unit.eligible || unit.allow || unit.deny || unit.cast_output) return unit.reason;
    switch (unit.precision_class) {
      case PrecisionClass::kAllow: return unit.reason;
      case PrecisionClass::kInfer: return "float32: infer op not between low nodes";
      case PrecisionClass::kDeny: return unit.reason;
      case PrecisionClass::kClear: return "float32: clear op with no low neighbour";
      case PrecisionClass::kFixedFp32: return unit.reason;
    }
    return unit.reason;
  }

  void FillPlan() {
    const DType low = plan_.low_type;
    plan_.value_types = plan_.original_types;
    for (const NodeRef& ref : refs_) {
      const onnx::NodeProto& node = *ref.node;
      NodePlan node_plan;
      node_plan.graph = ref.graph;
      node_plan.node_class = ref.node_class;
      bool any_low = false;
      const Unit* first = nullptr;
      const Unit* first_low = nullptr;
      auto colour = [&](int u, const std::string& name) {
        if (u < 0) return name.empty() ? DType::kUndefined : TypeOf(name);
        const Unit& unit = units_[u];
        if (first == nullptr) first = &unit;
        if (!unit.allow) return DType::kFloat32;
        any_low = true;
        if (first_low == nullptr) first_low = &unit;
        return low;
      };
      for (int i = 0; i < node.input_size(); ++i) node_plan.input_types.push_back(colour(ref.input_unit[i], node.input(i)));
      for (int o = 0; o < node.output_size(); ++o) {
        const DType t = colour(ref.output_unit[o], node.output(o));
        node_plan.output_types.push_back(t);
        if (!node.output(o).empty()) plan_.value_types[node.output(o)] = t;
      }
      if (any_low) {
        node_plan.compute_type = low;
        node_plan.reason = FinalReason(*first_low);
      } else if (first != nullptr) {
        node_plan.compute_type = DType::kFloat32;
        node_plan.reason = FinalReason(*first);
      } else {
        node_plan.reason = "no float32 tensors";
      }
      plan_.node_order.push_back(&node);
      plan_.nodes.emplace(&node, std::move(node_plan));
    }
    for (const auto& [name, u] : value_units_) {
      if (units_[u].allow) plan_.value_types[std::string(name)] = low;
    }

    // Main-graph inputs that are not kept take the low dtype when a consumer reads it low.
    const onnx::GraphProto& main = *plan_.graphs[0].graph;
    for (const auto& input : main.input()) {
      const std::string& name = input.name();
      if (TypeOf(name) != DType::kFloat32 || policy_.keep_io_types.Keeps(name) || producers_.count(name)) continue;
      auto it = consumers_.find(name);
      if (it == consumers_.end()) continue;
      for (const Slot& slot : it->second) {
        if (plan_.nodes.at(refs_[slot.node_ref].node).input_types[slot.index] == low) {
          plan_.value_types[name] = low;
          break;
        }
      }
    }
    for (int g = 0; g < static_cast<int>(plan_.graphs.size()); ++g) {
      GraphScope& scope = plan_.graphs[g];
      for (int k = 0; k < scope.graph->output_size(); ++k) {
        const std::string& name = scope.graph->output(k).name();
        if (g != 0) {  // a body output takes its cluster's colour
          auto member = body_output_units_.find({g, k});
          const bool low_member = member != body_output_units_.end() && units_[member->second].allow;
          scope.output_types.push_back(low_member ? low : TypeOf(name));
        } else {
          scope.output_types.push_back(policy_.keep_io_types.Keeps(name) ? TypeOf(name) : plan_.value_types[name]);
        }
      }
    }
    plan_.unknown_ops.assign(unknown_ops_.begin(), unknown_ops_.end());
  }

  onnx::ModelProto& model_;
  const PrecisionPolicy& policy_;
  ConvertTarget target_;
  const ValueSummaries& external_;
  std::map<std::string, int64_t> opsets_;
  ConversionPlan plan_;
  std::vector<NodeRef> refs_;
  std::vector<Unit> units_;
  // Keyed by views of the model's names, which Paint leaves unchanged.
  std::unordered_map<std::string_view, Slot> producers_;
  std::unordered_map<std::string_view, std::vector<Slot>> consumers_;
  std::unordered_map<std::string_view, std::vector<std::pair<int, int>>> graph_output_uses_;  // (graph, output index)
  std::set<std::string> unknown_ops_;
  std::unordered_map<std::string_view, const onnx::TensorProto*> constants_;  // initializers and Constant values
  std::unordered_map<std::string_view, ValueSummary> summaries_;  // float32 constants, value_float(s) included
  std::unordered_map<const onnx::GraphProto*, int> graph_index_;
  std::set<std::string> main_inputs_;
  std::vector<Cluster> clusters_;
  std::unordered_map<std::string_view, int> value_units_;           // body input -> its cluster member
  std::map<std::pair<int, int>, int> body_output_units_;        // (graph, output index) -> cluster member
  std::vector<std::pair<int, int>> member_edges_;               // recurrent edges between cluster members
};

}  // namespace

Status InspectInferred(onnx::ModelProto& model, bool strict,
                       const std::function<void(const onnx::ModelProto&)>& inspect) {
  std::vector<onnx::GraphProto*> graphs;
  CollectGraphs(*model.mutable_graph(), graphs);
  std::vector<onnx::GraphProto> saved(graphs.size());
  for (size_t g = 0; g < graphs.size(); ++g) {
    *saved[g].mutable_input() = graphs[g]->input();
    *saved[g].mutable_output() = graphs[g]->output();
    *saved[g].mutable_value_info() = graphs[g]->value_info();
  }
  Status inferred = InferShapes(model, strict);
  if (inferred.ok() && inspect) inspect(model);
  for (size_t g = 0; g < graphs.size(); ++g) {
    graphs[g]->mutable_input()->Swap(saved[g].mutable_input());
    graphs[g]->mutable_output()->Swap(saved[g].mutable_output());
    graphs[g]->mutable_value_info()->Swap(saved[g].mutable_value_info());
  }
  return inferred;
}

Expected<ValueTypeMap> InferValueTypes(onnx::ModelProto& model) {
  ValueTypeMap types;
  ONNX_AMP_RETURN_IF_ERROR(
      InspectInferred(model, /*strict=*/false, [&](const onnx::ModelProto& inferred) { CollectTypes(inferred.graph(), types); }));
  return types;
}

Expected<ValueTypeMap> InferValueTypes(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  return InferValueTypes(copy);
}

Expected<ConversionPlan> Paint(onnx::ModelProto& model, ValueTypeMap types, const PrecisionPolicy& policy,
                               ConvertTarget target, const ValueSummaries& external) {
  return Painter(model, std::move(types), policy, target, external).Run();
}

}  // namespace onnx_amp
