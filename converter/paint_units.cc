#include "converter/painter.h"

#include <algorithm>

#include <onnx/defs/schema.h>

#include "ops/op_def.h"

namespace onnx_amp::paint_internal {

void Painter::AddGraph(onnx::GraphProto& graph, int parent, const std::string& path) {
  const int index = static_cast<int>(plan_.graphs.size());
  plan_.graphs.push_back({&graph, parent, path, {}});
  graph_index_[&graph] = index;
  for (int o = 0; o < graph.output_size(); ++o) graph_output_uses_[graph.output(o).name()].push_back({index, o});
  const bool constants = policy_.IsMixed();  // only the mixed policies' value rules read them
  if (constants) {
    const std::span<const int> known = values_.InitializerIds(graph);
    for (int k = 0; k < graph.initializer_size(); ++k) {
      const onnx::TensorProto& init = graph.initializer(k);
      AddConstant(known.size() == static_cast<size_t>(graph.initializer_size()) ? known[k] : values_.Find(init.name()),
                  init);
    }
  }
  for (auto& node : *graph.mutable_node()) {
    const int ref = static_cast<int>(refs_.size());
    NodeRef node_ref;
    node_ref.node = &node;
    node_ref.graph = index;
    const OpInfo& op = InfoOf(node);
    node_ref.op = &op;
    node_ref.node_class = op.node_class ? *op.node_class : policy_.ClassOf(node.domain(), node.op_type(), node.name());
    node_ref.slots = static_cast<int>(slot_values_.size());
    node_ref.inputs = node.input_size();
    node_ref.outputs = node.output_size();
    values_.AppendNodeValueIds(ref, node, slot_values_);
    for (int o = 0; o < node_ref.outputs; ++o) {
      const int id = OutputValue(node_ref, o);
      if (id >= 0) producers_[id] = {ref, o};
    }
    refs_.push_back(node_ref);
    if (constants && op.constant && node_ref.outputs == 1) {
      for (const auto& attr : node.attribute()) {
        if (attr.name() == "value") AddConstant(OutputValue(node_ref, 0), attr.t());
        if (attr.name() == "value_float" || attr.name() == "value_floats") {
          summaries_[OutputValue(node_ref, 0)] = SummarizeFloatAttribute(attr);
        }
      }
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

// Records value `id`, an initializer or Constant value; a float32 one is summarized once
// for the value rules, from memory or, left in its external file, from `external_`.
void Painter::AddConstant(int id, const onnx::TensorProto& tensor) {
  constants_[id] = &tensor;
  if (tensor.data_type() != onnx::TensorProto::FLOAT) return;
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) {
    summaries_[id] = SummarizeFloatTensor(tensor);
    return;
  }
  auto it = external_.find(&tensor);
  if (it != external_.end()) summaries_[id] = it->second;
}

const OpInfo& Painter::InfoOf(const onnx::NodeProto& node) {
  auto [it, added] = ops_[node.domain()].try_emplace(node.op_type());
  OpInfo& op = it->second;
  if (!added) return op;
  const std::string domain(CanonicalDomain(node.domain()));
  auto opset = opsets_.find(domain);
  if (opset != opsets_.end()) {
    op.schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), domain);
  }
  op.def = FindOpPrecision(node.domain(), node.op_type());
  if (!policy_.ReadsNodeNames()) op.node_class = policy_.ClassOf(node.domain(), node.op_type(), "");
  const std::string& type = node.op_type();
  op.control_flow = IsOnnxDomain(node.domain()) && (type == "If" || type == "Loop" || type == "Scan");
  op.cast = IsOnnxDomain(node.domain()) && type == "Cast";
  op.softmax = type == "Softmax" || type == "LogSoftmax";
  op.constant = type == "Constant";
  op.sum_reduction = IsSumReduction(node.domain(), type);
  return op;
}

// Softmax/LogSoftmax writing a kept graph output stays float32, as Keras keeps the
// model's final activation.
bool Painter::FeedsKeptOutput(const NodeRef& ref) const {
  if (!ref.op->softmax) return false;
  for (const auto& out : ref.node->output()) {
    auto it = graph_output_uses_.find(out);
    if (it == graph_output_uses_.end()) continue;
    for (const auto& [graph, index] : it->second) {
      if (graph != 0 || policy_.keep_io_types.Keeps(out)) return true;
    }
  }
  return false;
}

// Records the readers of Cast outputs and of main-graph inputs, the only values whose
// readers are asked for.
void Painter::ResolveInputs(int ref) {
  const NodeRef& node_ref = refs_[ref];
  for (int i = 0; i < node_ref.inputs; ++i) {
    const int id = InputValue(node_ref, i);  // -1 for an absent input
    if (id < 0) continue;
    const Slot source = ProducerOf(id);
    if (source.node_ref >= 0) {
      if (refs_[source.node_ref].node->op_type() == "Cast") consumers_[id].push_back({ref, i});
    } else if (main_inputs_[id]) {
      consumers_[id].push_back({ref, i});
    }
  }
}

// The inputs and outputs of `node` grouped by type variable, sorted by variable.
std::span<const VariableGroup> Painter::GroupsOf(const onnx::NodeProto& node, const onnx::OpSchema* schema,
                                                 std::vector<VariableGroup>& uncached) {
  GroupingKey key{schema, node.input_size(), node.output_size(), 0};
  const bool cached = key.inputs + key.outputs <= 64;  // the presence bits fit the key
  if (cached) {
    for (int i = 0; i < key.inputs; ++i) key.present |= uint64_t{!node.input(i).empty()} << i;
    for (int o = 0; o < key.outputs; ++o) key.present |= uint64_t{!node.output(o).empty()} << (key.inputs + o);
    auto it = groupings_.find(key);
    if (it != groupings_.end()) return it->second;
  }
  std::vector<VariableGroup> groups;  // a node has few type variables
  auto group_of = [&](std::string& variable) -> VariableGroup& {
    for (VariableGroup& group : groups) {
      if (group.variable == variable) return group;
    }
    return groups.emplace_back(VariableGroup{std::move(variable), {}, {}, nullptr});
  };
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
    VariableGroup& group = group_of(var->variable);
    group.inputs.push_back(i);
    group.allowed = var->allowed;
  }
  for (int o = 0; o < node.output_size(); ++o) {
    if (node.output(o).empty()) continue;
    auto var = variable_of(FormalSide::kOutput, o);
    if (!var) continue;
    VariableGroup& group = group_of(var->variable);
    group.outputs.push_back(o);
    group.allowed = var->allowed;
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.variable < b.variable; });
  if (!cached) {
    uncached = std::move(groups);
    return uncached;
  }
  return groupings_.emplace(key, std::move(groups)).first->second;
}

void Painter::BuildUnits(int ref) {
  NodeRef& node_ref = refs_[ref];
  const onnx::NodeProto& node = *node_ref.node;
  ResolveInputs(ref);
  if (node_ref.node_class.reason == "unknown op") {
    unknown_ops_.insert(std::string(DisplayDomain(node.domain())) + ":" + node.op_type());
  }
  if (FeedsKeptOutput(node_ref)) {
    node_ref.node_class = {PrecisionClass::kDeny, "feeds a float32 graph output (keep-io-types)", false};
  }
  const OpInfo& op = *node_ref.op;
  if (op.control_flow) {
    BuildControlFlowUnits(ref, op.schema);
    return;
  }
  std::vector<VariableGroup> uncached;
  for (const VariableGroup& group : GroupsOf(node, op.schema, uncached)) AddUnit(ref, op, group);
}

// One unit of node `ref` for the type variable of `group`, when it holds float32
// values: eligible to run low, or kept float32 with the reason.
void Painter::AddUnit(int ref, const OpInfo& op, const VariableGroup& group) {
  const NodeRef& node_ref = refs_[ref];
  const onnx::NodeProto& node = *node_ref.node;
  const uint32_t fixed_inputs = op.def ? op.def->fixed_fp32_inputs : 0;
  bool all_float32 = true;
  bool any_float32 = false;
  for (int i : group.inputs) {
    const DType t = TypeOfValue(InputValue(node_ref, i));
    any_float32 |= t == DType::kFloat32;
    all_float32 &= t == DType::kFloat32;
  }
  for (int o : group.outputs) {
    const DType t = TypeOfValue(OutputValue(node_ref, o));
    any_float32 |= t == DType::kFloat32;
    all_float32 &= t == DType::kFloat32;
  }
  if (!any_float32) return;

  Unit unit;
  unit.node = &node;
  unit.node_ref = ref;
  unit.precision_class = node_ref.node_class.precision_class;
  unit.eligible = true;
  unit.ports = static_cast<int>(ports_.size());
  std::string reason;  // why an ineligible unit keeps float32
  for (int i : group.inputs) {
    if (i < 32 && (fixed_inputs & InputBit(i))) {
      if (group.inputs.size() + group.outputs.size() > 1) {
        unit.eligible = false;
        reason = "input " + std::to_string(i) + " stays float32 (ops.def) and shares type " + group.variable;
      }
      continue;
    }
    ports_.push_back(i);
  }
  unit.input_count = static_cast<int>(ports_.size()) - unit.ports;
  unit.output_count = static_cast<int>(group.outputs.size());
  if (unit.input_count == 0 && unit.output_count == 0) return;
  ports_.insert(ports_.end(), group.outputs.begin(), group.outputs.end());

  if (op.cast && unit.output_count > 0) unit.cast_output = true;
  if (op.cast && unit.output_count == 0) unit.precision_class = PrecisionClass::kClear;

  if (!unit.eligible) {
    // reason already set
  } else if (!all_float32) {
    unit.eligible = false;
    reason = "mixes float32 with other or unknown types";
  } else if (unit.precision_class == PrecisionClass::kFixedFp32) {
    unit.eligible = false;
    const std::string class_reason(node_ref.node_class.reason);
    reason = class_reason == "unknown op" ? class_reason : "fixed float32: " + class_reason;
  } else if (!HasFastArithmetic(policy_.hardware, plan_.low_type)) {
    unit.eligible = false;
    reason = SlowHardwareReason();
  } else if (op.schema == nullptr && target_ == ConvertTarget::kPortable) {
    unit.eligible = false;
    reason = "no ONNX schema for " + node.op_type() + " at the model opset (target portable)";
  } else if (target_ == ConvertTarget::kPortable && group.allowed != nullptr) {
    if (!AdmitsDType(*group.allowed, plan_.low_type)) {
      unit.eligible = false;
      reason = "schema " + node.op_type() + "-" + std::to_string(op.schema->SinceVersion()) + " does not admit " +
               std::string(DTypeName(plan_.low_type)) + " for " + group.variable + " (target portable)";
    }
  }
  if (unit.eligible && unit.cast_output) {
    int64_t to = 0;
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "to") to = attr.i();
    }
    if (to != ToOnnx(DType::kFloat32)) {
      unit.eligible = false;
      reason = "Cast to a non-float32 type";
    }
  }
  if (unit.eligible) {
    unit.reason = UnitReason(unit.cast_output ? ReasonKind::kCastKept : ReasonKind::kClass);
    unit.reason.precision_class = unit.precision_class;
  } else {
    unit.reason = Text(std::move(reason));
  }
  const int u = static_cast<int>(units_.size());
  for (int k = 0; k < unit.input_count; ++k) slot_units_[node_ref.InputSlot(ports_[unit.ports + k])] = u;
  for (int o : group.outputs) slot_units_[node_ref.OutputSlot(o)] = u;
  units_.push_back(unit);
}

// If, Loop and Scan move values between scopes: each output of If, each carried
// value, scan slice and scan output of Loop/Scan becomes one cluster of member units.
void Painter::BuildControlFlowUnits(int ref, const onnx::OpSchema* schema) {
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
void Painter::AddCluster(int ref, const onnx::OpSchema* schema, const std::string& what, int node_input,
                std::optional<BodyPort> body_input, std::vector<BodyPort> body_outputs, int node_output) {
  const NodeRef& node_ref = refs_[ref];
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
  proto.precision_class = node_ref.node_class.precision_class;
  proto.eligible = false;
  proto.cluster = static_cast<int>(clusters_.size());
  if (!all_float32) {
    proto.reason = Text("mixes float32 with other or unknown types");
  } else if (proto.precision_class == PrecisionClass::kFixedFp32) {
    proto.reason = Text("fixed float32: " + std::string(node_ref.node_class.reason));
  } else if (!HasFastArithmetic(policy_.hardware, plan_.low_type)) {
    proto.reason = Text(SlowHardwareReason());
  } else if (target_ == ConvertTarget::kPortable && !SchemaAdmitsLow(schema)) {
    proto.reason = Text("schema " + node.op_type() + " at the model opset does not admit " +
                        std::string(DTypeName(plan_.low_type)) + " (target portable)");
  } else {
    proto.eligible = true;
    proto.reason = UnitReason(ReasonKind::kClass);
    proto.reason.precision_class = proto.precision_class;
  }

  Cluster cluster;
  cluster.label = NodeLabel(node) + " " + what;
  // A member; `input` / `output` is the node input or output it stands for (-1 for none).
  auto add = [&](std::string member, std::string reads, int input, int output) {
    const int u = static_cast<int>(units_.size());
    Unit& unit = units_.emplace_back(proto);
    unit.member = static_cast<int>(members_.size());
    members_.push_back({std::move(member), std::move(reads)});
    unit.ports = static_cast<int>(ports_.size());
    if (input >= 0) {
      ports_.push_back(input);
      unit.input_count = 1;
      slot_units_[node_ref.InputSlot(input)] = u;
    }
    if (output >= 0) {
      ports_.push_back(output);
      unit.output_count = 1;
      slot_units_[node_ref.OutputSlot(output)] = u;
    }
    cluster.members.push_back(u);
    return u;
  };
  auto keep_float32 = [&](int u, const std::string& reason) {
    if (!units_[u].eligible) return;
    units_[u].eligible = false;
    units_[u].reason = Text(reason);
  };
  int in = -1, body_in = -1, out = -1;
  std::vector<int> body_outs;
  if (node_input >= 0) {
    const std::string& name = node.input(node_input);
    in = add("input '" + name + "'", "", node_input, -1);
    const int id = InputValue(node_ref, node_input);
    if (id >= 0 && main_inputs_[id] && policy_.keep_io_types.Keeps(name)) {
      keep_float32(in, "float32: reads the graph input '" + name + "', kept float32 (keep-io-types)");
    }
  }
  if (body_input) {
    const std::string& name = body_input->graph->input(body_input->index).name();
    body_in = add("body input '" + name + "'", "", -1, -1);
    value_units_[name] = body_in;
  }
  for (const BodyPort& port : body_outputs) {
    const std::string& name = port.graph->output(port.index).name();
    const int u = add("body output '" + name + "'", name, -1, -1);
    body_output_units_[{graph_index_.at(port.graph), port.index}] = u;
    body_outs.push_back(u);
  }
  if (node_output >= 0) {
    const std::string& name = node.output(node_output);
    out = add("output '" + name + "'", "", -1, node_output);
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
bool Painter::SchemaAdmitsLow(const onnx::OpSchema* schema) const {
  if (schema == nullptr) return false;
  const std::optional<FormalType> values = FormalTypeOf(*schema, FormalSide::kOutput, 0);
  return values && AdmitsDType(*values->allowed, plan_.low_type);
}

bool Painter::KeptMainOutput(const std::string& name) const {
  auto it = graph_output_uses_.find(name);
  if (it == graph_output_uses_.end()) return false;
  for (const auto& [graph, index] : it->second) {
    if (graph == 0 && policy_.keep_io_types.Keeps(name)) return true;
  }
  return false;
}

// The unit whose colour a value has: its producer's, or the cluster member of a body input.
int Painter::ProducerUnit(const std::string& name) const {
  if (!value_units_.empty()) {
    auto member = value_units_.find(name);
    if (member != value_units_.end()) return member->second;
  }
  const Slot source = ProducerOf(values_.Find(name));
  return source.node_ref < 0 ? -1 : slot_units_[refs_[source.node_ref].OutputSlot(source.index)];
}

// ProducerUnit of input `input` of `ref`, by the value id it reads.
int Painter::InputProducerUnit(const NodeRef& ref, int input) const {
  if (!value_units_.empty()) {
    auto member = value_units_.find(ref.node->input(input));
    if (member != value_units_.end()) return member->second;
  }
  const Slot source = ProducerOf(InputValue(ref, input));
  return source.node_ref < 0 ? -1 : slot_units_[refs_[source.node_ref].OutputSlot(source.index)];
}

// The edges from producer to reader units, as fanin and fanout lists in one array each
// (each list in the order the edges are found).
void Painter::LinkUnits() {
  std::vector<std::pair<int, int>> edges;
  edges.reserve(units_.size() + member_edges_.size());
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    if (units_[u].member >= 0 && !members_[units_[u].member].reads.empty()) {
      const int p = ProducerUnit(members_[units_[u].member].reads);
      if (p >= 0) edges.push_back({p, u});
    }
    for (int i : Inputs(u)) {
      const int p = InputProducerUnit(refs_[units_[u].node_ref], i);
      if (p >= 0) edges.push_back({p, u});
    }
  }
  edges.insert(edges.end(), member_edges_.begin(), member_edges_.end());
  const size_t n = units_.size();
  fanout_begin_.assign(n + 1, 0);
  fanin_begin_.assign(n + 1, 0);
  for (const auto& [from, to] : edges) {
    ++fanout_begin_[from + 1];
    ++fanin_begin_[to + 1];
  }
  for (size_t u = 0; u < n; ++u) {
    fanout_begin_[u + 1] += fanout_begin_[u];
    fanin_begin_[u + 1] += fanin_begin_[u];
  }
  std::vector<int> fanout_end(fanout_begin_.begin(), fanout_begin_.end() - 1);
  std::vector<int> fanin_end(fanin_begin_.begin(), fanin_begin_.end() - 1);
  fanout_.resize(edges.size());
  fanin_.resize(edges.size());
  for (const auto& [from, to] : edges) {
    fanout_[fanout_end[from]++] = to;
    fanin_[fanin_end[to]++] = from;
  }
}

}  // namespace onnx_amp::paint_internal
