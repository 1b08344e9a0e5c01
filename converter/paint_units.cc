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
  for (const auto& init : graph.initializer()) AddConstant(init.name(), init);
  for (auto& node : *graph.mutable_node()) {
    const int ref = static_cast<int>(refs_.size());
    NodeRef node_ref;
    node_ref.node = &node;
    node_ref.graph = index;
    node_ref.node_class = policy_.ClassOf(node.domain(), node.op_type(), node.name());
    values_.NodeValueIds(ref, node, node_ref.input_values, node_ref.output_values);
    for (int o = 0; o < node.output_size(); ++o) {
      if (node_ref.output_values[o] >= 0) producers_[node_ref.output_values[o]] = {ref, o};
    }
    refs_.push_back(std::move(node_ref));
    if (node.op_type() == "Constant" && node.output_size() == 1) {
      for (const auto& attr : node.attribute()) {
        if (attr.name() == "value") AddConstant(node.output(0), attr.t());
        if (attr.name() == "value_float" || attr.name() == "value_floats") {
          summaries_[node.output(0)] = SummarizeFloatAttribute(attr);
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

// Records an initializer or Constant value; a float32 one is summarized once for the
// value rules, from memory or, left in its external file, from `external_`.
void Painter::AddConstant(const std::string& name, const onnx::TensorProto& tensor) {
  constants_[name] = &tensor;
  if (tensor.data_type() != onnx::TensorProto::FLOAT) return;
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL) {
    summaries_[name] = SummarizeFloatTensor(tensor);
    return;
  }
  auto it = external_.find(&tensor);
  if (it != external_.end()) summaries_[name] = it->second;
}

// Softmax/LogSoftmax writing a kept graph output stays float32, as Keras keeps the
// model's final activation.
bool Painter::FeedsKeptOutput(const onnx::NodeProto& node) const {
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

// Looks up the producer of each input once, for LinkUnits; records the readers of Cast
// outputs and of main-graph inputs, the only values whose readers are asked for.
void Painter::ResolveInputs(int ref) {
  NodeRef& node_ref = refs_[ref];
  const onnx::NodeProto& node = *node_ref.node;
  node_ref.input_source.assign(node.input_size(), Slot{});
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string& name = node.input(i);
    if (name.empty()) continue;
    const Slot source = ProducerOf(node_ref.input_values[i]);
    if (source.node_ref >= 0) {
      node_ref.input_source[i] = source;
      const onnx::NodeProto& producer = *refs_[source.node_ref].node;
      if (producer.op_type() == "Cast") consumers_[name].push_back({ref, i});
    } else if (main_inputs_.count(name)) {
      consumers_[name].push_back({ref, i});
    }
  }
}

void Painter::BuildUnits(int ref) {
  NodeRef& node_ref = refs_[ref];
  const onnx::NodeProto& node = *node_ref.node;
  ResolveInputs(ref);
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
  std::vector<std::pair<std::string, UnitDraft>> drafts;  // a node has few type variables
  auto draft_of = [&](std::string& variable) -> UnitDraft& {
    for (auto& [name, draft] : drafts) {
      if (name == variable) return draft;
    }
    return drafts.emplace_back(std::move(variable), UnitDraft{}).second;
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
    UnitDraft& draft = draft_of(var->variable);
    draft.inputs.push_back(i);
    draft.allowed = var->allowed;
  }
  for (int o = 0; o < node.output_size(); ++o) {
    if (node.output(o).empty()) continue;
    auto var = variable_of(FormalSide::kOutput, o);
    if (!var) continue;
    UnitDraft& draft = draft_of(var->variable);
    draft.outputs.push_back(o);
    draft.allowed = var->allowed;
  }

  std::sort(drafts.begin(), drafts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [type_var, draft] : drafts) AddUnit(ref, schema, type_var, draft);
}

// One unit of node `ref` for type variable `type_var`, when it holds float32 values:
// eligible to run low, or kept float32 with the reason.
void Painter::AddUnit(int ref, const onnx::OpSchema* schema, const std::string& type_var, const UnitDraft& draft) {
  NodeRef& node_ref = refs_[ref];
  const onnx::NodeProto& node = *node_ref.node;
  const std::string domain = std::string(CanonicalDomain(node.domain()));
  const OpPrecisionDef* def = FindOpPrecision(node.domain(), node.op_type());
  const uint32_t fixed_inputs = def ? def->fixed_fp32_inputs : 0;
  bool all_float32 = true;
  bool any_float32 = false;
  for (int i : draft.inputs) {
    const DType t = TypeOfValue(node_ref.input_values[i]);
    any_float32 |= t == DType::kFloat32;
    all_float32 &= t == DType::kFloat32;
  }
  for (int o : draft.outputs) {
    const DType t = TypeOfValue(node_ref.output_values[o]);
    any_float32 |= t == DType::kFloat32;
    all_float32 &= t == DType::kFloat32;
  }
  if (!any_float32) return;

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
  if (unit.inputs.empty() && unit.outputs.empty()) return;

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
    const std::string class_reason(node_ref.node_class.reason);
    unit.reason = class_reason == "unknown op" ? class_reason : "fixed float32: " + class_reason;
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
    unit.reason = UnitReason(unit.cast_output ? ReasonKind::kCastKept : ReasonKind::kClass);
    unit.reason.precision_class = unit.precision_class;
  }
  const int u = static_cast<int>(units_.size());
  for (int i : unit.inputs) node_ref.input_unit[i] = u;
  for (int o : unit.outputs) node_ref.output_unit[o] = u;
  units_.push_back(std::move(unit));
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
    proto.reason = "fixed float32: " + std::string(node_ref.node_class.reason);
  } else if (!HasFastArithmetic(policy_.hardware, plan_.low_type)) {
    proto.reason = SlowHardwareReason();
  } else if (target_ == ConvertTarget::kPortable && !SchemaAdmitsLow(schema)) {
    proto.reason = "schema " + node.op_type() + " at the model opset does not admit " +
                   std::string(DTypeName(plan_.low_type)) + " (target portable)";
  } else {
    proto.eligible = true;
    proto.reason = UnitReason(ReasonKind::kClass);
    proto.reason.precision_class = proto.precision_class;
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
  return source.node_ref < 0 ? -1 : refs_[source.node_ref].output_unit[source.index];
}

// ProducerUnit of input `input` of `ref`, from the producer ResolveInputs found.
int Painter::InputProducerUnit(const NodeRef& ref, int input) const {
  if (!value_units_.empty()) {
    auto member = value_units_.find(ref.node->input(input));
    if (member != value_units_.end()) return member->second;
  }
  const Slot& source = ref.input_source[input];
  return source.node_ref < 0 ? -1 : refs_[source.node_ref].output_unit[source.index];
}

void Painter::LinkUnits() {
  auto link = [&](int from, int to) {
    units_[from].fanout.push_back(to);
    units_[to].fanin.push_back(from);
  };
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    for (const std::string& name : units_[u].reads) {
      const int p = ProducerUnit(name);
      if (p >= 0) link(p, u);
    }
    for (int i : units_[u].inputs) {
      const int p = InputProducerUnit(refs_[units_[u].node_ref], i);
      if (p >= 0) link(p, u);
    }
  }
  for (const auto& [from, to] : member_edges_) link(from, to);
}

}  // namespace onnx_amp::paint_internal
